//! The lifecycle's questions to the cloud about many nodes: whether each
//! one's instance exists and, if so, whether it is shut down. In batches of
//! the provider's size when it answers in batches, otherwise one node at a
//! time, as upstream asks, a few nodes at once.

use std::sync::Arc;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::Node;
use wasm_ccm_cloud::{BatchAnswers, Cloud, InstanceState, NodeSet, NodeSnapshot, ProviderError};

use crate::instances;

/// What the lifecycle asks of a node, by upstream's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Question {
    /// `InstanceExists`.
    Exists,
    /// `InstanceShutdown`.
    ShutDown,
}

impl Question {
    /// The error's prefix, as upstream words it.
    pub(super) fn failure(self, node: &str) -> String {
        match self {
            Question::Exists => format!("error checking if node {node} exists"),
            Question::ShutDown => format!("error checking if node {node} is shutdown"),
        }
    }
}

/// A node and the cloud's answer about it; an error says which question
/// failed.
pub(super) type Answer = (Arc<Node>, Result<InstanceState, (Question, ProviderError)>);

/// Asks of every node of `nodes` whether its instance exists and is shut
/// down, at most `concurrency` calls at once, and gives one answer per
/// node, in no particular order. Batches hold nodes of neighbouring names.
pub(super) async fn ask<C: Cloud>(cloud: &C, mut nodes: Vec<Arc<Node>>, concurrency: usize) -> Vec<Answer> {
    let info = cloud.info();
    let batch = usize::try_from(info.max_batch).unwrap_or(usize::MAX);
    let concurrency = concurrency.max(1);
    if info.parts.instances_v2 && batch > 0 {
        // Batches of neighbours by name: the same batches every pass.
        nodes.sort_unstable_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let batches: Vec<NodeSet> = nodes.chunks(batch).map(node_set).collect();
        stream::iter(batches)
            .map(|set| ask_batch(cloud, set))
            .buffer_unordered(concurrency)
            .flat_map(stream::iter)
            .collect()
            .await
    } else {
        stream::iter(nodes)
            .map(|node| async move {
                let state = ask_one(cloud, &node).await;
                (node, state)
            })
            .buffer_unordered(concurrency)
            .collect()
            .await
    }
}

/// Upstream's two questions about one node: shut down only when it exists.
async fn ask_one<C: Cloud>(cloud: &C, node: &Node) -> Result<InstanceState, (Question, ProviderError)> {
    let exists = instances::instance_exists(cloud, node).await.map_err(|err| (Question::Exists, err))?;
    if !exists {
        return Ok(InstanceState { exists, shut_down: false });
    }
    let shut_down = instances::instance_shutdown(cloud, node).await.map_err(|err| (Question::ShutDown, err))?;
    Ok(InstanceState { exists, shut_down })
}

fn node_set(nodes: &[Arc<Node>]) -> NodeSet {
    NodeSet::new(Arc::new(NodeSnapshot::new(nodes.to_vec())), None)
}

/// One batch call; an error of the whole call is every node's answer, as
/// if it had failed to say whether the instance exists.
async fn ask_batch<C: Cloud>(cloud: &C, set: NodeSet) -> Vec<Answer> {
    let answers: Result<BatchAnswers, ProviderError> = cloud.instance_states(&set).await;
    let nodes = set.current().nodes().iter().cloned();
    match answers {
        Ok(answers) => {
            nodes.zip(answers.into_iter().map(|answer| answer.map_err(|err| (Question::Exists, err)))).collect()
        }
        Err(err) => nodes.map(|node| (node, Err((Question::Exists, err.clone())))).collect(),
    }
}
