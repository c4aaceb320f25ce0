//! Instance checks, per fixture node and for a node the cloud does not
//! have: InstancesV2, the Instances (v1) the controllers fall back to, and
//! Zones.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use wasm_ccm_cloud::{Cloud, Function, InstanceMetadata, InstanceState, NodeSet, ProviderError};

use super::Suite;
use super::validate;

/// Runs the InstancesV2 checks.
pub async fn v2_checks<C: Cloud>(suite: &mut Suite<'_, C>) {
    let fixture = suite.fixture;
    for node in &fixture.nodes {
        v2_node_checks(suite, node).await;
    }
    let Suite { calls, fixture, report, .. } = suite;
    let unknown = unknown_node(&fixture.unknown_node);
    report
        .check("instances-v2/unknown-node/exists", async {
            match calls.run(Function::InstanceExists, async |p| p.instance_exists(&unknown).await).await {
                Ok(false) => Ok(()),
                Ok(true) => {
                    Err(format!("exists says true for {:?}, which the cloud does not have", fixture.unknown_node))
                }
                Err(err) => Err(format!("exists failed: {err}; a missing instance is exists=false, not an error")),
            }
        })
        .await;
    report
        .check("instances-v2/unknown-node/metadata", async {
            not_found(calls.run(Function::InstanceMetadata, async |p| p.instance_metadata(&unknown).await).await)
        })
        .await;
}

async fn v2_node_checks<C: Cloud>(suite: &mut Suite<'_, C>, node: &Node) {
    let Suite { calls, reloaded, report, info, .. } = suite;
    let name = node.metadata.name.clone().unwrap_or_default();
    let key = format!("instances-v2/{name}");
    let provider = info.name.clone();

    let metadata = report
        .check(format!("{key}/metadata"), async {
            let metadata = metadata_of(calls, node).await?;
            valid_metadata(&metadata, &provider)?;
            Ok(metadata)
        })
        .await;
    // Without metadata, the Node as the cloud node controller first sees it.
    let initialised = match &metadata {
        Some(metadata) => with_provider_id(node, &metadata.provider_id),
        None => node.clone(),
    };
    match metadata {
        None => report.skip(format!("{key}/metadata-by-provider-id"), "metadata failed"),
        Some(metadata) => {
            report
                .check(format!("{key}/metadata-by-provider-id"), async {
                    let again = metadata_of(reloaded, &initialised).await?;
                    if again == metadata {
                        Ok(())
                    } else {
                        Err(format!(
                            "the Node with its provider ID gets other metadata from a provider loaded afresh: \
                             {again:?}, not {metadata:?}"
                        ))
                    }
                })
                .await;
        }
    }
    report
        .check(format!("{key}/exists"), async {
            for asked in [node, &initialised] {
                let exists = calls
                    .run(Function::InstanceExists, async |p| p.instance_exists(asked).await)
                    .await
                    .map_err(|err| format!("exists failed: {err}"))?;
                if !exists {
                    let by = if asked.spec.as_ref().and_then(|s| s.provider_id.as_ref()).is_some() {
                        "by provider ID"
                    } else {
                        "by name"
                    };
                    return Err(format!("exists says false {by} for a node of the fixture"));
                }
            }
            Ok(())
        })
        .await;
    report
        .check(format!("{key}/shutdown"), async {
            calls
                .run(Function::InstanceShutdown, async |p| p.instance_shutdown(&initialised).await)
                .await
                .map(drop)
                .map_err(|err| format!("shutdown failed: {err}"))
        })
        .await;
}

/// Runs the checks of the batch forms: a batch of every fixture node and
/// the unknown one gets, node by node, the answers one node at a time gets,
/// for the lifecycle's questions and for the metadata.
pub async fn batch_checks<C: Cloud>(suite: &mut Suite<'_, C>) {
    let Suite { calls, fixture, report, info, .. } = suite;
    if info.max_batch == 0 {
        report.skip("instances-batch", "the provider answers one node at a time");
        return;
    }
    let mut nodes = fixture.nodes.clone();
    nodes.push(unknown_node(&fixture.unknown_node));
    let set = NodeSet::of(nodes);
    let max_batch = usize::try_from(info.max_batch).unwrap_or(usize::MAX);
    if set.current().len() > max_batch {
        report.skip("instances-batch", format!("the fixture has more nodes than a batch of {max_batch}"));
        return;
    }
    report
        .check("instances-batch/states", async {
            let batch = calls
                .run(Function::InstanceStates, async |p| p.instance_states(&set).await)
                .await
                .map_err(|err| format!("states failed: {err}"))?;
            agree(set.current().nodes(), batch, async |node| single_state(calls, node).await).await
        })
        .await;
    let batch = calls.run(Function::BatchMetadata, async |p| p.batch_metadata(&set).await).await;
    if batch == Err(ProviderError::NotImplemented) {
        report.skip("metadata-batch", "the provider is asked for metadata one node at a time");
        return;
    }
    report
        .check("metadata-batch/metadata", async {
            let batch = batch.map_err(|err| format!("metadata failed: {err}"))?;
            let single = async |node: &Node| {
                calls.run(Function::InstanceMetadata, async |p| p.instance_metadata(node).await).await
            };
            agree(set.current().nodes(), batch, single).await
        })
        .await;
}

/// Whether a batch's answers about `nodes` are, node by node, what `single`
/// answers one node at a time.
async fn agree<T: PartialEq + std::fmt::Debug>(
    nodes: &[Arc<Node>],
    batch: Vec<Result<T, ProviderError>>,
    single: impl AsyncFn(&Node) -> Result<T, ProviderError>,
) -> Result<(), String> {
    for (node, batched) in nodes.iter().zip(batch) {
        let single = single(node).await;
        if !same_answer(&batched, &single) {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            return Err(format!("the batch answers {batched:?} for node {name}, one node at a time {single:?}"));
        }
    }
    Ok(())
}

/// The state of a node's instance, asked one question at a time, as
/// upstream asks: shut down only when it exists.
async fn single_state<C: Cloud>(calls: &super::Calls<C>, node: &Node) -> Result<InstanceState, ProviderError> {
    let exists = calls.run(Function::InstanceExists, async |p| p.instance_exists(node).await).await?;
    let shut_down = exists && calls.run(Function::InstanceShutdown, async |p| p.instance_shutdown(node).await).await?;
    Ok(InstanceState { exists, shut_down })
}

/// The same answer, or errors of the same kind: messages may differ.
fn same_answer<T: PartialEq>(batched: &Result<T, ProviderError>, single: &Result<T, ProviderError>) -> bool {
    match (batched, single) {
        (Ok(batched), Ok(single)) => batched == single,
        (Err(batched), Err(single)) => batched.kind() == single.kind(),
        _ => false,
    }
}

async fn metadata_of<C: Cloud>(calls: &super::Calls<C>, node: &Node) -> Result<InstanceMetadata, String> {
    calls
        .run(Function::InstanceMetadata, async |p| p.instance_metadata(node).await)
        .await
        .map_err(|err| format!("metadata failed: {err}"))
}

fn valid_metadata(metadata: &InstanceMetadata, provider: &str) -> Result<(), String> {
    validate::provider_id(&metadata.provider_id, provider)?;
    for (field, value) in
        [("instance type", &metadata.instance_type), ("zone", &metadata.zone), ("region", &metadata.region)]
    {
        if value.is_empty() {
            return Err(format!("no {field}"));
        }
    }
    validate::node_addresses(&metadata.node_addresses)
}

/// Runs the Instances (v1) checks.
pub async fn v1_checks<C: Cloud>(suite: &mut Suite<'_, C>) {
    let Suite { calls, fixture, report, .. } = suite;
    for node in &fixture.nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        let key = format!("instances/{name}");
        report
            .check(format!("{key}/instance-id"), async {
                match calls.run(Function::InstanceId, async |p| p.instance_id(&name).await).await {
                    Ok(id) if !id.is_empty() => Ok(()),
                    Ok(_) => Err("an empty instance ID".to_owned()),
                    Err(err) => Err(format!("instance-id failed: {err}")),
                }
            })
            .await;
        report
            .check(format!("{key}/node-addresses"), async {
                let addresses = calls
                    .run(Function::NodeAddresses, async |p| p.node_addresses(&name).await)
                    .await
                    .map_err(|err| format!("node-addresses failed: {err}"))?;
                validate::node_addresses(&addresses)
            })
            .await;
        report
            .check(format!("{key}/instance-type"), async {
                match calls.run(Function::InstanceType, async |p| p.instance_type(&name).await).await {
                    Ok(kind) if !kind.is_empty() => Ok(()),
                    Ok(_) => Err("an empty instance type".to_owned()),
                    Err(err) => Err(format!("instance-type failed: {err}")),
                }
            })
            .await;
    }
    let unknown = fixture.unknown_node.as_str();
    report
        .check("instances/unknown-node/instance-id", async {
            not_found(calls.run(Function::InstanceId, async |p| p.instance_id(unknown).await).await)
        })
        .await;
}

/// Runs the Zones checks.
pub async fn zone_checks<C: Cloud>(suite: &mut Suite<'_, C>) {
    let Suite { calls, fixture, report, .. } = suite;
    for node in &fixture.nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        report
            .check(format!("zones/{name}/zone"), async {
                let zone = calls
                    .run(Function::GetZoneByNodeName, async |p| p.get_zone_by_node_name(&name).await)
                    .await
                    .map_err(|err| format!("get-zone-by-node-name failed: {err}"))?;
                if zone.failure_domain.is_empty() { Err("no failure domain".to_owned()) } else { Ok(()) }
            })
            .await;
    }
}

/// Passes on `instance-not-found`, the sentinel upstream's controllers
/// test for.
fn not_found<T>(result: Result<T, ProviderError>) -> Result<(), String> {
    match result {
        Err(ProviderError::InstanceNotFound) => Ok(()),
        Err(err) => Err(format!("failed with \"{err}\" ({}), not instance-not-found", err.kind())),
        Ok(_) => Err("answered for a node the cloud does not have, not instance-not-found".to_owned()),
    }
}

fn unknown_node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta { name: Some(name.to_owned()), uid: Some(format!("uid-{name}")), ..ObjectMeta::default() },
        ..Node::default()
    }
}

fn with_provider_id(node: &Node, provider_id: &str) -> Node {
    let mut node = node.clone();
    node.spec.get_or_insert_with(NodeSpec::default).provider_id = Some(provider_id.to_owned());
    node
}
