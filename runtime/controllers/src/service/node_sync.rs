//! Node sync: when the nodes that back load balancers change, update every
//! load balancer whose node set differs, as upstream's `syncNodes`; those
//! that fail go back to the Service sync for a full ensure.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use kube::Resource;
use kube::runtime::reflector::Store;
use tokio::time::Instant;
use tracing::Instrument;
use wasm_ccm_cloud::{Cloud, NodeSet, NodeSnapshot, ProviderError};

use super::burst::Burst;
use super::claim::Claim;
use super::key::ServiceKey;
use super::memory::Memory;
use crate::framework::context::Context;
use crate::framework::error::Error;
use crate::framework::runner::{Action, All, Reconcile, Retry};
use crate::framework::workqueue::WorkQueue;
use crate::nodes::cache::names;

/// Node names listed in an event, as upstream.
const NAMES_IN_EVENTS: usize = 20;

/// Updates load balancers to the current nodes.
pub(super) struct NodeSync<C> {
    ctx: Context<C>,
    services: Store<Service>,
    memory: Arc<Memory>,
    /// Where load balancers that failed to update go for a full sync.
    retries: WorkQueue<ServiceKey>,
    claim: Claim,
    /// The node changes this sync waits to be over.
    changes: Arc<Burst>,
}

impl<C: Cloud> Reconcile for NodeSync<C> {
    type Key = All;

    const NAME: &'static str = "service-node-sync";
    const QUEUE: &'static str = "node";
    fn retry(&self, _key: &Self::Key) -> Retry {
        Retry::NextTrigger
    }

    async fn reconcile(&self, _: &All) -> Result<Action, Error> {
        if let Some(rest) = self.changes.end() {
            return Ok(Action::RequeueAfter(rest));
        }
        self.sync_nodes().await.map(|()| Action::AwaitChange)
    }
}

impl<C: Cloud> NodeSync<C> {
    /// Upstream's `syncNodes` pass: every load balancer whose nodes
    /// changed since it was last given them is updated. Each pass is timed,
    /// as upstream's, whether or not a load balancer needed it.
    async fn sync_nodes(&self) -> Result<(), Error> {
        let started = Instant::now();
        let nodes = self.ctx.nodes.eligible();
        let stale = self.memory.stale(&nodes);
        if stale.is_empty() {
            self.ctx.metrics.node_sync(started.elapsed().as_secs_f64(), false);
            return Ok(());
        }
        let failures = AtomicUsize::new(0);
        futures::stream::iter(stale)
            .for_each_concurrent(self.ctx.settings.concurrent_service_syncs, |key| {
                let (nodes, failures) = (nodes.clone(), &failures);
                let span = tracing::info_span!("update-hosts", service = %key);
                async move {
                    if !self.update_hosts(&key, &nodes).await {
                        failures.fetch_add(1, Ordering::Relaxed);
                        self.retries.add(key);
                    }
                }
                .instrument(span)
            })
            .await;
        let failed = failures.load(Ordering::Relaxed);
        self.ctx.metrics.node_sync(started.elapsed().as_secs_f64(), failed > 0);
        tracing::info!(nodes = nodes.len(), failed, "synced load balancer nodes in {:?}", started.elapsed());
        Ok(())
    }

    pub(super) fn new(
        ctx: Context<C>,
        services: Store<Service>,
        memory: Arc<Memory>,
        retries: WorkQueue<ServiceKey>,
        claim: Claim,
        changes: Arc<Burst>,
    ) -> Self {
        NodeSync { ctx, services, memory, retries, claim, changes }
    }

    /// Updates one load balancer's nodes, as upstream's
    /// `lockedUpdateLoadBalancerHosts`; `false` when it failed.
    async fn update_hosts(&self, key: &ServiceKey, nodes: &Arc<NodeSnapshot>) -> bool {
        let _lock = self.memory.lock_service(key).await;
        let Some(service) = self.services.get(key) else {
            return true;
        };
        if !self.claim.wants(&service) {
            return true;
        }
        let started = Instant::now();
        self.ctx.metrics.load_balancer_synced();
        let set = NodeSet::new(nodes.clone(), self.memory.given(key));
        // `Ok(true)`: updated; `Ok(false)`: nothing to update here, which
        // upstream records no event for.
        let result = match self.ctx.cloud.update_load_balancer(&service, &set).await {
            Ok(()) => Ok(true),
            Err(ProviderError::ImplementedElsewhere) => Ok(false),
            // It is only an error if the load balancer still exists.
            Err(err) => match self.ctx.cloud.get_load_balancer(&service).await {
                Ok(None) => Ok(false),
                _ => Err(err),
            },
        };
        self.ctx.metrics.host_update(started.elapsed().as_secs_f64());
        let reference = service.object_ref(&());
        match result {
            Ok(updated) => {
                self.memory.hosts_updated(key, nodes.clone());
                if !updated {
                    tracing::debug!(service = %key, "no load balancer to update the nodes of");
                } else if nodes.is_empty() {
                    let note = "There are no available nodes for LoadBalancer";
                    self.ctx.events.warning(reference, "UnAvailableLoadBalancer", note);
                } else {
                    self.ctx.events.normal(reference, "UpdatedLoadBalancer", "Updated load balancer with new hosts");
                }
                true
            }
            Err(err) => {
                let note = format!(
                    "Error updating load balancer with new hosts {} [node names limited, total number of nodes: {}], error: {err}",
                    names(nodes, NAMES_IN_EVENTS),
                    nodes.len()
                );
                self.ctx.events.warning(reference, "UpdateLoadBalancerFailed", note);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Node;
    use kube::runtime::reflector::ObjectRef;

    use wasm_ccm_cloud::Function;

    use super::*;
    use crate::fixtures::{NodeFixture, ServiceFixture, TestCloud, TestEnv};
    use crate::framework::metrics::Metrics;
    use crate::providers::policy::SharedPolicy;
    use crate::service::burst::QUIET;
    use crate::service::sync::ServiceSync;

    /// A Service whose load balancer was ensured on node-a alone.
    async fn ensured() -> (TestEnv, Arc<Memory>, ServiceKey) {
        let mut env = TestEnv::new(TestCloud::default()).await;
        env.add_node(Node::test("node-a")).await;
        let memory: Arc<Memory> = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        ServiceSync::new(env.context(), env.services(), memory.clone(), env.claim(), SharedPolicy::default())
            .reconcile(&key)
            .await
            .unwrap();
        env.service("web").await;
        env.events();
        env.cloud.take_calls();
        (env, memory, key)
    }

    fn node_sync(env: &TestEnv, memory: &Arc<Memory>, retries: &WorkQueue<ServiceKey>) -> NodeSync<TestCloud> {
        NodeSync::new(env.context(), env.services(), memory.clone(), retries.clone(), env.claim(), Arc::default())
    }

    #[tokio::test]
    async fn load_balancers_follow_the_eligible_nodes() {
        let (mut env, memory, _) = ensured().await;
        let retries = WorkQueue::new(Metrics::default().queue("service"));
        env.add_node(Node::test("node-b")).await;
        env.add_node(Node::test("node-c").with_labels(&[(crate::nodes::cache::EXCLUDE_LABEL, "")])).await;
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        assert_eq!(env.cloud.load_balancer("default/web"), Some(vec!["node-a".to_owned(), "node-b".to_owned()]));
        assert_eq!(env.event_reasons(), ["UpdatedLoadBalancer"]);
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        assert_eq!(env.cloud.take_calls(), ["update default/web"], "nothing stale the second time");
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_node_changes_updates_each_load_balancer_once_it_is_over() {
        let (mut env, memory, _) = ensured().await;
        let retries = WorkQueue::new(Metrics::default().queue("service"));
        let changes: Arc<Burst> = Arc::default();
        let sync = NodeSync::new(env.context(), env.services(), memory, retries, env.claim(), changes.clone());
        for name in ["node-b", "node-c", "node-d"] {
            env.add_node(Node::test(name)).await;
            changes.change();
            tokio::time::sleep(QUIET / 2).await;
            let action = sync.reconcile(&All).await.unwrap();
            assert_eq!(action, Action::RequeueAfter(QUIET / 2), "the burst goes on");
        }
        assert_eq!(env.cloud.take_calls(), Vec::<String>::new(), "nothing while the burst goes on");
        tokio::time::sleep(QUIET / 2).await;
        assert_eq!(sync.reconcile(&All).await.unwrap(), Action::AwaitChange);
        assert_eq!(env.cloud.take_calls(), ["update default/web"], "one update for the burst");
        let nodes = ["node-a", "node-b", "node-c", "node-d"].map(str::to_owned).to_vec();
        assert_eq!(env.cloud.load_balancer("default/web"), Some(nodes));
    }

    #[tokio::test]
    async fn a_node_s_provider_id_or_deletion_changes_the_set() {
        let (env, memory, _) = ensured().await;
        let retries = WorkQueue::new(Metrics::default().queue("service"));
        env.cache_node(Node::test("node-a").with_provider_id("test://i-a"));
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        assert_eq!(env.cloud.take_calls(), ["update default/web"], "a new provider ID is a new node set");
        env.cache_node(Node::test("node-a").with_provider_id("test://i-a").deleting());
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        assert_eq!(env.cloud.load_balancer("default/web"), Some(Vec::new()), "a node being deleted backs nothing");
    }

    #[tokio::test]
    async fn no_nodes_left_is_a_warning() {
        let (mut env, memory, _) = ensured().await;
        let retries = WorkQueue::new(Metrics::default().queue("service"));
        env.uncache_node(Node::test("node-a"));
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        assert_eq!(env.cloud.load_balancer("default/web"), Some(Vec::new()));
        assert_eq!(env.event_reasons(), ["UnAvailableLoadBalancer"]);
    }

    #[tokio::test]
    async fn a_failed_update_goes_back_to_the_service_sync() {
        let (mut env, memory, key) = ensured().await;
        let retries = WorkQueue::new(Metrics::default().queue("service"));
        env.cloud.fail(Function::UpdateLoadBalancer, ProviderError::Cloud("throttled".into()));
        env.add_node(Node::test("node-b")).await;
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        let (type_, reason, _, note) = env.events().pop().unwrap();
        assert_eq!((type_, reason.as_str()), (wasm_ccm_kube::events::EventType::Warning, "UpdateLoadBalancerFailed"));
        assert_eq!(
            note,
            "Error updating load balancer with new hosts [node-a node-b] [node names limited, total number of nodes: 2], error: throttled"
        );
        assert_eq!(retries.next().await, Some(key), "queued for a full sync");
    }

    #[tokio::test]
    async fn a_failed_update_of_a_load_balancer_that_is_gone_is_no_failure() {
        let (mut env, memory, _) = ensured().await;
        let retries = WorkQueue::new(Metrics::default().queue("service"));
        env.cloud.fail(Function::UpdateLoadBalancer, ProviderError::Cloud("not found".into()));
        env.add_node(Node::test("node-b")).await;
        // Gone from the cloud behind the controller's back.
        let service = env.service("web").await;
        env.cloud.ensure_load_balancer_deleted(&service).await.unwrap();
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        assert!(retries.is_empty());
        assert_eq!(env.event_reasons(), Vec::<String>::new(), "nothing was updated, as upstream records");
    }

    #[tokio::test]
    async fn a_load_balancer_implemented_elsewhere_records_no_update() {
        let (mut env, memory, _) = ensured().await;
        let retries = WorkQueue::new(Metrics::default().queue("service"));
        env.cloud.fail(Function::UpdateLoadBalancer, ProviderError::ImplementedElsewhere);
        env.add_node(Node::test("node-b")).await;
        node_sync(&env, &memory, &retries).reconcile(&All).await.unwrap();
        assert!(retries.is_empty());
        assert_eq!(env.event_reasons(), Vec::<String>::new());
    }
}
