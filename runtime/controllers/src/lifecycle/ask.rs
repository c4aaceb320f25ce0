//! The lifecycle's questions to the cloud about many nodes: in batches of
//! the provider's size when it answers in batches, otherwise one node at a
//! time, as upstream asks, a few nodes at once.

use std::sync::Arc;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::Node;
use wasm_ccm_cloud::{BatchAnswers, Cloud, NodeSet, NodeSnapshot, ProviderError};

use crate::instances;

/// What the lifecycle asks of a node.
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

/// A node and the cloud's answer about it.
pub(super) type Answer = (Arc<Node>, Result<bool, ProviderError>);

/// Asks `question` of every node of `nodes`, at most `concurrency` calls
/// at once, and gives one answer per node, in no particular order.
/// Batches hold nodes of neighbouring names.
pub(super) async fn ask<C: Cloud>(
    cloud: &C,
    question: Question,
    mut nodes: Vec<Arc<Node>>,
    concurrency: usize,
) -> Vec<Answer> {
    let info = cloud.info();
    let batch = usize::try_from(info.max_batch).unwrap_or(usize::MAX);
    let concurrency = concurrency.max(1);
    if info.parts.instances_v2 && batch > 0 {
        // Batches of neighbours by name: the same batches every pass.
        nodes.sort_unstable_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let batches: Vec<NodeSet> = nodes.chunks(batch).map(node_set).collect();
        stream::iter(batches)
            .map(|set| ask_batch(cloud, question, set))
            .buffer_unordered(concurrency)
            .flat_map(stream::iter)
            .collect()
            .await
    } else {
        stream::iter(nodes)
            .map(|node| async move {
                let answer = match question {
                    Question::Exists => instances::instance_exists(cloud, &node).await,
                    Question::ShutDown => instances::instance_shutdown(cloud, &node).await,
                };
                (node, answer)
            })
            .buffer_unordered(concurrency)
            .collect()
            .await
    }
}

fn node_set(nodes: &[Arc<Node>]) -> NodeSet {
    NodeSet::new(Arc::new(NodeSnapshot::new(nodes.to_vec())), None)
}

/// One batch call; an error of the whole call is every node's answer.
async fn ask_batch<C: Cloud>(cloud: &C, question: Question, set: NodeSet) -> Vec<Answer> {
    let answers: Result<BatchAnswers, ProviderError> = match question {
        Question::Exists => cloud.instances_exist(&set).await,
        Question::ShutDown => cloud.instances_shut_down(&set).await,
    };
    let nodes = set.current().nodes().iter().cloned();
    match answers {
        Ok(answers) => nodes.zip(answers).collect(),
        Err(err) => nodes.map(|node| (node, Err(err.clone()))).collect(),
    }
}
