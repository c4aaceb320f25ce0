//! The periodic address refresh of initialised nodes, as upstream's
//! `UpdateNodeStatus`: the cloud's addresses, kubelet's host name kept and
//! its `--node-ip` first, written when they differ as sets.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use wasm_ccm_cloud::Cloud;

use super::addresses::{changed, node_addresses, provided_node_ips};
use crate::context::Context;
use crate::error::Error;
use crate::instances;
use crate::runner::{Action, Reconcile, Retry};
use crate::taints::{UNINITIALIZED, has_taint};

/// Refreshes nodes' addresses.
pub(super) struct RefreshNode<C> {
    ctx: Context<C>,
    api: Api<Node>,
}

impl<C: Cloud> Reconcile for RefreshNode<C> {
    type Key = String;

    const NAME: &'static str = "cloud-node-status";
    const QUEUE: &'static str = "cloud-node-status";
    fn retry(&self, _key: &Self::Key) -> Retry {
        Retry::NextTrigger
    }

    async fn reconcile(&self, name: &String) -> Result<Action, Error> {
        self.refresh(name).await.map(|()| Action::AwaitChange)
    }
}

impl<C: Cloud> RefreshNode<C> {
    /// Upstream's `UpdateNodeStatus` for one initialised node: its
    /// addresses as the cloud has them.
    async fn refresh(&self, name: &str) -> Result<(), Error> {
        let Some(node) = self.ctx.nodes.store().get(&ObjectRef::new(name)) else {
            return Ok(());
        };
        if has_taint(&node, UNINITIALIZED) {
            return Ok(());
        }
        let cloud = instances::node_addresses(&self.ctx.cloud, &node)
            .await
            .map_err(Error::cloud("failed to get the node's addresses"))?;
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

    pub(super) fn new(ctx: Context<C>) -> Self {
        let api = Api::all(ctx.client.clone());
        RefreshNode { ctx, api }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{NodeFixture, TestCloud, TestEnv};

    async fn refresh(env: &TestEnv, name: &str) -> Result<(), Error> {
        RefreshNode::new(env.context()).refresh(name).await
    }

    fn addresses(node: &Node) -> Vec<String> {
        let addresses = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        addresses.into_iter().map(|address| address.address).collect()
    }

    #[tokio::test]
    async fn addresses_follow_the_cloud_unless_only_their_order_differs() {
        let mut env = TestEnv::new(TestCloud::default().with_instance("node-a", "i-a", "10.0.0.2")).await;
        env.add_node(Node::test("node-a").with_addresses(&[("InternalIP", "10.0.0.1"), ("Hostname", "node-a")])).await;
        refresh(&env, "node-a").await.unwrap();
        assert_eq!(addresses(&env.node("node-a").await), ["10.0.0.2", "node-a"], "kubelet's host name kept");

        env.cache_node(Node::test("node-a").with_addresses(&[("Hostname", "node-a"), ("InternalIP", "10.0.0.2")]));
        env.api.reset_requests();
        refresh(&env, "node-a").await.unwrap();
        assert_eq!(env.api.requests().total(), 0, "the same addresses in another order are no change");
    }

    #[tokio::test]
    async fn an_empty_answer_never_wipes_the_addresses() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.2");
        cloud.update_instance("node-a", |instance| instance.metadata.node_addresses.clear());
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").with_addresses(&[("InternalIP", "10.0.0.1")])).await;
        refresh(&env, "node-a").await.unwrap();
        assert_eq!(addresses(&env.node("node-a").await), ["10.0.0.1"]);
    }

    #[tokio::test]
    async fn tainted_nodes_are_left_to_initialization() {
        let mut env = TestEnv::new(TestCloud::default().with_instance("node-a", "i-a", "10.0.0.2")).await;
        env.add_node(Node::test("node-a").with_taint(UNINITIALIZED)).await;
        refresh(&env, "node-a").await.unwrap();
        assert!(env.cloud.take_calls().is_empty());
    }
}
