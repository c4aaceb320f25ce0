//! What one reconciliation of the routes does, as upstream's
//! `reconcileNodeRoutes` decides it: a cloud route for every pod CIDR of
//! every node, routes in the cluster's networks that are blackholes or match
//! no node deleted, routes whose node addresses changed made again.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Node, NodeAddress};
use wasm_ccm_cloud::Route;

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
    /// Routes to create: missing ones, and those whose node addresses
    /// changed.
    pub create: Vec<WantedRoute>,
    /// Routes to delete: in the cluster's networks and a blackhole, matching
    /// no node's pod CIDR, or about to be made again.
    pub delete: Vec<Route>,
    /// The nodes whose `NetworkUnavailable` condition follows the routes:
    /// those with pod CIDRs, and those a route targets.
    pub conditioned: BTreeSet<String>,
}

fn normalize(cidr: &str) -> Option<IpNet> {
    cidr.parse::<IpNet>().ok().map(|net| net.trunc())
}

/// The node's pod CIDRs.
pub fn pod_cidrs(node: &Node) -> Vec<String> {
    let spec = node.spec.as_ref();
    match (spec.and_then(|spec| spec.pod_cidrs.clone()), spec.and_then(|spec| spec.pod_cidr.clone())) {
        (Some(cidrs), _) if !cidrs.is_empty() => cidrs,
        (_, Some(cidr)) if !cidr.is_empty() => vec![cidr],
        _ => Vec::new(),
    }
}

/// The node's addresses, from its status.
pub fn addresses(node: &Node) -> Vec<NodeAddress> {
    node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default()
}

/// Whether two address lists hold the same addresses, in any order.
fn same_addresses(a: &[NodeAddress], b: &[NodeAddress]) -> bool {
    a.len() == b.len() && a.iter().all(|address| b.contains(address))
}

/// Whether the route is in the cluster's networks: its first or its last
/// address is in one of them, as upstream's `isResponsibleForRoute`.
fn in_cluster(net: &IpNet, cluster_cidrs: &[IpNet]) -> bool {
    let (first, last) = (net.network(), net.broadcast());
    cluster_cidrs.iter().any(|cluster| cluster.contains(&first) || cluster.contains(&last))
}

/// Compares the cloud's routes with the nodes' pod CIDRs.
pub fn plan(routes: &[Route], nodes: &[Arc<Node>], cluster_cidrs: &[IpNet]) -> Plan {
    let mut conditioned: BTreeSet<String> =
        routes.iter().map(|route| route.target_node.clone()).filter(|node| !node.is_empty()).collect();
    let mut create = Vec::new();
    // What each node keeps: (node, CIDR) of routes it still wants as they are.
    let mut kept: HashSet<(String, IpNet)> = HashSet::new();
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        let cidrs = pod_cidrs(node);
        if cidrs.is_empty() {
            continue;
        }
        conditioned.insert(name.clone());
        for cidr in cidrs {
            let Some(net) = normalize(&cidr) else { continue };
            let existing = routes
                .iter()
                .find(|route| route.target_node == name && normalize(&route.destination_cidr) == Some(net));
            // A blackhole is deleted now and made again next period, as
            // upstream: never a delete and a create of one CIDR at once.
            if existing.is_some_and(|route| route.blackhole) {
                continue;
            }
            let up_to_date = existing.is_some_and(|route| {
                !route.enable_node_addresses || same_addresses(&route.target_node_addresses, &addresses(node))
            });
            if up_to_date {
                kept.insert((name.clone(), net));
                continue;
            }
            let route = Route {
                target_node: name.clone(),
                target_node_addresses: addresses(node),
                destination_cidr: cidr,
                ..Default::default()
            };
            create.push(WantedRoute { name_hint: node.metadata.uid.clone().unwrap_or_default(), route });
        }
    }
    let delete = routes
        .iter()
        .filter(|route| {
            let Some(net) = normalize(&route.destination_cidr) else {
                tracing::warn!(route = %route.name, cidr = %route.destination_cidr, "ignoring a route with an unparsable CIDR");
                return false;
            };
            in_cluster(&net, cluster_cidrs) && (route.blackhole || !kept.contains(&(route.target_node.clone(), net)))
        })
        .cloned()
        .collect();
    Plan { create, delete, conditioned }
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
        assert_eq!(created, [("uid-a", "a", "fd00:10:244:1::/64")], "b's blackhole is made again next period");
        let deleted: Vec<&str> = plan.delete.iter().map(|route| route.name.as_str()).collect();
        assert_eq!(deleted, ["r-b-old", "r-hole", "r-b-hole"], "never touches routes outside the cluster CIDR");
        let next = plan_after(&routes, &plan);
        let next = super::plan(&next, &nodes, &cluster);
        let created: Vec<&str> = next.create.iter().map(|wanted| wanted.route.destination_cidr.as_str()).collect();
        assert_eq!(created, ["10.244.2.0/24"], "the period after, b's route is made");
        let conditioned: Vec<&str> = plan.conditioned.iter().map(String::as_str).collect();
        assert_eq!(conditioned, ["a", "b", "gone", "x"], "nodes with pod CIDRs or routes, not c");
    }

    /// The cloud's routes once `plan` is carried out.
    fn plan_after(routes: &[Route], plan: &Plan) -> Vec<Route> {
        let kept = routes.iter().filter(|route| !plan.delete.iter().any(|deleted| deleted.name == route.name));
        kept.cloned().chain(plan.create.iter().map(|wanted| wanted.route.clone())).collect()
    }

    #[test]
    fn nothing_to_do_when_in_step() {
        let cluster = ["10.244.0.0/16".parse().unwrap()];
        let nodes = [node("a", &["10.244.1.0/24"])];
        let routes = [route("r-a", "a", "10.244.1.0/24", false)];
        let plan = plan(&routes, &nodes, &cluster);
        assert!(plan.create.is_empty() && plan.delete.is_empty(), "{plan:?}");
    }

    #[test]
    fn a_route_straddling_the_cluster_network_is_the_cluster_s() {
        let cluster = ["10.244.0.0/16".parse().unwrap()];
        // 10.244.0.0/15's first address is in the cluster network, its last is not.
        let routes = [route("wide", "gone", "10.244.0.0/15", false), route("below", "gone", "10.243.0.0/16", false)];
        let deleted: Vec<String> = plan(&routes, &[], &cluster).delete.into_iter().map(|route| route.name).collect();
        assert_eq!(deleted, ["wide"]);
    }

    #[test]
    fn routes_whose_node_addresses_changed_are_made_again() {
        let cluster = ["10.244.0.0/16".parse().unwrap()];
        let mut moved = Node::clone(&node("a", &["10.244.1.0/24"]));
        moved.status = Some(k8s_openapi::api::core::v1::NodeStatus {
            addresses: Some(vec![NodeAddress { type_: "InternalIP".into(), address: "10.0.0.2".into() }]),
            ..Default::default()
        });
        let mut existing = route("r-a", "a", "10.244.1.0/24", false);
        existing.enable_node_addresses = true;
        existing.target_node_addresses = vec![NodeAddress { type_: "InternalIP".into(), address: "10.0.0.1".into() }];
        let plan = plan(&[existing], &[Arc::new(moved)], &cluster);
        assert_eq!(plan.delete.len(), 1, "the old route goes");
        assert_eq!(plan.create.len(), 1, "and is made again");
        assert_eq!(plan.create[0].route.target_node_addresses[0].address, "10.0.0.2");
    }
}
