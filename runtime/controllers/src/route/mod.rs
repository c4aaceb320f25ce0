//! The route controller, as upstream's `reconcileNodeRoutes`: every
//! reconciliation period, a cloud route for every pod CIDR of every node,
//! routes in the cluster's networks that are blackholes or match no node
//! deleted, routes whose node addresses changed made again, and each node's
//! `NetworkUnavailable` condition saying whether its routes exist. With
//! upstream's alpha gate `CloudControllerManagerWatchBasedRoutesReconciliation`
//! a node added or removed, or changing its pod CIDRs or addresses, also
//! starts a reconcile, at most one per [`NODE_CHANGE_INTERVAL`].

mod plan;

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, NodeAddress};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wasm_ccm_cloud::{Cloud, Route};
use wasm_ccm_kube::informer::Change;

use self::plan::{WantedRoute, addresses, plan, pod_cidrs};
use crate::framework::caches::Watcher;
use crate::framework::config::ControllerName;
use crate::framework::context::Context;
use crate::framework::driver::Controller;
use crate::framework::error::Error;
use crate::framework::runner::{Action, Reconcile, Retry, Runner, Stopped};
use crate::framework::workqueue::WorkQueue;

/// Cloud operations at once, as upstream.
const MAX_CONCURRENT_OPERATIONS: usize = 200;

/// The least time between two reconciles started by node changes: upstream's
/// `minRouteResyncInterval`.
pub const NODE_CHANGE_INTERVAL: Duration = Duration::from_secs(10);

/// What starts a route reconcile: upstream's work queue keys, and the
/// `trigger` of `route_controller_route_sync_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteTrigger {
    /// The reconciliation period.
    Periodic,
    /// A node change that may concern routes (watch-based reconciliation).
    NodeChange,
}

impl Display for RouteTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RouteTrigger::Periodic => "periodic",
            RouteTrigger::NodeChange => "node_change",
        })
    }
}

/// The route controller.
pub struct RouteController<C: Cloud> {
    runner: Runner<ReconcileRoutes<C>>,
    watcher: Option<Arc<NodeChanges>>,
}

impl<C: Cloud> RouteController<C> {
    /// A controller keeping routes for the nodes of `ctx`; must be made
    /// inside a tokio runtime.
    pub fn new(ctx: Context<C>) -> Self {
        let runner = Runner::new(ReconcileRoutes::new(ctx.clone()), 1, ctx.metrics.clone());
        let watcher = ctx.settings.watch_based_routes.then(|| Arc::new(NodeChanges::new(runner.queue())));
        RouteController { runner, watcher }
    }
}

impl<C: Cloud> Controller for RouteController<C> {
    const NAME: ControllerName = ControllerName::Route;

    fn watcher(&self) -> Option<Arc<dyn Watcher>> {
        self.watcher.clone().map(|watcher| watcher as Arc<dyn Watcher>)
    }

    /// Reconciles now, then a period after each reconcile ends.
    async fn run(self, stop: CancellationToken) -> Result<(), Stopped> {
        self.runner.queue().add(RouteTrigger::Periodic);
        self.runner.run(stop).await
    }
}

/// What of a node its routes depend on.
type RouteInputs = (Vec<String>, Vec<NodeAddress>);

/// Queues a reconcile for node changes that may concern routes, as
/// upstream's watch-based reconciliation: a node added or removed, or its
/// pod CIDRs or addresses changed.
struct NodeChanges {
    queue: WorkQueue<RouteTrigger>,
    seen: Mutex<HashMap<String, RouteInputs>>,
    /// When the last reconcile for node changes was queued to start.
    last: Mutex<Option<Instant>>,
}

impl NodeChanges {
    fn new(queue: WorkQueue<RouteTrigger>) -> Self {
        NodeChanges { queue, seen: Mutex::default(), last: Mutex::default() }
    }

    /// Queues a reconcile, at most one per [`NODE_CHANGE_INTERVAL`].
    fn trigger(&self) {
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        let at = last.map_or(now, |last| (last + NODE_CHANGE_INTERVAL).max(now));
        if last.is_some_and(|last| last > now) {
            return;
        }
        *last = Some(at);
        self.queue.add_after(RouteTrigger::NodeChange, at - now);
    }
}

impl Watcher for NodeChanges {
    fn node(&self, change: &Change<Node>) {
        let concerns = match change {
            Change::Applied(node) => {
                let inputs = (pod_cidrs(node), addresses(node));
                let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                seen.insert(node.metadata.name.clone().unwrap_or_default(), inputs.clone()) != Some(inputs)
            }
            Change::Deleted(node) => {
                let name = node.metadata.name.as_deref().unwrap_or_default();
                self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(name);
                true
            }
            Change::Resynced => false,
        };
        if concerns {
            self.trigger();
        }
    }
}

/// The routes a reconcile could not create.
#[derive(Default)]
struct FailedRoutes {
    /// How many.
    routes: usize,
    /// The nodes they were for.
    nodes: HashSet<String>,
}

/// One reconciliation of every route.
struct ReconcileRoutes<C> {
    ctx: Context<C>,
    api: Api<Node>,
}

impl<C: Cloud> Reconcile for ReconcileRoutes<C> {
    type Key = RouteTrigger;

    const NAME: &'static str = "route";
    const QUEUE: &'static str = "route";
    fn retry(&self, trigger: &RouteTrigger) -> Retry {
        match trigger {
            RouteTrigger::Periodic => Retry::After(self.ctx.settings.route_reconciliation_period),
            RouteTrigger::NodeChange => Retry::After(NODE_CHANGE_INTERVAL),
        }
    }

    /// Upstream's `reconcileNodeRoutes`; a periodic one again a period
    /// after it ends.
    async fn reconcile(&self, trigger: &RouteTrigger) -> Result<Action, Error> {
        let routes = self.ctx.cloud.list_routes().await.map_err(Error::cloud("error listing routes"));
        let routes = routes.inspect_err(|_| self.ctx.metrics.route_sync(&trigger.to_string(), true, false))?;
        let nodes = self.ctx.nodes.all();
        let plan = plan(&routes, &nodes, &self.ctx.settings.cluster_cidrs);
        let creating = plan.create.len();
        let deleted = self.delete(plan.delete).await;
        let failed = self.create(plan.create, &nodes).await;
        self.ctx.metrics.route_sync(&trigger.to_string(), false, deleted > 0 || failed.routes < creating);
        let failed = failed.nodes;
        let by_name: HashMap<&str, &Arc<Node>> =
            nodes.iter().map(|node| (node.metadata.name.as_deref().unwrap_or_default(), node)).collect();
        let conditioned: Vec<(&Arc<Node>, bool)> = plan
            .conditioned
            .iter()
            .filter_map(|name| {
                let node = by_name.get(name.as_str())?;
                Some((*node, !pod_cidrs(node).is_empty() && !failed.contains(name)))
            })
            .collect();
        futures::stream::iter(conditioned)
            .for_each_concurrent(MAX_CONCURRENT_OPERATIONS, |(node, created)| self.set_network_condition(node, created))
            .await;
        Ok(match trigger {
            RouteTrigger::Periodic => Action::RequeueAfter(self.ctx.settings.route_reconciliation_period),
            RouteTrigger::NodeChange => Action::AwaitChange,
        })
    }
}

impl<C: Cloud> ReconcileRoutes<C> {
    fn new(ctx: Context<C>) -> Self {
        let api = Api::all(ctx.client.clone());
        ReconcileRoutes { ctx, api }
    }

    /// Deletes the routes; returns how many were deleted.
    async fn delete(&self, routes: Vec<Route>) -> usize {
        let deleted = AtomicUsize::new(0);
        futures::stream::iter(routes)
            .for_each_concurrent(MAX_CONCURRENT_OPERATIONS, |route| {
                let span = tracing::info_span!("delete-route", route = %route.name);
                let deleted = &deleted;
                async move {
                    match self.ctx.cloud.delete_route(&route).await {
                        Ok(()) => {
                            deleted.fetch_add(1, Ordering::Relaxed);
                            tracing::info!(cidr = %route.destination_cidr, "deleted a route");
                        }
                        Err(err) => tracing::warn!(cidr = %route.destination_cidr, "could not delete the route: {err}"),
                    }
                }
                .instrument(span)
            })
            .await;
        deleted.into_inner()
    }

    /// Creates the routes; says which failed.
    async fn create(&self, routes: Vec<WantedRoute>, nodes: &[Arc<Node>]) -> FailedRoutes {
        let failed = Mutex::new(FailedRoutes::default());
        futures::stream::iter(routes)
            .for_each_concurrent(MAX_CONCURRENT_OPERATIONS, |wanted| {
                let failed = &failed;
                let node = wanted.route.target_node.clone();
                let span = tracing::info_span!("create-route", node = %node);
                async move {
                    let started = Instant::now();
                    let WantedRoute { name_hint, route } = wanted;
                    let Err(err) = self.ctx.cloud.create_route(&name_hint, &route).await else {
                        tracing::info!(cidr = %route.destination_cidr, "created a route");
                        return;
                    };
                    let note = format!(
                        "Could not create route {name_hint} {} for node {node} after {:?}: {err}",
                        route.destination_cidr,
                        started.elapsed()
                    );
                    tracing::warn!("{note}");
                    if let Some(found) = nodes.iter().find(|n| n.metadata.name.as_deref() == Some(node.as_str())) {
                        self.ctx.events.warning(found.object_ref(&()), "FailedToCreateRoute", note);
                    }
                    let mut failed = failed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    failed.routes += 1;
                    failed.nodes.insert(node);
                }
                .instrument(span)
            })
            .await;
        failed.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sets `NetworkUnavailable` unless it already says so with the route
    /// controller's own reason: a condition a CNI wrote (`CalicoIsUp`) is
    /// written over, as upstream since 1.36.
    async fn set_network_condition(&self, node: &Node, routes_created: bool) {
        let (status, reason, message) = if routes_created {
            ("False", "RouteCreated", "RouteController created a route")
        } else {
            ("True", "NoRouteCreated", "RouteController failed to create a route")
        };
        let current = node
            .status
            .as_ref()
            .and_then(|status| status.conditions.as_ref())
            .and_then(|conditions| conditions.iter().find(|condition| condition.type_ == "NetworkUnavailable"));
        if current.is_some_and(|current| current.status == status && current.reason.as_deref() == Some(reason)) {
            return;
        }
        let now = Timestamp::now().to_string();
        let patch = json!({"status": {"conditions": [{
            "type": "NetworkUnavailable",
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
            "lastHeartbeatTime": now,
        }]}});
        let name = node.metadata.name.as_deref().unwrap_or_default();
        if let Err(err) = self.api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch)).await {
            tracing::warn!(node = name, "cannot set NetworkUnavailable: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use wasm_ccm_cloud::{Function, ProviderError};

    use super::*;
    use crate::fixtures::{NodeFixture, TestCloud, TestEnv};
    use crate::framework::metrics::Metrics;

    fn condition(node: &Node) -> Option<(String, String)> {
        let conditions = node.status.as_ref()?.conditions.as_ref()?;
        let condition = conditions.iter().find(|condition| condition.type_ == "NetworkUnavailable")?;
        Some((condition.status.clone(), condition.reason.clone()?))
    }

    async fn reconcile(env: &TestEnv) {
        ReconcileRoutes::new(env.context()).reconcile(&RouteTrigger::Periodic).await.unwrap();
    }

    async fn env() -> TestEnv {
        let mut env = TestEnv::new(TestCloud::default()).await;
        env.settings.cluster_cidrs = vec!["10.244.0.0/16".parse().unwrap()];
        env
    }

    #[tokio::test(start_paused = true)]
    async fn node_changes_that_concern_routes_start_a_reconcile_at_most_every_interval() {
        let queue = WorkQueue::new(Metrics::default().queue("route"));
        let changes = NodeChanges::new(queue.clone());
        let applied = |node: &Node| Change::Applied(Arc::new(node.clone()));
        let quiet = async |queue: &WorkQueue<RouteTrigger>| {
            tokio::time::timeout(NODE_CHANGE_INTERVAL * 6, queue.next()).await.is_err()
        };
        let node = Node::test("a").with_pod_cidrs(&["10.244.1.0/24"]);
        changes.node(&applied(&node));
        assert_eq!(queue.next().await, Some(RouteTrigger::NodeChange), "a node added");
        queue.done(&RouteTrigger::NodeChange);
        changes.node(&applied(&node.clone().with_labels(&[("rack", "r1")])));
        assert!(quiet(&queue).await, "a change routes do not depend on");

        let started = Instant::now();
        changes.node(&applied(&node.clone().with_pod_cidrs(&["10.244.2.0/24"])));
        assert_eq!(queue.next().await, Some(RouteTrigger::NodeChange), "new pod CIDRs");
        assert!(started.elapsed().is_zero(), "the interval since the last had passed");
        changes.node(&Change::Deleted(Arc::new(node.clone())));
        changes.node(&applied(&node));
        queue.done(&RouteTrigger::NodeChange);
        assert_eq!(queue.next().await, Some(RouteTrigger::NodeChange), "the node gone and back");
        assert_eq!(started.elapsed(), NODE_CHANGE_INTERVAL, "an interval after the last, for both changes");
        queue.done(&RouteTrigger::NodeChange);
        assert!(quiet(&queue).await);
    }

    #[tokio::test]
    async fn each_reconcile_is_counted_by_its_outcome() {
        let mut env = env().await;
        env.add_node(Node::test("a").with_pod_cidrs(&["10.244.1.0/24"])).await;
        let ctx = env.context();
        let routes = ReconcileRoutes::new(ctx.clone());
        routes.reconcile(&RouteTrigger::Periodic).await.unwrap();
        routes.reconcile(&RouteTrigger::Periodic).await.unwrap();
        env.cloud.fail(Function::ListRoutes, ProviderError::Cloud("throttled".into()));
        routes.reconcile(&RouteTrigger::Periodic).await.unwrap_err();
        let text = ctx.metrics.text();
        for outcome in ["changed", "noop", "error"] {
            let line = format!(
                "route_controller_route_sync_total{{outcome=\"{outcome}\",trigger=\"periodic\",provider=\"\"}} 1\n"
            );
            assert!(text.contains(&line), "{line} in {text}");
        }
    }

    #[tokio::test]
    async fn routes_are_made_and_the_nodes_told() {
        let mut env = env().await;
        env.add_node(Node::test("a").with_pod_cidrs(&["10.244.1.0/24"])).await;
        env.add_node(Node::test("b")).await;
        reconcile(&env).await;
        let routes: Vec<(String, String)> =
            env.cloud.routes().into_iter().map(|route| (route.target_node, route.destination_cidr)).collect();
        assert_eq!(routes, [("a".to_owned(), "10.244.1.0/24".to_owned())]);
        assert_eq!(condition(&env.node("a").await), Some(("False".to_owned(), "RouteCreated".to_owned())));
        assert_eq!(condition(&env.node("b").await), None, "no pod CIDR and no route: left alone");
    }

    #[tokio::test]
    async fn a_cni_s_own_condition_is_written_over() {
        let mut env = env().await;
        let node = Node::test("a").with_pod_cidrs(&["10.244.1.0/24"]).with_condition(
            "NetworkUnavailable",
            "False",
            "CalicoIsUp",
        );
        env.add_node(node).await;
        reconcile(&env).await;
        assert_eq!(condition(&env.node("a").await), Some(("False".to_owned(), "RouteCreated".to_owned())));
    }

    #[tokio::test]
    async fn a_route_that_cannot_be_made_leaves_the_network_unavailable() {
        let mut env = env().await;
        env.cloud.fail(Function::CreateRoute, ProviderError::Cloud("route table full".into()));
        env.add_node(Node::test("a").with_pod_cidrs(&["10.244.1.0/24"])).await;
        reconcile(&env).await;
        assert_eq!(condition(&env.node("a").await), Some(("True".to_owned(), "NoRouteCreated".to_owned())));
        let (_, reason, name, note) = env.events().pop().unwrap();
        assert_eq!((reason.as_str(), name.as_str()), ("FailedToCreateRoute", "a"));
        assert!(note.contains("route table full"), "{note}");
    }

    #[tokio::test]
    async fn a_node_without_pod_cidrs_but_a_route_loses_it_and_its_network() {
        let mut env = env().await;
        let old = Route {
            name: "old".into(),
            target_node: "a".into(),
            destination_cidr: "10.244.1.0/24".into(),
            ..Default::default()
        };
        env.cloud.add_route(old);
        env.add_node(Node::test("a")).await;
        reconcile(&env).await;
        assert!(env.cloud.routes().is_empty());
        assert_eq!(condition(&env.node("a").await), Some(("True".to_owned(), "NoRouteCreated".to_owned())));
    }
}
