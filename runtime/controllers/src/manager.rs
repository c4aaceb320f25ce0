//! Runs the enabled controllers on shared caches: one watch for nodes and
//! one for Services, whose changes go to every controller that cares.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::{Node, Service};
use kube::Client;
use kube::api::Api;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use wasm_ccm_host::ProviderHandle;

use crate::config::{ControllerName, Settings};
use crate::events::Events;
use crate::informer::{Change, informer};
use crate::lifecycle::NodeLifecycleController;
use crate::metrics::Metrics;
use crate::node::CloudNodeController;
use crate::nodes::NodeCache;
use crate::route::RouteController;
use crate::service::ServiceController;

/// Why the controllers cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The route controller needs to know the cluster's networks.
    #[error(
        "the route controller needs --cluster-cidr (or disable it with --controllers=*,-route or --configure-cloud-routes=false)"
    )]
    MissingClusterCidr,
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

/// Runs the cloud controllers.
pub struct ControllerManager {
    client: Client,
    provider: ProviderHandle,
    settings: Settings,
    metrics: Metrics,
}

impl ControllerManager {
    /// A manager for the controllers `settings` enables.
    pub fn new(client: Client, provider: ProviderHandle, settings: Settings, metrics: Metrics) -> Self {
        ControllerManager { client, provider, settings, metrics }
    }

    /// The controllers that will run, those enabled whose provider part is
    /// supported, as upstream decides; and those that will not, with why.
    ///
    /// # Errors
    /// When an enabled controller lacks a setting it needs.
    pub fn plan(&self) -> Result<Plan, StartError> {
        let parts = self.provider.info().parts;
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
                    return Err(StartError::MissingClusterCidr);
                }
                Some("no --cluster-cidr")
            } else {
                None
            };
            match skipped {
                Some(reason) => plan.skipped.push((controller, reason)),
                None => plan.active.push(controller),
            }
        }
        Ok(plan)
    }

    /// Runs the controllers until `stop`, then waits for syncs in flight.
    /// `readiness` turns true once the caches are synced.
    ///
    /// # Errors
    /// When the controllers cannot start.
    pub async fn run(self, stop: CancellationToken, readiness: Readiness) -> Result<(), StartError> {
        let Plan { active, skipped } = self.plan()?;
        for (controller, reason) in skipped {
            tracing::info!(controller = %controller, "not starting the controller: {reason}");
        }
        let is_active = |controller| active.contains(&controller);
        let client = &self.client;
        let events = Events::new(client.clone(), "cloud-controller-manager");
        let mut tasks = JoinSet::new();

        let (node_changes, mut node_updates) = mpsc::unbounded_channel::<Change<Node>>();
        let (node_store, node_watch) = informer(Api::<Node>::all(client.clone()), stop.clone(), move |change| {
            let _ = node_changes.send(change);
        });
        tasks.spawn(node_watch);
        let nodes = NodeCache::new(node_store.clone());

        let service_watch = is_active(ControllerName::Service).then(|| {
            let (service_changes, service_updates) = mpsc::unbounded_channel::<Change<Service>>();
            let (store, watch) = informer(Api::<Service>::all(client.clone()), stop.clone(), move |change| {
                let _ = service_changes.send(change);
            });
            tasks.spawn(watch);
            (store, service_updates)
        });
        let service_controller = service_watch.as_ref().map(|(store, _)| {
            ServiceController::new(
                client.clone(),
                self.provider.clone(),
                store.clone(),
                nodes.clone(),
                events.clone(),
                self.metrics.clone(),
                &self.settings,
            )
        });
        let cloud_node = is_active(ControllerName::CloudNode).then(|| {
            CloudNodeController::new(
                client.clone(),
                self.provider.clone(),
                nodes.clone(),
                events.clone(),
                self.metrics.clone(),
                &self.settings,
            )
        });

        {
            let (nodes, services, cloud_node) = (nodes.clone(), service_controller.clone(), cloud_node.clone());
            tasks.spawn(async move {
                while let Some(change) = node_updates.recv().await {
                    nodes.changed();
                    if let Some(services) = &services {
                        services.nodes_changed();
                    }
                    if let Some(cloud_node) = &cloud_node {
                        cloud_node.observe(&change);
                    }
                }
            });
        }
        let service_store = match (service_watch, service_controller.clone()) {
            (Some((store, mut updates)), Some(controller)) => {
                tasks.spawn(async move {
                    while let Some(change) = updates.recv().await {
                        controller.observe(change);
                    }
                });
                Some(store)
            }
            _ => None,
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

        let mut controllers = JoinSet::new();
        if let Some(controller) = service_controller {
            controllers.spawn(controller.run(stop.clone()));
        }
        if let Some(controller) = cloud_node {
            controllers.spawn(controller.run(stop.clone()));
        }
        if is_active(ControllerName::CloudNodeLifecycle) {
            let controller = NodeLifecycleController::new(
                client.clone(),
                self.provider.clone(),
                nodes.clone(),
                events.clone(),
                &self.settings,
            );
            controllers.spawn(controller.run(stop.clone()));
        }
        if is_active(ControllerName::Route) {
            let controller = RouteController::new(
                client.clone(),
                self.provider.clone(),
                nodes.clone(),
                events.clone(),
                &self.settings,
            );
            controllers.spawn(controller.run(stop.clone()));
        }
        for controller in &active {
            self.metrics.controller_running(controller.as_str(), true);
        }
        readiness.set(true);
        while controllers.join_next().await.is_some() {}
        readiness.set(false);
        for controller in &active {
            self.metrics.controller_running(controller.as_str(), false);
        }
        tasks.abort_all();
        Ok(())
    }
}
