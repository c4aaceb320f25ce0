//! The route controller: every reconciliation period, a cloud route for
//! every pod CIDR of every node, and no route in the cluster CIDR that is a
//! blackhole or matches no node; each node's `NetworkUnavailable` condition
//! says whether its routes exist.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use ipnet::IpNet;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource};
use serde_json::json;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wasm_ccm_host::types::Route;
use wasm_ccm_host::{ProviderError, ProviderHandle};

use crate::events::Events;
use crate::nodes::NodeCache;

/// Cloud operations at once, as upstream.
const MAX_CONCURRENT_OPERATIONS: usize = 200;

/// A route the controller wants, for one pod CIDR of one node.
#[derive(Debug, Clone, PartialEq)]
pub struct WantedRoute {
    /// The node's UID, the route's name hint.
    pub name_hint: String,
    /// The route.
    pub route: Route,
}

/// What one reconciliation does.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Routes to create.
    pub create: Vec<WantedRoute>,
    /// Routes to delete.
    pub delete: Vec<Route>,
}

fn normalize(cidr: &str) -> Option<IpNet> {
    cidr.parse::<IpNet>().ok().map(|net| net.trunc())
}

fn pod_cidrs(node: &Node) -> Vec<String> {
    let spec = node.spec.as_ref();
    match (spec.and_then(|spec| spec.pod_cidrs.clone()), spec.and_then(|spec| spec.pod_cidr.clone())) {
        (Some(cidrs), _) if !cidrs.is_empty() => cidrs,
        (_, Some(cidr)) if !cidr.is_empty() => vec![cidr],
        _ => Vec::new(),
    }
}

/// Compares the cloud's routes with the nodes' pod CIDRs.
pub fn plan(routes: &[Route], nodes: &[Arc<Node>], cluster_cidrs: &[IpNet]) -> Plan {
    let wanted: HashSet<(String, IpNet)> = nodes
        .iter()
        .flat_map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            pod_cidrs(node).into_iter().filter_map(move |cidr| Some((name.clone(), normalize(&cidr)?)))
        })
        .collect();
    let existing: HashSet<(String, IpNet)> = routes
        .iter()
        .filter(|route| !route.blackhole)
        .filter_map(|route| Some((route.target_node.clone(), normalize(&route.destination_cidr)?)))
        .collect();
    let create = nodes
        .iter()
        .flat_map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let uid = node.metadata.uid.clone().unwrap_or_default();
            pod_cidrs(node).into_iter().map(move |cidr| (name.clone(), uid.clone(), cidr))
        })
        .filter(|(name, _, cidr)| normalize(cidr).is_some_and(|net| !existing.contains(&(name.clone(), net))))
        .map(|(name, uid, cidr)| WantedRoute {
            name_hint: uid,
            route: Route { target_node: name, destination_cidr: cidr, ..Default::default() },
        })
        .collect();
    let delete = routes
        .iter()
        .filter(|route| {
            let Some(net) = normalize(&route.destination_cidr) else {
                return false;
            };
            let in_cluster = cluster_cidrs.iter().any(|cluster| cluster.contains(&net));
            in_cluster && (route.blackhole || !wanted.contains(&(route.target_node.clone(), net)))
        })
        .cloned()
        .collect();
    Plan { create, delete }
}

/// The route controller.
pub struct RouteController {
    api: Api<Node>,
    provider: ProviderHandle,
    nodes: NodeCache,
    events: Events,
    cluster_cidrs: Vec<IpNet>,
    period: Duration,
}

impl RouteController {
    /// A controller keeping routes for the nodes of `nodes` in `cluster_cidrs`.
    pub fn new(
        client: Client,
        provider: ProviderHandle,
        nodes: NodeCache,
        events: Events,
        settings: &crate::Settings,
    ) -> Self {
        RouteController {
            api: Api::all(client),
            provider,
            nodes,
            events,
            cluster_cidrs: settings.cluster_cidrs.clone(),
            period: settings.route_reconciliation_period,
        }
    }

    /// Reconciles every period until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(self.period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            if let Err(err) = self.reconcile().await {
                tracing::warn!("cannot reconcile routes: {err}");
            }
        }
    }

    /// One reconciliation.
    ///
    /// # Errors
    /// When the provider cannot list its routes.
    pub async fn reconcile(&self) -> Result<(), ProviderError> {
        let routes = self.provider.list_routes().await?;
        let nodes = self.nodes.all();
        let plan = plan(&routes, &nodes, &self.cluster_cidrs);
        let failed: Mutex<HashSet<String>> = Mutex::default();
        futures::stream::iter(plan.delete)
            .for_each_concurrent(MAX_CONCURRENT_OPERATIONS, |route| {
                let span = tracing::info_span!("delete-route", route = %route.name);
                async move {
                    match self.provider.delete_route(&route).await {
                        Ok(()) => tracing::info!(cidr = %route.destination_cidr, "deleted a route"),
                        Err(err) => tracing::warn!("cannot delete the route: {err}"),
                    }
                }
                .instrument(span)
            })
            .await;
        futures::stream::iter(plan.create)
            .for_each_concurrent(MAX_CONCURRENT_OPERATIONS, |wanted| {
                let failed = &failed;
                let span = tracing::info_span!("create-route", node = %wanted.route.target_node);
                async move {
                    let node = &wanted.route.target_node;
                    match self.provider.create_route(&wanted.name_hint, &wanted.route).await {
                        Ok(()) => {
                            tracing::info!(node = %node, cidr = %wanted.route.destination_cidr, "created a route")
                        }
                        Err(err) => {
                            tracing::warn!(node = %node, "cannot create a route: {err}");
                            if let Some(node) =
                                self.nodes.all().into_iter().find(|n| n.metadata.name.as_ref() == Some(node))
                            {
                                self.events.warning(
                                    node.object_ref(&()),
                                    "FailedToCreateRoute",
                                    format!(
                                        "Could not create route {} for node {}: {err}",
                                        wanted.route.destination_cidr,
                                        node.metadata.name.as_deref().unwrap_or_default()
                                    ),
                                );
                            }
                            failed.lock().await.insert(node.clone());
                        }
                    }
                }
                .instrument(span)
            })
            .await;
        let failed = failed.into_inner();
        for node in nodes.iter().filter(|node| !pod_cidrs(node).is_empty()) {
            let name = node.metadata.name.clone().unwrap_or_default();
            self.set_network_condition(node, !failed.contains(&name)).await;
        }
        Ok(())
    }

    /// Sets `NetworkUnavailable` when it says something else.
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
    use k8s_openapi::api::core::v1::NodeSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn node(name: &str, cidrs: &[&str]) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta { name: Some(name.into()), uid: Some(format!("uid-{name}")), ..Default::default() },
            spec: Some(NodeSpec {
                pod_cidrs: Some(cidrs.iter().map(|cidr| (*cidr).to_owned()).collect()),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn route(name: &str, node: &str, cidr: &str, blackhole: bool) -> Route {
        Route {
            name: name.into(),
            target_node: node.into(),
            destination_cidr: cidr.into(),
            blackhole,
            ..Default::default()
        }
    }

    #[test]
    fn creates_missing_routes_and_deletes_stale_ones_in_the_cluster_cidr() {
        let cluster = ["10.244.0.0/16".parse().unwrap(), "fd00:10:244::/56".parse().unwrap()];
        let nodes =
            [node("a", &["10.244.1.0/24", "fd00:10:244:1::/64"]), node("b", &["10.244.2.0/24"]), node("c", &[])];
        let routes = [
            route("r-a", "a", "10.244.1.0/24", false),
            route("r-b-old", "b", "10.244.9.0/24", false),
            route("r-hole", "gone", "10.244.3.0/24", true),
            route("r-outside", "x", "192.168.0.0/24", false),
            route("r-b-hole", "b", "10.244.2.0/24", true),
        ];
        let plan = plan(&routes, &nodes, &cluster);
        let created: Vec<(&str, &str, &str)> = plan
            .create
            .iter()
            .map(|wanted| {
                (wanted.name_hint.as_str(), wanted.route.target_node.as_str(), wanted.route.destination_cidr.as_str())
            })
            .collect();
        assert_eq!(created, [("uid-a", "a", "fd00:10:244:1::/64"), ("uid-b", "b", "10.244.2.0/24")]);
        let deleted: Vec<&str> = plan.delete.iter().map(|route| route.name.as_str()).collect();
        assert_eq!(deleted, ["r-b-old", "r-hole", "r-b-hole"], "never touches routes outside the cluster CIDR");
    }

    #[test]
    fn nothing_to_do_when_in_step() {
        let cluster = ["10.244.0.0/16".parse().unwrap()];
        let nodes = [node("a", &["10.244.1.0/24"])];
        let routes = [route("r-a", "a", "10.244.1.0/24", false)];
        assert_eq!(plan(&routes, &nodes, &cluster), Plan::default());
    }
}
