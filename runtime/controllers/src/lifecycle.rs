//! The cloud node lifecycle controller, as upstream's `MonitorNodes`: every
//! monitor period, a node that is not Ready is deleted when its instance is
//! gone and tainted `node.cloudprovider.kubernetes.io/shutdown:NoSchedule`
//! when it is shut down; Ready nodes lose that taint.

use k8s_openapi::api::core::v1::{Node, Taint};
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::{Cloud, ProviderError};

use crate::config::ControllerName;
use crate::context::Context;
use crate::driver::Controller;
use crate::error::Error;
use crate::instances;
use crate::runner::{Action, Reconcile, Retry, Runner, Stopped};
use crate::taints::{SHUTDOWN, has_taint, is_ready, taints};

/// The node lifecycle controller.
pub struct NodeLifecycleController<C: Cloud> {
    runner: Runner<MonitorNode<C>>,
    ctx: Context<C>,
}

impl<C: Cloud> NodeLifecycleController<C> {
    /// A controller over the nodes of `ctx`; must be made inside a tokio
    /// runtime.
    pub fn new(ctx: Context<C>) -> Self {
        let runner = Runner::new(
            MonitorNode::new(ctx.clone()),
            ctx.settings.concurrent_node_lifecycle_syncs,
            ctx.metrics.clone(),
        );
        NodeLifecycleController { runner, ctx }
    }
}

impl<C: Cloud> Controller for NodeLifecycleController<C> {
    const NAME: ControllerName = ControllerName::CloudNodeLifecycle;

    /// Monitors every node now and every period.
    async fn run(self, stop: CancellationToken) -> Result<(), Stopped> {
        let nodes = self.ctx.nodes.clone();
        let every_node =
            move || nodes.all().iter().map(|node| node.metadata.name.clone().unwrap_or_default()).collect();
        self.runner.run_sweeping(self.ctx.settings.node_monitor_period, every_node, stop).await
    }
}

/// Checks one node against the cloud.
struct MonitorNode<C> {
    ctx: Context<C>,
    api: Api<Node>,
}

impl<C: Cloud> Reconcile for MonitorNode<C> {
    type Key = String;

    const NAME: &'static str = "cloud-node-lifecycle";
    const QUEUE: &'static str = "cloud-node-lifecycle";
    fn retry(&self, _key: &Self::Key) -> Retry {
        Retry::NextTrigger
    }

    async fn reconcile(&self, name: &String) -> Result<Action, Error> {
        self.monitor(name).await.map(|()| Action::AwaitChange)
    }
}

impl<C: Cloud> MonitorNode<C> {
    /// Upstream's `MonitorNodes` for one node: the shutdown taint follows
    /// the instance, and a node whose instance is gone is deleted.
    async fn monitor(&self, name: &str) -> Result<(), Error> {
        let Some(node) = self.ctx.nodes.store().get(&ObjectRef::new(name)) else {
            return Ok(());
        };
        if is_ready(&node) {
            if has_taint(&node, SHUTDOWN) {
                let remaining: Vec<Taint> =
                    taints(&node).iter().filter(|taint| taint.key != SHUTDOWN).cloned().collect();
                self.patch_taints(&node, remaining).await.map_err(Error::api("failed to remove the shutdown taint"))?;
                tracing::info!(node = %name, "removed the shutdown taint");
            }
            return Ok(());
        }
        let exists = match instances::instance_exists(&self.ctx.cloud, &node).await {
            Err(ProviderError::NotImplemented) => {
                tracing::debug!(node = %name, "the provider cannot tell whether the instance exists; skipping");
                return Ok(());
            }
            result => result.map_err(Error::cloud(format!("error checking if node {name} exists")))?,
        };
        if !exists {
            return self.delete(&node, name).await;
        }
        let shutdown = instances::instance_shutdown(&self.ctx.cloud, &node)
            .await
            .map_err(Error::cloud(format!("error checking if node {name} is shutdown")))?;
        if shutdown && !has_taint(&node, SHUTDOWN) {
            let mut tainted = taints(&node).to_vec();
            tainted.push(Taint { key: SHUTDOWN.into(), effect: "NoSchedule".into(), ..Default::default() });
            self.patch_taints(&node, tainted).await.map_err(Error::api("failed to apply the shutdown taint"))?;
            tracing::info!(node = %name, "added the shutdown taint");
        }
        Ok(())
    }

    fn new(ctx: Context<C>) -> Self {
        let api = Api::all(ctx.client.clone());
        MonitorNode { ctx, api }
    }

    async fn delete(&self, node: &Node, name: &str) -> Result<(), Error> {
        tracing::info!(node = name, "deleting the node: it is no longer present in the cloud provider");
        let reference = node.object_ref(&());
        let note = format!("Deleting node {name} because it does not exist in the cloud provider");
        self.ctx.events.normal(reference.clone(), "DeletingNode", note);
        if let Err(err) = self.api.delete(name, &DeleteParams::default()).await {
            self.ctx.events.warning(reference, "DeletingNodeFailed", format!("Failed deleting node {name}: {err}"));
            return Err(Error::api("failed to delete the node")(err));
        }
        Ok(())
    }

    /// Writes the node's taints, on the version of it the cache holds: a
    /// conflict means the node changed, and the next period sees it anew.
    async fn patch_taints(&self, node: &Node, taints: Vec<Taint>) -> Result<(), kube::Error> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let patch =
            json!({"metadata": {"resourceVersion": node.metadata.resource_version}, "spec": {"taints": taints}});
        self.api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use wasm_ccm_cloud::{Function, Parts};

    use super::*;
    use crate::fixtures::{NodeFixture, TestCloud, TestEnv};

    async fn monitor(env: &TestEnv, name: &str) -> Result<(), Error> {
        MonitorNode::new(env.context()).monitor(name).await
    }

    async fn exists(env: &TestEnv, name: &str) -> bool {
        Api::<Node>::all(env.client.clone()).get_opt(name).await.unwrap().is_some()
    }

    #[tokio::test]
    async fn a_node_whose_instance_is_gone_is_deleted() {
        let mut env = TestEnv::new(TestCloud::default()).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        monitor(&env, "node-a").await.unwrap();
        assert!(!exists(&env, "node-a").await);
        let (_, reason, _, note) = env.events().pop().unwrap();
        assert_eq!(
            (reason.as_str(), note.as_str()),
            ("DeletingNode", "Deleting node node-a because it does not exist in the cloud provider")
        );
    }

    #[tokio::test]
    async fn a_shut_down_instance_taints_its_node_until_it_is_ready() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1");
        cloud.update_instance("node-a", |instance| instance.shutdown = true);
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        monitor(&env, "node-a").await.unwrap();
        let node = env.node("node-a").await;
        assert!(has_taint(&node, SHUTDOWN));
        env.cache_node(node.ready(true));
        monitor(&env, "node-a").await.unwrap();
        assert!(!has_taint(&env.node("node-a").await, SHUTDOWN));
    }

    #[tokio::test]
    async fn a_provider_that_cannot_tell_leaves_the_node_alone() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1");
        cloud.fail(Function::InstanceExists, ProviderError::NotImplemented);
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        monitor(&env, "node-a").await.unwrap();
        assert!(exists(&env, "node-a").await);
        assert_eq!(env.cloud.take_calls(), ["exists node-a"], "no shutdown check either");
    }

    /// As 1.33: the cloud is asked about `<provider>://`, and decides.
    #[tokio::test]
    async fn an_empty_instance_id_is_asked_about_as_the_bare_scheme() {
        let parts = Parts { instances: true, ..Parts::default() };
        let cloud = TestCloud::default().with_parts(parts).with_instance("node-a", "", "10.0.0.1");
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        monitor(&env, "node-a").await.unwrap();
        assert!(exists(&env, "node-a").await, "the cloud knows test://");
        let calls = env.cloud.take_calls();
        assert_eq!(calls[..2], ["instance-id node-a", "instance-exists-by-provider-id test://"], "{calls:?}");
    }

    #[tokio::test]
    async fn a_cloud_error_leaves_the_node_for_the_next_period() {
        let cloud = TestCloud::default();
        cloud.fail(Function::InstanceExists, ProviderError::Cloud("throttled".into()));
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        let err = monitor(&env, "node-a").await.unwrap_err();
        assert_eq!(err.to_string(), "error checking if node node-a exists: throttled");
        assert!(exists(&env, "node-a").await);
    }
}
