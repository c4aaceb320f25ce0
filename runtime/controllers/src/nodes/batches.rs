//! Questions about many nodes, asked of the cloud a few calls at once: in
//! batches of neighbouring names when the provider answers in batches, one
//! node at a time otherwise.

use std::sync::Arc;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::Node;
use wasm_ccm_cloud::{NodeSet, NodeSnapshot};

/// Splits `nodes` into sets of at most `size` nodes of neighbouring names,
/// the same sets every pass, and gathers `ask`'s answers about each set, at
/// most `concurrency` sets at once.
pub(crate) async fn in_batches<T, Fut>(
    mut nodes: Vec<Arc<Node>>,
    size: usize,
    concurrency: usize,
    ask: impl Fn(NodeSet) -> Fut,
) -> Vec<T>
where
    Fut: Future<Output = Vec<T>>,
{
    nodes.sort_unstable_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let sets: Vec<NodeSet> = nodes.chunks(size.max(1)).map(node_set).collect();
    stream::iter(sets).map(ask).buffer_unordered(concurrency.max(1)).flat_map(stream::iter).collect().await
}

/// `ask`'s answer about each node, at most `concurrency` nodes at once, in
/// no particular order.
pub(crate) async fn one_at_a_time<T, Fut>(
    nodes: Vec<Arc<Node>>,
    concurrency: usize,
    ask: impl Fn(Arc<Node>) -> Fut,
) -> Vec<(Arc<Node>, T)>
where
    Fut: Future<Output = T>,
{
    stream::iter(nodes)
        .map(|node| {
            let answer = ask(node.clone());
            async move { (node, answer.await) }
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

fn node_set(nodes: &[Arc<Node>]) -> NodeSet {
    NodeSet::new(Arc::new(NodeSnapshot::new(nodes.to_vec())), None)
}
