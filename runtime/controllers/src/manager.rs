//! Runs the enabled controllers on shared caches: one watch for nodes and
//! one for Services, whose changes go to every controller that cares. A
//! controller that stops on its own stops them all with an error, as
//! upstream's process crashes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::Api;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::client::{ClientError, Clients};
use crate::cloud::Cloud;
use crate::config::{ControllerName, Settings};
use crate::context::Context;
use crate::events::Events;
use crate::informer::{Change, informer};
use crate::lifecycle::NodeLifecycleController;
use crate::metrics::Metrics;
use crate::node::CloudNodeController;
use crate::nodes::NodeCache;
use crate::route::RouteController;
use crate::runner::Stopped;
use crate::service::ServiceController;

/// Why the controllers cannot start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The route controller needs to know the cluster's networks.
    #[error(
        "the route controller needs --cluster-cidr (or disable it with --controllers=*,-route or --configure-cloud-routes=false)"
    )]
    MissingClusterCidr,
    /// The cluster's networks are not one network or a dual-stack pair.
    #[error("invalid --cluster-cidr: {0}")]
    InvalidClusterCidrs(&'static str),
    /// A controller stopped before it was asked to.
    #[error(transparent)]
    Stopped(#[from] Stopped),
    /// A controller's client could not be made.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Whether the caches are synced and the controllers running; clones share
/// it.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Whether the controllers are running on synced caches.
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Release);
    }
}

/// Which controllers run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Those that run.
    pub active: Vec<ControllerName>,
    /// Those enabled that do not run, with why.
    pub skipped: Vec<(ControllerName, &'static str)>,
}

/// Checks `--cluster-cidr` as upstream: one network, or one of each IP
/// family.
fn check_cluster_cidrs(cidrs: &[IpNet]) -> Result<(), ManagerError> {
    match cidrs {
        [] | [_] => Ok(()),
        [first, second] if matches!(first, IpNet::V4(_)) != matches!(second, IpNet::V4(_)) => Ok(()),
        [_, _] => Err(ManagerError::InvalidClusterCidrs("two networks must be one IPv4 and one IPv6 (dual-stack)")),
        _ => Err(ManagerError::InvalidClusterCidrs("at most two networks, one per IP family")),
    }
}

/// Runs the cloud controllers.
pub struct ControllerManager<C: Cloud> {
    clients: Clients,
    cloud: C,
    settings: Arc<Settings>,
    metrics: Metrics,
}

impl<C: Cloud> ControllerManager<C> {
    /// A manager for the controllers `settings` enables, calling `cloud`,
    /// each controller acting with its client of `clients`.
    pub fn new(clients: impl Into<Clients>, cloud: C, settings: Settings, metrics: Metrics) -> Self {
        ControllerManager { clients: clients.into(), cloud, settings: Arc::new(settings), metrics }
    }

    /// The controllers that will run, those enabled whose provider part is
    /// supported, as upstream decides; and those that will not, with why.
    ///
    /// # Errors
    /// When an enabled controller lacks a setting it needs, or has a bad
    /// one.
    pub fn plan(&self) -> Result<Plan, ManagerError> {
        let parts = self.cloud.parts();
        let mut plan = Plan::default();
        for controller in self.settings.controllers.iter().copied() {
            let supported = match controller {
                ControllerName::Service => parts.load_balancer,
                ControllerName::CloudNode | ControllerName::CloudNodeLifecycle => parts.instances_v2 || parts.instances,
                ControllerName::Route => parts.routes,
            };
            let skipped = if !supported {
                Some("the provider does not support it")
            } else if controller == ControllerName::Route && !self.settings.configure_cloud_routes {
                Some("--configure-cloud-routes=false")
            } else if controller == ControllerName::Route && self.settings.cluster_cidrs.is_empty() {
                if self.settings.route_explicitly_enabled {
                    return Err(ManagerError::MissingClusterCidr);
                }
                Some("no --cluster-cidr")
            } else {
                None
            };
            if skipped.is_none() && controller == ControllerName::Route {
                check_cluster_cidrs(&self.settings.cluster_cidrs)?;
            }
            match skipped {
                Some(reason) => plan.skipped.push((controller, reason)),
                None => plan.active.push(controller),
            }
        }
        Ok(plan)
    }

    /// A controller's context: its own client (until `stop`), its events
    /// reported under upstream's component name.
    async fn context(
        &self,
        nodes: &NodeCache,
        controller: ControllerName,
        stop: &CancellationToken,
    ) -> Result<Context<C>, ManagerError> {
        let client = self.clients.controller(controller.upstream_name(), stop.clone()).await?;
        Ok(Context {
            events: Events::new(client.clone(), controller.event_component()),
            client,
            cloud: self.cloud.clone(),
            nodes: nodes.clone(),
            metrics: self.metrics.clone(),
            settings: self.settings.clone(),
        })
    }

    /// Runs the controllers until `stop`, then waits for reconciles in
    /// flight. `readiness` is true while the controllers run on synced
    /// caches.
    ///
    /// # Errors
    /// When the controllers cannot start, or one stopped on its own.
    pub async fn run(self, stop: CancellationToken, readiness: Readiness) -> Result<(), ManagerError> {
        let Plan { active, skipped } = self.plan()?;
        for (controller, reason) in skipped {
            tracing::info!(controller = %controller, "not starting the controller: {reason}");
        }
        let is_active = |controller| active.contains(&controller);
        let client = &self.clients.root();
        let mut tasks = JoinSet::new();

        let (node_changes, mut node_updates) = mpsc::unbounded_channel::<Change<Node>>();
        let (node_store, node_watch) = informer(Api::<Node>::all(client.clone()), stop.clone(), move |change| {
            let _ = node_changes.send(change);
        });
        tasks.spawn(node_watch);
        let nodes = NodeCache::new(node_store.clone());

        let services = if is_active(ControllerName::Service) {
            let (service_changes, service_updates) = mpsc::unbounded_channel::<Change<Service>>();
            let (store, watch) = informer(Api::<Service>::all(client.clone()), stop.clone(), move |change| {
                let _ = service_changes.send(change);
            });
            tasks.spawn(watch);
            let context = self.context(&nodes, ControllerName::Service, &stop).await?;
            Some((store.clone(), service_updates, ServiceController::new(context, store)))
        } else {
            None
        };
        let cloud_node = match is_active(ControllerName::CloudNode) {
            true => Some(CloudNodeController::new(self.context(&nodes, ControllerName::CloudNode, &stop).await?)),
            false => None,
        };

        {
            let nodes = nodes.clone();
            let service_triggers = services.as_ref().map(|(_, _, controller)| controller.triggers());
            let node_triggers = cloud_node.as_ref().map(CloudNodeController::triggers);
            tasks.spawn(async move {
                while let Some(change) = node_updates.recv().await {
                    nodes.changed();
                    if let Some(triggers) = &service_triggers {
                        triggers.nodes_changed();
                    }
                    if let Some(triggers) = &node_triggers {
                        triggers.observe(&change);
                    }
                }
            });
        }
        let (service_store, service_controller) = match services {
            Some((store, mut updates, controller)) => {
                let triggers = controller.triggers();
                tasks.spawn(async move {
                    while let Some(change) = updates.recv().await {
                        triggers.observe(change);
                    }
                });
                (Some(store), Some(controller))
            }
            None => (None, None),
        };

        let synced = async {
            node_store.wait_until_ready().await?;
            if let Some(store) = &service_store {
                store.wait_until_ready().await?;
            }
            Ok::<_, kube::runtime::reflector::store::WriterDropped>(())
        };
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            synced = synced => if synced.is_err() { return Ok(()) },
        }
        tracing::info!(controllers = ?active.iter().map(ToString::to_string).collect::<Vec<_>>(), "caches synced; starting controllers");

        // Stopped by `stop`, or by one of them ending on its own.
        let working = stop.child_token();
        let mut controllers = JoinSet::new();
        if let Some(controller) = service_controller {
            controllers.spawn(controller.run(working.clone()));
        }
        if let Some(controller) = cloud_node {
            controllers.spawn(controller.run(working.clone()));
        }
        if is_active(ControllerName::CloudNodeLifecycle) {
            let context = self.context(&nodes, ControllerName::CloudNodeLifecycle, &stop).await?;
            controllers.spawn(NodeLifecycleController::new(context).run(working.clone()));
        }
        if is_active(ControllerName::Route) {
            let context = self.context(&nodes, ControllerName::Route, &stop).await?;
            controllers.spawn(RouteController::new(context).run(working.clone()));
        }
        for controller in &active {
            self.metrics.controller_running(controller.as_str(), true);
        }
        readiness.set(true);
        let mut outcome = Ok(());
        while let Some(ended) = controllers.join_next().await {
            let stopped = match ended {
                Ok(Ok(())) if working.is_cancelled() => continue,
                Ok(Ok(())) => Stopped { controller: "a", reason: "it ended".to_owned() },
                Ok(Err(stopped)) => stopped,
                Err(join) => Stopped { controller: "a", reason: format!("its task failed: {join}") },
            };
            if outcome.is_ok() && !stop.is_cancelled() {
                tracing::error!("{stopped}; stopping every controller");
                readiness.set(false);
                working.cancel();
                outcome = Err(stopped);
            }
        }
        readiness.set(false);
        for controller in &active {
            self.metrics.controller_running(controller.as_str(), false);
        }
        tasks.abort_all();
        outcome.map_err(ManagerError::from)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kube::api::PostParams;
    use wasm_ccm_apiserver::ApiServer;
    use wasm_ccm_host::ProviderError;

    use super::*;
    use crate::fixtures::{ServiceFixture, TestCloud};

    #[tokio::test]
    async fn a_controller_that_panics_stops_them_all_with_an_error() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let services = Api::<Service>::namespaced(client.clone(), "default");
        services.create(&PostParams::default(), &Service::test("web")).await.unwrap();
        let cloud = TestCloud::default();
        cloud.fail("ensure", ProviderError::Panic { message: "a bug".into() });
        let manager = ControllerManager::new(client, cloud, Settings::default(), Metrics::default());
        let readiness = Readiness::default();
        let running = manager.run(CancellationToken::new(), readiness.clone());
        let err = tokio::time::timeout(Duration::from_secs(20), running).await.expect("it stops").unwrap_err();
        assert_eq!(err.to_string(), "the service controller stopped: a worker panicked: a bug");
        assert!(!readiness.is_ready());
    }

    #[test]
    fn cluster_cidrs_are_one_network_or_a_dual_stack_pair() {
        let parse = |cidrs: &[&str]| -> Vec<IpNet> { cidrs.iter().map(|cidr| cidr.parse().unwrap()).collect() };
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16"])).is_ok());
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16", "fd00::/56"])).is_ok());
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16", "10.245.0.0/16"])).is_err());
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16", "fd00::/56", "fd01::/56"])).is_err());
    }
}
