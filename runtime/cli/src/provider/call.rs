//! `wasm-ccm provider call`: load a provider, call one function, print the
//! result as JSON. For provider authors and for checking a provider's
//! configuration by hand.

use std::io::Read;
use std::sync::LazyLock;

use anyhow::Context;
use clap::ValueEnum;
use clap::builder::PossibleValue;
use heck::ToKebabCase;
use k8s_openapi::api::core::v1::{Node, Service};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use wasm_ccm_cloud::{Cloud, Function, Interface, NodeSet, ProviderError, Route};
use wasm_ccm_host::{Engine, EngineSettings, LoadedProvider, ProviderHandle};

use crate::ProviderArgs;

/// What `provider call` can call: the provider's own description, or a
/// function of a part, named as its Go method in kebab case
/// (`get-zone-by-provider-id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callable {
    /// The provider's name, cluster-ID support and parts.
    Info,
    /// A function of one of the provider's parts.
    Function(Function),
}

/// The input a function takes on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    None,
    Service,
    ServiceAndNodes,
    Node,
    Nodes,
    NodeName,
    ProviderId,
    Hostname,
    ClusterName,
    SshKey,
    CreateRoute,
    Route,
}

impl Input {
    /// What the input of `function` is.
    fn of(function: Function) -> Input {
        use Function as F;
        match function {
            F::ProviderName | F::Initialize | F::HasClusterId | F::SupportedParts | F::MaxBatch => Input::None,
            F::GetLoadBalancer | F::GetLoadBalancerName | F::EnsureLoadBalancerDeleted => Input::Service,
            F::EnsureLoadBalancer | F::UpdateLoadBalancer => Input::ServiceAndNodes,
            F::InstanceExists | F::InstanceShutdown | F::InstanceMetadata => Input::Node,
            F::InstanceStates | F::BatchMetadata => Input::Nodes,
            F::NodeAddresses | F::InstanceId | F::InstanceType | F::GetZoneByNodeName => Input::NodeName,
            F::NodeAddressesByProviderId
            | F::InstanceTypeByProviderId
            | F::InstanceExistsByProviderId
            | F::InstanceShutdownByProviderId
            | F::GetZoneByProviderId => Input::ProviderId,
            F::CurrentNodeName => Input::Hostname,
            F::AddSshKeyToAllInstances => Input::SshKey,
            F::GetZone | F::ListClusters | F::ListRoutes => Input::None,
            F::Master => Input::ClusterName,
            F::CreateRoute => Input::CreateRoute,
            F::DeleteRoute => Input::Route,
        }
    }

    fn help(self) -> &'static str {
        match self {
            Input::None => "No input.",
            Input::Service => r#"Input: `{"service": Service}`."#,
            Input::ServiceAndNodes => r#"Input: `{"service": Service, "nodes": [Node]}`."#,
            Input::Node => "Input: a Node.",
            Input::Nodes => "Input: a list of Nodes.",
            Input::NodeName => "Input: a node name, as a JSON string.",
            Input::ProviderId => "Input: a provider ID, as a JSON string.",
            Input::Hostname => "Input: a host name, as a JSON string.",
            Input::ClusterName => "Input: a cluster name, as a JSON string.",
            Input::SshKey => r#"Input: `{"user": string, "keyData": string}`."#,
            Input::CreateRoute => r#"Input: `{"nameHint": string, "route": Route}`."#,
            Input::Route => "Input: a Route.",
        }
    }
}

/// Every [`Callable`]: `info` and the functions of the parts.
static CALLABLE: LazyLock<Vec<Callable>> = LazyLock::new(|| {
    let parts = Function::ALL.iter().copied().filter(|function| function.interface() != Interface::Provider);
    std::iter::once(Callable::Info).chain(parts.map(Callable::Function)).collect()
});

impl ValueEnum for Callable {
    fn value_variants<'a>() -> &'a [Self] {
        &CALLABLE
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Callable::Info => PossibleValue::new("info").help("The provider's name, cluster-ID support and parts."),
            Callable::Function(function) => {
                PossibleValue::new(function.go_method().to_kebab_case()).help(Input::of(*function).help())
            }
        })
    }
}

/// `provider call` flags.
#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The function to call.
    #[arg(value_enum)]
    pub function: Callable,
    /// The function's input as JSON, or `-` to read it from stdin.
    pub input: Option<String>,
    /// The cluster name passed to the provider.
    #[arg(long, default_value = wasm_ccm_cloud::DEFAULT_CLUSTER_NAME)]
    pub cluster_name: String,
    /// The provider and its sandbox.
    #[command(flatten)]
    pub provider: ProviderArgs,
}

#[derive(Deserialize)]
struct LoadBalancerInput {
    service: Service,
    #[serde(default)]
    nodes: Vec<Node>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SshKeyInput {
    user: String,
    key_data: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateRouteInput {
    name_hint: String,
    route: Route,
}

fn parse<T: DeserializeOwned>(input: &Option<String>, function: Function) -> anyhow::Result<T> {
    let name = function.go_method();
    let text = match input.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("cannot read the input from stdin")?;
            text
        }
        Some(text) => text.to_owned(),
        None => anyhow::bail!("{name} needs an input; see `wasm-ccm provider call --help`"),
    };
    serde_json::from_str(&text).with_context(|| format!("invalid input for {name}"))
}

/// A batch's answers by node: `{"node": name, ...}` with the fields of
/// `answer`'s object (`"exists"` and `"shutDown"`, say), or `{"node": name,
/// "error": message}`.
fn by_node<T>(nodes: &NodeSet, answers: Vec<Result<T, ProviderError>>, answer: impl Fn(T) -> Value) -> Value {
    let names = nodes.current().names();
    let answers = names.iter().zip(answers).map(|(node, result)| {
        let mut object = serde_json::Map::from_iter([("node".to_owned(), json!(node))]);
        match result.map(&answer) {
            Ok(Value::Object(fields)) => object.extend(fields),
            Ok(other) => drop(object.insert("answer".to_owned(), other)),
            Err(err) => drop(object.insert("error".to_owned(), json!(err.to_string()))),
        }
        Value::Object(object)
    });
    Value::Array(answers.collect())
}

/// Loads the provider, calls the function and prints the result.
///
/// # Errors
/// When the provider cannot be loaded, the input is invalid or the call fails.
pub async fn call(args: CallArgs) -> anyhow::Result<()> {
    let spec = args.provider.spec("cli", &args.cluster_name)?;
    let engine = Engine::new(EngineSettings {
        allocation: wasm_ccm_host::Allocation::OnDemand,
        compiler: crate::compile_worker::compiler()?,
        max_memory: spec.limits.memory,
        ..Default::default()
    })?;
    let provider = LoadedProvider::load(&engine, spec).await?;
    let handle = ProviderHandle::new(provider);
    let output = match args.function {
        Callable::Info => serde_json::to_value(handle.info())?,
        Callable::Function(function) => invoke(&handle, function, &args.input).await?,
    };
    println!("{}", serde_json::to_string_pretty(&output)?);
    Ok(())
}

async fn invoke(cloud: &impl Cloud, function: Function, input: &Option<String>) -> anyhow::Result<Value> {
    use Function as F;
    let text = |input: &Option<String>| parse::<String>(input, function);
    let info = cloud.info();
    Ok(match function {
        // The handle has initialised the provider; these describe it.
        F::ProviderName => json!(info.name),
        F::Initialize => Value::Null,
        F::HasClusterId => json!(info.has_cluster_id),
        F::SupportedParts => serde_json::to_value(info.parts)?,
        F::GetLoadBalancer => {
            json!(cloud.get_load_balancer(&parse::<LoadBalancerInput>(input, function)?.service).await?)
        }
        F::GetLoadBalancerName => {
            json!(cloud.get_load_balancer_name(&parse::<LoadBalancerInput>(input, function)?.service).await?)
        }
        F::EnsureLoadBalancer => {
            let lb = parse::<LoadBalancerInput>(input, function)?;
            json!(cloud.ensure_load_balancer(&lb.service, &NodeSet::of(lb.nodes)).await?)
        }
        F::UpdateLoadBalancer => {
            let lb = parse::<LoadBalancerInput>(input, function)?;
            cloud.update_load_balancer(&lb.service, &NodeSet::of(lb.nodes)).await?;
            Value::Null
        }
        F::EnsureLoadBalancerDeleted => {
            cloud.ensure_load_balancer_deleted(&parse::<LoadBalancerInput>(input, function)?.service).await?;
            Value::Null
        }
        F::MaxBatch => json!(info.max_batch),
        F::InstanceStates => {
            let nodes = NodeSet::of(parse::<Vec<Node>>(input, function)?);
            let answers = cloud.instance_states(&nodes).await?;
            by_node(&nodes, answers, |state| json!({"exists": state.exists, "shutDown": state.shut_down}))
        }
        F::BatchMetadata => {
            let nodes = NodeSet::of(parse::<Vec<Node>>(input, function)?);
            let answers = cloud.batch_metadata(&nodes).await?;
            by_node(&nodes, answers, |metadata| serde_json::to_value(metadata).unwrap_or_default())
        }
        F::InstanceExists => json!(cloud.instance_exists(&parse(input, function)?).await?),
        F::InstanceShutdown => json!(cloud.instance_shutdown(&parse(input, function)?).await?),
        F::InstanceMetadata => serde_json::to_value(cloud.instance_metadata(&parse(input, function)?).await?)?,
        F::NodeAddresses => json!(cloud.node_addresses(&text(input)?).await?),
        F::NodeAddressesByProviderId => json!(cloud.node_addresses_by_provider_id(&text(input)?).await?),
        F::InstanceId => json!(cloud.instance_id(&text(input)?).await?),
        F::InstanceType => json!(cloud.instance_type(&text(input)?).await?),
        F::InstanceTypeByProviderId => json!(cloud.instance_type_by_provider_id(&text(input)?).await?),
        F::AddSshKeyToAllInstances => {
            let key = parse::<SshKeyInput>(input, function)?;
            cloud.add_ssh_key_to_all_instances(&key.user, key.key_data.as_bytes()).await?;
            Value::Null
        }
        F::CurrentNodeName => json!(cloud.current_node_name(&text(input)?).await?),
        F::InstanceExistsByProviderId => json!(cloud.instance_exists_by_provider_id(&text(input)?).await?),
        F::InstanceShutdownByProviderId => json!(cloud.instance_shutdown_by_provider_id(&text(input)?).await?),
        F::GetZone => serde_json::to_value(cloud.get_zone().await?)?,
        F::GetZoneByProviderId => serde_json::to_value(cloud.get_zone_by_provider_id(&text(input)?).await?)?,
        F::GetZoneByNodeName => serde_json::to_value(cloud.get_zone_by_node_name(&text(input)?).await?)?,
        F::ListClusters => json!(cloud.list_clusters().await?),
        F::Master => json!(cloud.master(&text(input)?).await?),
        F::ListRoutes => serde_json::to_value(cloud.list_routes().await?)?,
        F::CreateRoute => {
            let create = parse::<CreateRouteInput>(input, function)?;
            cloud.create_route(&create.name_hint, &create.route).await?;
            Value::Null
        }
        F::DeleteRoute => {
            cloud.delete_route(&parse(input, function)?).await?;
            Value::Null
        }
    })
}

#[cfg(test)]
mod tests {
    use wasm_ccm_cloud::testing::TestCloud;

    use super::*;

    #[test]
    fn functions_are_named_as_their_go_methods() {
        let names: Vec<String> = Callable::value_variants()
            .iter()
            .filter_map(|callable| Some(callable.to_possible_value()?.get_name().to_owned()))
            .collect();
        for name in [
            "info",
            "get-load-balancer",
            "ensure-load-balancer-deleted",
            "node-addresses-by-provider-id",
            "instance-id",
            "add-ssh-key-to-all-instances",
            "get-zone-by-node-name",
            "list-routes",
        ] {
            assert!(names.iter().any(|known| known == name), "{name} in {names:?}");
        }
        assert!(!names.iter().any(|name| name == "initialize"), "the provider's own functions are `info`");
        assert_eq!(names.len(), Function::ALL.len() - 3);
    }

    #[tokio::test]
    async fn inputs_reach_the_cloud() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1");
        let zone = invoke(&cloud, Function::GetZoneByNodeName, &Some(r#""node-a""#.into())).await.unwrap();
        assert_eq!(zone, json!({"failureDomain": "zone-a", "region": "region-1"}));
        let missing = invoke(&cloud, Function::InstanceId, &None).await.unwrap_err();
        assert_eq!(missing.to_string(), "InstanceID needs an input; see `wasm-ccm provider call --help`");
        let service = json!({"service": {"metadata": {"name": "web", "namespace": "default"}}, "nodes": []});
        invoke(&cloud, Function::EnsureLoadBalancer, &Some(service.to_string())).await.unwrap();
        assert_eq!(cloud.take_calls(), ["get-zone-by-node-name node-a", "ensure default/web"], "no input, no call");
    }

    #[tokio::test]
    async fn batches_are_answered_by_node() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1").with_max_batch(10);
        let nodes = Some(json!([{"metadata": {"name": "node-a"}}, {"metadata": {"name": "node-z"}}]).to_string());
        let states = invoke(&cloud, Function::InstanceStates, &nodes).await.unwrap();
        let expected = json!([
            {"node": "node-a", "exists": true, "shutDown": false},
            {"node": "node-z", "exists": false, "shutDown": false},
        ]);
        assert_eq!(states, expected);
        let metadata = invoke(&cloud, Function::BatchMetadata, &nodes).await.unwrap();
        assert_eq!(metadata[0]["node"], "node-a");
        assert_eq!(metadata[0]["providerId"], "test://i-a");
        assert_eq!(metadata[1], json!({"node": "node-z", "error": "instance not found"}));
    }
}
