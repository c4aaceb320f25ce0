//! The node cache every controller reads, and the set of nodes that back
//! load balancers, computed once per change of the nodes rather than once
//! per Service.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::reflector::Store;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::NodeSnapshot;
use wasm_ccm_kube::informer::{Subscriptions, informer};

/// Nodes with this label back no load balancer, unless its value is one of
/// Go's false booleans ([`is_excluded`]).
pub const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
/// The cluster autoscaler's taint on a node it is removing.
pub const AUTOSCALER_TAINT: &str = "ToBeDeletedByClusterAutoscaler";

/// Whether the node may back load balancers: not being deleted, not
/// excluded by label, not being removed by the cluster autoscaler. Its
/// readiness does not matter, as upstream since 1.30.
pub fn is_eligible(node: &Node) -> bool {
    let excluded = is_excluded(node);
    let autoscaled_away = node
        .spec
        .as_ref()
        .and_then(|spec| spec.taints.as_ref())
        .is_some_and(|taints| taints.iter().any(|taint| taint.key == AUTOSCALER_TAINT));
    node.metadata.deletion_timestamp.is_none() && !excluded && !autoscaled_away
}

/// Whether the node's [`EXCLUDE_LABEL`] keeps it from load balancers, as
/// upstream reads the label since 1.34: a value Go's `strconv.ParseBool`
/// reads as false (`false`, `0`, `f`, `F`, `FALSE`, `False`) keeps the node
/// behind them; any other value, empty or unreadable, excludes it.
pub fn is_excluded(node: &Node) -> bool {
    let value = node.metadata.labels.as_ref().and_then(|labels| labels.get(EXCLUDE_LABEL));
    value.is_some_and(|value| !matches!(value.as_str(), "false" | "0" | "f" | "F" | "FALSE" | "False"))
}

/// Up to `limit` of `nodes`' names, for events, as upstream lists them:
/// `[a b <3 more>]`.
pub fn names(nodes: &NodeSnapshot, limit: usize) -> String {
    let mut names: Vec<&str> = nodes.names().iter().take(limit).collect();
    let more = nodes.len().saturating_sub(limit);
    let more = (more > 0).then(|| format!("<{more} more>"));
    names.extend(more.as_deref());
    format!("[{}]", names.join(" "))
}

/// The node cache, with the eligible set derived from it.
#[derive(Clone)]
pub struct NodeCache {
    store: Store<Node>,
    shared: Arc<Derived>,
}

/// A value derived from the cache, with the cache version it was of.
type Slot<T> = Mutex<Option<(u64, Arc<T>)>>;

#[derive(Default)]
struct Derived {
    /// Bumped on every change to the cache.
    version: AtomicU64,
    eligible: Slot<NodeSnapshot>,
    pod_networks: Slot<Vec<IpNet>>,
}

impl NodeCache {
    /// Wraps a store kept by hand, as the tests keep theirs.
    #[cfg(test)]
    pub fn new(store: Store<Node>) -> Self {
        NodeCache { store, shared: Arc::default() }
    }

    /// Watches the nodes of `api` until `stop`: the cache, the changes to
    /// subscribe to, and the watch to run.
    pub fn watch(api: Api<Node>, stop: CancellationToken) -> (Self, Subscriptions<Node>, impl Future<Output = ()>) {
        let shared: Arc<Derived> = Arc::default();
        let noted = shared.clone();
        let (store, changes, watch) = informer(api, stop, move |_| {
            noted.version.fetch_add(1, Ordering::Release);
        });
        (NodeCache { store, shared }, changes, watch)
    }

    /// The store.
    pub fn store(&self) -> &Store<Node> {
        &self.store
    }

    /// Every node.
    pub fn all(&self) -> Vec<Arc<Node>> {
        self.store.state()
    }

    /// Notes that the cache changed, for a cache not kept by
    /// [`NodeCache::watch`].
    #[cfg(test)]
    pub fn changed(&self) {
        self.shared.version.fetch_add(1, Ordering::Release);
    }

    /// The nodes that back load balancers now, in name order: one snapshot
    /// per change of the cache, shared by every load balancer.
    pub fn eligible(&self) -> Arc<NodeSnapshot> {
        self.derived(&self.shared.eligible, |nodes| {
            NodeSnapshot::new(nodes.into_iter().filter(|node| is_eligible(node)).collect())
        })
    }

    /// The pod networks of every node (`spec.podCIDRs`), which no load
    /// balancer may answer even where `--cluster-cidr` is not set: one list
    /// per change of the cache.
    pub fn pod_networks(&self) -> Arc<Vec<IpNet>> {
        self.derived(&self.shared.pod_networks, |nodes| {
            let cidrs = nodes.iter().filter_map(|node| node.spec.as_ref()?.pod_cidrs.clone()).flatten();
            let mut networks: Vec<IpNet> =
                cidrs.filter_map(|cidr| cidr.parse::<IpNet>().ok()).map(|net| net.trunc()).collect();
            networks.sort_unstable();
            networks.dedup();
            networks
        })
    }

    /// What `make` derives from the nodes, made once per change of the
    /// cache and kept in `slot`.
    fn derived<T>(&self, slot: &Slot<T>, make: impl FnOnce(Vec<Arc<Node>>) -> T) -> Arc<T> {
        let version = self.shared.version.load(Ordering::Acquire);
        let mut cached = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, value)) = cached.as_ref().filter(|(seen, _)| *seen == version) {
            return value.clone();
        }
        let value = Arc::new(make(self.store.state()));
        *cached = Some((version, value.clone()));
        value
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{NodeSpec, Taint};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;

    #[test]
    fn eligible_nodes() {
        let node = |labels: Option<&str>, taint: Option<&str>| Node {
            metadata: ObjectMeta {
                name: Some("n".into()),
                labels: labels.map(|label| [(label.to_owned(), String::new())].into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: taint
                    .map(|key| vec![Taint { key: key.into(), effect: "NoSchedule".into(), ..Default::default() }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(is_eligible(&node(None, None)));
        assert!(is_eligible(&node(Some("other"), Some("other"))));
        assert!(!is_eligible(&node(Some(EXCLUDE_LABEL), None)));
        assert!(!is_eligible(&node(None, Some(AUTOSCALER_TAINT))));
        let mut gone = node(None, None);
        gone.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert!(!is_eligible(&gone));
    }

    #[test]
    fn the_exclude_label_is_read_as_go_reads_a_boolean() {
        let labelled = |value: &str| Node {
            metadata: ObjectMeta {
                labels: Some([(EXCLUDE_LABEL.to_owned(), value.to_owned())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        for kept in ["false", "0", "f", "F", "FALSE", "False"] {
            assert!(!is_excluded(&labelled(kept)), "{kept:?} keeps the node");
        }
        for excluded in ["true", "1", "t", "TRUE", "", "yes", "no", "fAlse", " false"] {
            assert!(is_excluded(&labelled(excluded)), "{excluded:?} excludes the node");
        }
        assert!(!is_excluded(&Node::default()));
    }
}
