//! One node's initialisation, as upstream's `syncNode`: the cloud's
//! metadata asked once, the addresses written, then the provider ID, labels
//! and the taint's removal; a node already initialised has its GA topology
//! labels reconciled with the beta ones.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeAddress};
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use wasm_ccm_cloud::{Cloud, InstanceMetadata};

use super::addresses::node_addresses;
use super::labels::{cloud_labels, labels_to_reconcile};
use crate::framework::context::Context;
use crate::framework::error::Error;
use crate::framework::runner::{Action, Reconcile, Retry};
use crate::framework::workqueue::Backoff;
use crate::nodes::instances;
use crate::nodes::provided_ips::{AddressError, provided_node_ips};
use crate::nodes::taints::{UNINITIALIZED, has_taint, taints};

/// Writes of a node's spec tried again after a conflict, without asking the
/// cloud again.
const CONFLICT_RETRIES: usize = 5;
/// How long a retry waits for the watch to bring the node's next version.
const NEXT_VERSION_WAIT: Duration = Duration::from_secs(1);
/// How often the cache is looked at meanwhile.
const NEXT_VERSION_POLL: Duration = Duration::from_millis(50);

/// Initialises nodes, one at a time per node.
pub(super) struct InitializeNode<C> {
    ctx: Context<C>,
    api: Api<Node>,
}

impl<C: Cloud> Reconcile for InitializeNode<C> {
    type Key = String;

    const NAME: &'static str = "cloud-node";
    const QUEUE: &'static str = "Nodes";
    fn retry(&self, _key: &Self::Key) -> Retry {
        Retry::Backoff(Backoff::CONTROLLER)
    }

    async fn reconcile(&self, name: &String) -> Result<Action, Error> {
        self.sync_node(name).await.map(|()| Action::AwaitChange)
    }
}

impl<C: Cloud> InitializeNode<C> {
    /// Upstream's `syncNode`: an uninitialised node initialised from the
    /// cloud, an initialised one's labels kept up to date.
    async fn sync_node(&self, name: &str) -> Result<(), Error> {
        let Some(node) = self.ctx.nodes.store().get(&ObjectRef::new(name)) else {
            return Ok(());
        };
        if has_taint(&node, UNINITIALIZED) { self.initialize(&node).await } else { self.reconcile_labels(&node).await }
    }

    pub(super) fn new(ctx: Context<C>) -> Self {
        let api = Api::all(ctx.client.clone());
        InitializeNode { ctx, api }
    }

    async fn initialize(&self, node: &Arc<Node>) -> Result<(), Error> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        tracing::info!(node = name, "initializing the node with the cloud provider");
        let metadata = instances::instance_metadata(&self.ctx.cloud, node)
            .await
            .map_err(Error::cloud(format!("failed to get instance metadata for node {name}")))?;
        let provided = provided_node_ips(node)?;
        let existing = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        // An empty answer never wipes what the node has, as upstream; but
        // it cannot vouch for the IP kubelet was given, so such a node
        // stays uninitialised, as upstream.
        let addresses = if metadata.node_addresses.is_empty() {
            if let Some(ip) = provided.first() {
                return Err(AddressError::NoMatch(*ip).into());
            }
            None
        } else {
            Some(node_addresses(&metadata.node_addresses, &provided, &existing)?)
                .filter(|addresses| super::addresses::changed(&existing, addresses))
        };
        // Addresses first, so that no version of a schedulable node lacks
        // them; the spec is then written on the version that gave back.
        let mut current = node.clone();
        if let Some(addresses) = addresses {
            current = Arc::new(self.patch_addresses(name, &addresses).await?);
        }
        self.patch_spec(name, current, &metadata).await?;
        if let Some(age) = age(node) {
            self.ctx.metrics.taint_removed(age);
            self.ctx.metrics.initial_node_sync(age);
        }
        tracing::info!(node = name, provider_id = %metadata.provider_id, "initialized the node with the cloud provider");
        self.ctx.events.normal(node.object_ref(&()), "Synced", "Node synced successfully");
        Ok(())
    }

    async fn patch_addresses(&self, name: &str, addresses: &[NodeAddress]) -> Result<Node, Error> {
        let patch = json!({"status": {"addresses": addresses}});
        self.api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(Error::api("failed to update the node's addresses"))
    }

    /// Sets the provider ID and the labels and removes the taint, on the
    /// version of the node read last; after a conflict, on the next version
    /// the cache sees, as upstream retries on its lister.
    async fn patch_spec(&self, name: &str, mut node: Arc<Node>, metadata: &InstanceMetadata) -> Result<(), Error> {
        let mut attempt = 1;
        loop {
            let remaining: Vec<_> = taints(&node).iter().filter(|taint| taint.key != UNINITIALIZED).cloned().collect();
            let mut spec = json!({"taints": remaining});
            let has_provider_id =
                node.spec.as_ref().and_then(|spec| spec.provider_id.as_ref()).is_some_and(|id| !id.is_empty());
            if !has_provider_id && !metadata.provider_id.is_empty() {
                spec["providerID"] = json!(metadata.provider_id);
            }
            let labels = cloud_labels(metadata, node.metadata.labels.as_ref());
            let patch = json!({
                "metadata": {"resourceVersion": node.metadata.resource_version, "labels": labels},
                "spec": spec,
            });
            let patched = self.api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await;
            match patched.map_err(Error::api("failed to update the node")) {
                Ok(_) => return Ok(()),
                Err(err) if err.is_conflict() && attempt < CONFLICT_RETRIES => {
                    attempt += 1;
                    tracing::debug!(node = name, "the node changed meanwhile; writing on its next version");
                    node = self.next_version(&node).await;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// The first version of `node` the cache has after it, waiting for the
    /// watch to bring it; the cached one when none comes in time.
    async fn next_version(&self, node: &Node) -> Arc<Node> {
        let key = ObjectRef::from_obj(node);
        let mut waited = Duration::ZERO;
        loop {
            let cached = self.ctx.nodes.store().get(&key);
            match cached {
                Some(cached) if cached.metadata.resource_version != node.metadata.resource_version => return cached,
                Some(cached) if waited >= NEXT_VERSION_WAIT => return cached,
                None if waited >= NEXT_VERSION_WAIT => return Arc::new(node.clone()),
                _ => {}
            }
            tokio::time::sleep(NEXT_VERSION_POLL).await;
            waited += NEXT_VERSION_POLL;
        }
    }

    /// Sets the GA topology labels the beta ones disagree with, as
    /// upstream's `reconcileNodeLabels`.
    async fn reconcile_labels(&self, node: &Node) -> Result<(), Error> {
        let labels = labels_to_reconcile(node.metadata.labels.as_ref());
        if labels.is_empty() {
            return Ok(());
        }
        let name = node.metadata.name.as_deref().unwrap_or_default();
        tracing::info!(node = name, ?labels, "setting the GA topology labels from the beta ones");
        let patch = json!({"metadata": {"labels": labels}});
        self.api
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(drop)
            .map_err(Error::api("failed to update the node's labels"))
    }
}

/// Seconds since the node was created.
fn age(node: &Node) -> Option<f64> {
    let created = node.metadata.creation_timestamp.as_ref()?.0;
    let elapsed = k8s_openapi::jiff::Timestamp::now().duration_since(created);
    Some(elapsed.as_secs_f64().max(0.0))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use wasm_ccm_cloud::{Function, Parts, ProviderError};

    use super::*;
    use crate::cloud_node::labels::{REGION, ZONE, ZONE_BETA};
    use crate::fixtures::{NodeFixture, TestCloud, TestEnv};
    use crate::nodes::provided_ips::PROVIDED_NODE_IP;

    fn addresses(node: &Node) -> Vec<(String, String)> {
        let addresses = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        addresses.into_iter().map(|address| (address.type_, address.address)).collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
    }

    async fn initialize(env: &TestEnv, name: &str) -> Result<(), Error> {
        InitializeNode::new(env.context()).sync_node(name).await
    }

    #[tokio::test]
    async fn a_tainted_node_is_initialized_with_one_cloud_call() {
        let mut env = TestEnv::new(TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1")).await;
        env.add_node(Node::test("node-a").with_taint(UNINITIALIZED)).await;
        initialize(&env, "node-a").await.unwrap();
        let node = env.node("node-a").await;
        assert!(!has_taint(&node, UNINITIALIZED));
        assert_eq!(node.spec.as_ref().unwrap().provider_id.as_deref(), Some("test://i-a"));
        let labels = node.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(ZONE).map(String::as_str), Some("zone-a"));
        assert_eq!(labels.get(ZONE_BETA).map(String::as_str), Some("zone-a"));
        assert_eq!(addresses(&node), pairs(&[("InternalIP", "10.0.0.1"), ("Hostname", "node-a")]));
        assert_eq!(
            env.cloud.take_calls(),
            ["metadata node-a"],
            "the spec write did not conflict with the status write"
        );
        assert_eq!(env.event_reasons(), ["Synced"]);
    }

    #[tokio::test]
    async fn an_empty_answer_keeps_the_node_s_addresses() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1");
        cloud.update_instance("node-a", |instance| instance.metadata.node_addresses.clear());
        let mut env = TestEnv::new(cloud).await;
        let node = Node::test("node-a").with_taint(UNINITIALIZED).with_addresses(&[("InternalIP", "10.9.9.9")]);
        env.add_node(node).await;
        initialize(&env, "node-a").await.unwrap();
        let node = env.node("node-a").await;
        assert!(!has_taint(&node, UNINITIALIZED));
        assert_eq!(addresses(&node), pairs(&[("InternalIP", "10.9.9.9")]));
    }

    /// A provider of the first instances API that knows nodes by name only.
    #[tokio::test]
    async fn a_name_only_provider_initializes_nodes() {
        let parts = Parts { instances: true, zones: true, ..Parts::default() };
        let cloud = TestCloud::default().with_parts(parts).with_instance("node-a", "i-a", "10.0.0.1");
        for function in [
            Function::InstanceId,
            Function::NodeAddressesByProviderId,
            Function::InstanceTypeByProviderId,
            Function::GetZoneByProviderId,
        ] {
            cloud.fail(function, ProviderError::NotImplemented);
        }
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").with_taint(UNINITIALIZED)).await;
        initialize(&env, "node-a").await.unwrap();
        let node = env.node("node-a").await;
        assert!(!has_taint(&node, UNINITIALIZED));
        assert_eq!(node.spec.as_ref().unwrap().provider_id, None, "no instance IDs, no provider ID");
        assert_eq!(addresses(&node)[0], ("InternalIP".to_owned(), "10.0.0.1".to_owned()));
        assert_eq!(node.metadata.labels.unwrap_or_default().get(REGION).map(String::as_str), Some("region-1"));
        let calls = env.cloud.take_calls();
        assert_eq!(
            calls,
            ["instance-id node-a", "node-addresses node-a", "instance-type node-a", "get-zone-by-node-name node-a"]
        );
    }

    #[tokio::test]
    async fn a_provided_node_ip_the_cloud_does_not_know_keeps_the_taint() {
        let mut env = TestEnv::new(TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1")).await;
        let mut node = Node::test("node-a").with_taint(UNINITIALIZED);
        node.metadata.annotations = Some(BTreeMap::from([(PROVIDED_NODE_IP.to_owned(), "10.0.0.9".to_owned())]));
        env.add_node(node).await;
        let err = initialize(&env, "node-a").await.unwrap_err();
        assert!(err.to_string().contains("10.0.0.9"), "{err}");
        assert!(has_taint(&env.node("node-a").await, UNINITIALIZED));
    }

    #[tokio::test]
    async fn a_provided_node_ip_and_no_addresses_from_the_cloud_keeps_the_taint() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1");
        cloud.update_instance("node-a", |instance| instance.metadata.node_addresses.clear());
        let mut env = TestEnv::new(cloud).await;
        let mut node = Node::test("node-a").with_taint(UNINITIALIZED).with_addresses(&[("InternalIP", "10.0.0.1")]);
        node.metadata.annotations = Some(BTreeMap::from([(PROVIDED_NODE_IP.to_owned(), "10.0.0.1".to_owned())]));
        env.add_node(node).await;
        let err = initialize(&env, "node-a").await.unwrap_err();
        assert!(err.to_string().contains("matches ip: 10.0.0.1"), "{err}");
        assert!(has_taint(&env.node("node-a").await, UNINITIALIZED), "the cloud cannot vouch for the node's IP");
    }

    #[tokio::test]
    async fn a_conflict_is_written_again_without_asking_the_cloud() {
        let mut env = TestEnv::new(TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1")).await;
        let created = env
            .add_node(
                Node::test("node-a")
                    .with_taint(UNINITIALIZED)
                    .with_addresses(&[("InternalIP", "10.0.0.1"), ("Hostname", "node-a")]),
            )
            .await;
        // Someone labels the node after the cache saw it; the watch brings
        // that version a little later.
        let api = Api::<Node>::all(env.client.clone());
        let patch = serde_json::json!({"metadata": {"labels": {"team": "a"}}});
        let labelled = api.patch("node-a", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
        env.cache_node(created);
        let watch = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            env.cache_node(labelled);
        };
        let (initialized, ()) = tokio::join!(initialize(&env, "node-a"), watch);
        initialized.unwrap();
        let node = env.node("node-a").await;
        assert!(!has_taint(&node, UNINITIALIZED));
        assert_eq!(node.metadata.labels.unwrap_or_default().get("team").map(String::as_str), Some("a"));
        assert_eq!(env.cloud.take_calls(), ["metadata node-a"]);
    }

    #[tokio::test]
    async fn an_initialized_node_gets_the_ga_labels_of_its_beta_ones() {
        let mut env = TestEnv::new(TestCloud::default()).await;
        env.add_node(Node::test("node-a").with_labels(&[(ZONE_BETA, "z1"), (ZONE, "z0")])).await;
        initialize(&env, "node-a").await.unwrap();
        let labels = env.node("node-a").await.metadata.labels.unwrap_or_default();
        assert_eq!(labels.get(ZONE).map(String::as_str), Some("z1"));
        assert!(env.cloud.take_calls().is_empty(), "no cloud call");
    }
}
