//! The periodic address refresh of initialised nodes, as upstream's
//! `UpdateNodeStatus`: every period, the cloud's addresses of every
//! initialised node, kubelet's host name kept and its `--node-ip` first,
//! written when they differ as sets.
//!
//! Each period is one pass over the nodes. The provider is asked for their
//! metadata in batches when it answers in batches (`metadata-batch`), and
//! one node at a time otherwise, or when it answers a batch that it cannot.
//! A node whose answer failed keeps its addresses until the next pass.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::{Node, NodeAddress};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::{Cloud, NodeSet, ProviderError};

use super::addresses::{changed, node_addresses};
use crate::framework::context::Context;
use crate::framework::error::Error;
use crate::nodes::batches::{in_batches, one_at_a_time};
use crate::nodes::instances;
use crate::nodes::provided_ips::provided_node_ips;
use crate::nodes::taints::{UNINITIALIZED, has_taint};

const NAME: &str = "cloud-node-status";

/// A node and the cloud's addresses of it.
type Answer = (Arc<Node>, Result<Vec<NodeAddress>, ProviderError>);

/// Refreshes initialised nodes' addresses.
pub(super) struct RefreshNodes<C> {
    ctx: Context<C>,
    api: Api<Node>,
}

impl<C: Cloud> RefreshNodes<C> {
    pub(super) fn new(ctx: Context<C>) -> Self {
        let api = Api::all(ctx.client.clone());
        RefreshNodes { ctx, api }
    }

    /// Refreshes every initialised node now and every `period`, until
    /// `stop`.
    pub(super) async fn run(self, period: Duration, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            self.pass().await;
        }
    }

    /// One pass of upstream's `UpdateNodeStatus` over the initialised nodes.
    async fn pass(&self) {
        let nodes: Vec<Arc<Node>> =
            self.ctx.nodes.all().into_iter().filter(|node| !has_taint(node, UNINITIALIZED)).collect();
        let concurrency = self.ctx.settings.concurrent_node_status_updates.max(1);
        let answers = ask(&self.ctx.cloud, nodes, concurrency).await;
        let mut updates = stream::iter(answers).map(|answer| self.update(answer)).buffer_unordered(concurrency);
        while let Some(result) = updates.next().await {
            if let Err(err) = result {
                self.ctx.metrics.reconcile_error(NAME, err.kind());
                tracing::warn!(controller = NAME, "{err}");
            }
        }
        self.ctx.metrics.node_status_pass();
    }

    /// Writes the node's addresses as the cloud has them, when they differ.
    async fn update(&self, (node, cloud): Answer) -> Result<(), Error> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let cloud = cloud.map_err(Error::cloud(format!("failed to get the addresses of node {name}")))?;
        // An empty answer never wipes what the node has, as upstream.
        if cloud.is_empty() {
            tracing::debug!(node = %name, "the cloud gave no addresses; keeping the node's");
            return Ok(());
        }
        let existing = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        let addresses = node_addresses(&cloud, &provided_node_ips(&node)?, &existing)?;
        if !changed(&existing, &addresses) {
            return Ok(());
        }
        tracing::info!(node = %name, "updating the node's addresses from the cloud");
        let patch = json!({"status": {"addresses": addresses}});
        self.api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(drop)
            .map_err(Error::api("failed to update the node's addresses"))
    }
}

/// The cloud's addresses of every node of `nodes`, at most `concurrency`
/// calls at once.
async fn ask<C: Cloud>(cloud: &C, nodes: Vec<Arc<Node>>, concurrency: usize) -> Vec<Answer> {
    let info = cloud.info();
    let batch = usize::try_from(info.max_batch).unwrap_or(usize::MAX);
    let one_by_one =
        |nodes| one_at_a_time(nodes, concurrency, |node| async move { instances::node_addresses(cloud, &node).await });
    if !info.parts.instances_v2 || batch == 0 {
        return one_by_one(nodes).await;
    }
    let (mut answers, unasked): (Vec<Asked>, Vec<Asked>) =
        in_batches(nodes, batch, concurrency, |set| ask_batch(cloud, set)).await.into_iter().partition(Asked::is_ok);
    let unasked: Vec<Arc<Node>> = unasked.into_iter().filter_map(Result::err).collect();
    answers.extend(one_by_one(unasked).await.into_iter().map(Ok));
    answers.into_iter().filter_map(Result::ok).collect()
}

/// A node's answer, or the node when its batch was not asked: the provider
/// answers no batch.
type Asked = Result<Answer, Arc<Node>>;

/// One batch call; an error of the whole call is every node's answer.
async fn ask_batch<C: Cloud>(cloud: &C, set: NodeSet) -> Vec<Asked> {
    let nodes = set.current().nodes().to_vec();
    match cloud.batch_metadata(&set).await {
        Ok(answers) => {
            let addresses = answers.into_iter().map(|answer| answer.map(|metadata| metadata.node_addresses));
            nodes.into_iter().zip(addresses).map(Ok).collect()
        }
        Err(ProviderError::NotImplemented) => nodes.into_iter().map(Err).collect(),
        Err(err) => nodes.into_iter().map(|node| Ok((node, Err(err.clone())))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use wasm_ccm_cloud::Function;

    use super::*;
    use crate::fixtures::{NodeFixture, TestCloud, TestEnv};

    async fn pass(env: &TestEnv) {
        RefreshNodes::new(env.context()).pass().await;
    }

    fn addresses(node: &Node) -> Vec<String> {
        let addresses = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        addresses.into_iter().map(|address| address.address).collect()
    }

    #[tokio::test]
    async fn addresses_follow_the_cloud_unless_only_their_order_differs() {
        let mut env = TestEnv::new(TestCloud::default().with_instance("node-a", "i-a", "10.0.0.2")).await;
        env.add_node(Node::test("node-a").with_addresses(&[("InternalIP", "10.0.0.1"), ("Hostname", "node-a")])).await;
        pass(&env).await;
        assert_eq!(addresses(&env.node("node-a").await), ["10.0.0.2", "node-a"], "kubelet's host name kept");

        env.cache_node(Node::test("node-a").with_addresses(&[("Hostname", "node-a"), ("InternalIP", "10.0.0.2")]));
        env.api.reset_requests();
        pass(&env).await;
        assert_eq!(env.api.requests().total(), 0, "the same addresses in another order are no change");
    }

    #[tokio::test]
    async fn an_empty_answer_never_wipes_the_addresses() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.2");
        cloud.update_instance("node-a", |instance| instance.metadata.node_addresses.clear());
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").with_addresses(&[("InternalIP", "10.0.0.1")])).await;
        pass(&env).await;
        assert_eq!(addresses(&env.node("node-a").await), ["10.0.0.1"]);
    }

    #[tokio::test]
    async fn tainted_nodes_are_left_to_initialization() {
        let mut env = TestEnv::new(TestCloud::default().with_instance("node-a", "i-a", "10.0.0.2")).await;
        env.add_node(Node::test("node-a").with_taint(UNINITIALIZED)).await;
        pass(&env).await;
        assert!(env.cloud.take_calls().is_empty());
    }

    /// Nodes `a`, `b` and `c` at 10.0.0.1, whose instances are at 10.0.0.2;
    /// the cloud takes batches of two.
    async fn three_nodes_moved() -> TestEnv {
        let cloud = ["a", "b", "c"].into_iter().fold(TestCloud::default().with_max_batch(2), |cloud, node| {
            cloud.with_instance(&format!("node-{node}"), node, "10.0.0.2")
        });
        let mut env = TestEnv::new(cloud).await;
        for node in ["a", "b", "c"] {
            env.add_node(Node::test(&format!("node-{node}")).with_addresses(&[("InternalIP", "10.0.0.1")])).await;
        }
        env.cloud.take_calls();
        env
    }

    async fn all_addresses(env: &mut TestEnv) -> Vec<Vec<String>> {
        let mut all = Vec::new();
        for node in ["node-a", "node-b", "node-c"] {
            all.push(addresses(&env.node(node).await));
        }
        all
    }

    #[tokio::test]
    async fn a_provider_that_answers_in_batches_is_asked_in_batches() {
        let mut env = three_nodes_moved().await;
        pass(&env).await;
        let mut calls = env.cloud.take_calls();
        calls.sort();
        assert_eq!(calls, ["metadata node-a,node-b", "metadata node-c"]);
        assert_eq!(all_addresses(&mut env).await, [["10.0.0.2"], ["10.0.0.2"], ["10.0.0.2"]]);
    }

    #[tokio::test]
    async fn a_batch_the_provider_cannot_answer_is_asked_one_node_at_a_time() {
        let mut env = three_nodes_moved().await;
        env.cloud.fail(Function::BatchMetadata, ProviderError::NotImplemented);
        pass(&env).await;
        let mut calls = env.cloud.take_calls();
        calls.sort();
        let expected =
            ["metadata node-a", "metadata node-a,node-b", "metadata node-b", "metadata node-c", "metadata node-c"];
        assert_eq!(calls, expected);
        assert_eq!(all_addresses(&mut env).await, [["10.0.0.2"], ["10.0.0.2"], ["10.0.0.2"]]);
    }

    #[tokio::test]
    async fn a_refused_batch_leaves_its_nodes_for_the_next_pass() {
        let mut env = three_nodes_moved().await;
        env.cloud.fail(Function::BatchMetadata, ProviderError::Cloud("throttled".into()));
        pass(&env).await;
        assert_eq!(env.cloud.take_calls().len(), 2, "no node asked again on its own");
        assert_eq!(all_addresses(&mut env).await, [["10.0.0.1"], ["10.0.0.1"], ["10.0.0.1"]]);
    }
}
