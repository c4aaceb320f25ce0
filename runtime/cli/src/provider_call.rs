//! `wasm-ccm provider call`: load a provider, call one function, print the
//! result as JSON. For provider authors and for checking a provider's
//! configuration by hand.

use std::io::Read;

use anyhow::Context;
use clap::ValueEnum;
use k8s_openapi::api::core::v1::{Node, Service};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use wasm_ccm_host::types::Route;
use wasm_ccm_host::{Engine, EngineSettings, LoadedProvider, ProviderHandle};

use crate::ProviderArgs;

/// The functions `provider call` can call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Function {
    /// The provider's name, cluster-ID support and parts. No input.
    Info,
    /// Input: `{"service": Service}`.
    GetLoadBalancer,
    /// Input: `{"service": Service}`.
    GetLoadBalancerName,
    /// Input: `{"service": Service, "nodes": [Node]}`.
    EnsureLoadBalancer,
    /// Input: `{"service": Service, "nodes": [Node]}`.
    UpdateLoadBalancer,
    /// Input: `{"service": Service}`.
    EnsureLoadBalancerDeleted,
    /// Input: a Node.
    InstanceExists,
    /// Input: a Node.
    InstanceShutdown,
    /// Input: a Node.
    InstanceMetadata,
    /// Input: a node name, as a JSON string.
    NodeAddresses,
    /// Input: a provider ID, as a JSON string.
    NodeAddressesByProviderId,
    /// Input: a node name, as a JSON string.
    InstanceId,
    /// Input: a node name, as a JSON string.
    InstanceType,
    /// Input: a provider ID, as a JSON string.
    InstanceTypeByProviderId,
    /// Input: a host name, as a JSON string.
    CurrentNodeName,
    /// Input: a provider ID, as a JSON string.
    InstanceExistsByProviderId,
    /// Input: a provider ID, as a JSON string.
    InstanceShutdownByProviderId,
    /// No input.
    GetZone,
    /// Input: a provider ID, as a JSON string.
    GetZoneByProviderId,
    /// Input: a node name, as a JSON string.
    GetZoneByNodeName,
    /// No input.
    ListClusters,
    /// Input: a cluster name, as a JSON string.
    Master,
    /// No input.
    ListRoutes,
    /// Input: `{"nameHint": string, "route": Route}`.
    CreateRoute,
    /// Input: a Route.
    DeleteRoute,
}

/// `provider call` flags.
#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The function to call.
    #[arg(value_enum)]
    pub function: Function,
    /// The function's input as JSON, or `-` to read it from stdin.
    pub input: Option<String>,
    /// The cluster name passed to the provider.
    #[arg(long, default_value = "kubernetes")]
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
struct CreateRouteInput {
    name_hint: String,
    route: Route,
}

fn parse<T: DeserializeOwned>(input: &Option<String>, function: Function) -> anyhow::Result<T> {
    let text = match input.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("cannot read the input from stdin")?;
            text
        }
        Some(text) => text.to_owned(),
        None => anyhow::bail!("{function:?} needs an input; see `wasm-ccm provider call --help`"),
    };
    serde_json::from_str(&text).with_context(|| format!("invalid input for {function:?}"))
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
        ..Default::default()
    })?;
    let provider = LoadedProvider::load(&engine, spec).await?;
    let handle = ProviderHandle::new(provider);
    let output = invoke(&handle, args.function, &args.input).await?;
    println!("{}", serde_json::to_string_pretty(&output)?);
    Ok(())
}

async fn invoke(handle: &ProviderHandle, function: Function, input: &Option<String>) -> anyhow::Result<Value> {
    use Function as F;
    let text = |input: &Option<String>| parse::<String>(input, function);
    Ok(match function {
        F::Info => serde_json::to_value(handle.info())?,
        F::GetLoadBalancer => {
            json!(handle.get_load_balancer(&parse::<LoadBalancerInput>(input, function)?.service).await?)
        }
        F::GetLoadBalancerName => {
            json!(handle.get_load_balancer_name(&parse::<LoadBalancerInput>(input, function)?.service).await?)
        }
        F::EnsureLoadBalancer => {
            let lb = parse::<LoadBalancerInput>(input, function)?;
            json!(handle.ensure_load_balancer(&lb.service, &lb.nodes).await?)
        }
        F::UpdateLoadBalancer => {
            let lb = parse::<LoadBalancerInput>(input, function)?;
            handle.update_load_balancer(&lb.service, &lb.nodes).await?;
            Value::Null
        }
        F::EnsureLoadBalancerDeleted => {
            handle.ensure_load_balancer_deleted(&parse::<LoadBalancerInput>(input, function)?.service).await?;
            Value::Null
        }
        F::InstanceExists => json!(handle.instance_exists(&parse(input, function)?).await?),
        F::InstanceShutdown => json!(handle.instance_shutdown(&parse(input, function)?).await?),
        F::InstanceMetadata => serde_json::to_value(handle.instance_metadata(&parse(input, function)?).await?)?,
        F::NodeAddresses => json!(handle.node_addresses(&text(input)?).await?),
        F::NodeAddressesByProviderId => json!(handle.node_addresses_by_provider_id(&text(input)?).await?),
        F::InstanceId => json!(handle.instance_id(&text(input)?).await?),
        F::InstanceType => json!(handle.instance_type(&text(input)?).await?),
        F::InstanceTypeByProviderId => json!(handle.instance_type_by_provider_id(&text(input)?).await?),
        F::CurrentNodeName => json!(handle.current_node_name(&text(input)?).await?),
        F::InstanceExistsByProviderId => json!(handle.instance_exists_by_provider_id(&text(input)?).await?),
        F::InstanceShutdownByProviderId => json!(handle.instance_shutdown_by_provider_id(&text(input)?).await?),
        F::GetZone => serde_json::to_value(handle.get_zone().await?)?,
        F::GetZoneByProviderId => serde_json::to_value(handle.get_zone_by_provider_id(&text(input)?).await?)?,
        F::GetZoneByNodeName => serde_json::to_value(handle.get_zone_by_node_name(&text(input)?).await?)?,
        F::ListClusters => json!(handle.list_clusters().await?),
        F::Master => json!(handle.master(&text(input)?).await?),
        F::ListRoutes => serde_json::to_value(handle.list_routes().await?)?,
        F::CreateRoute => {
            let create = parse::<CreateRouteInput>(input, function)?;
            handle.create_route(&create.name_hint, &create.route).await?;
            Value::Null
        }
        F::DeleteRoute => {
            handle.delete_route(&parse(input, function)?).await?;
            Value::Null
        }
    })
}
