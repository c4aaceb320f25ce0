//! The lifecycle's questions to the cloud about many nodes: whether each
//! one's instance exists and, if so, whether it is shut down. In batches of
//! the provider's size when it answers in batches, otherwise one node at a
//! time, as upstream asks, a few nodes at once.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use wasm_ccm_cloud::{BatchAnswers, Cloud, InstanceState, NodeSet, ProviderError};

use crate::nodes::batches::{in_batches, one_at_a_time};
use crate::nodes::instances;

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
pub(super) async fn ask<C: Cloud>(cloud: &C, nodes: Vec<Arc<Node>>, concurrency: usize) -> Vec<Answer> {
    let info = cloud.info();
    let batch = usize::try_from(info.max_batch).unwrap_or(usize::MAX);
    if info.parts.instances_v2 && batch > 0 {
        in_batches(nodes, batch, concurrency, |set| ask_batch(cloud, set)).await
    } else {
        one_at_a_time(nodes, concurrency, |node| async move { ask_one(cloud, &node).await }).await
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
