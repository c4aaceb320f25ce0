//! The node cache every controller reads, and the set of nodes that back
//! load balancers, computed once per change of the nodes rather than once
//! per Service.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::Store;

use crate::service::rules::is_eligible;

/// What identifies a node set for a load balancer: each node's name and
/// provider ID, in name order.
pub type Fingerprint = Vec<(String, Option<String>)>;

/// The nodes that back load balancers.
#[derive(Debug, Default)]
pub struct NodeSet {
    /// The nodes, by name.
    pub nodes: Vec<Node>,
    /// Their names and provider IDs.
    pub fingerprint: Fingerprint,
}

impl NodeSet {
    /// Up to `limit` node names, for events, as upstream lists them:
    /// `[a b <3 more>]`.
    pub fn names(&self, limit: usize) -> String {
        let mut names: Vec<&str> = self.fingerprint.iter().take(limit).map(|(name, _)| name.as_str()).collect();
        let more = self.fingerprint.len().saturating_sub(limit);
        let more = (more > 0).then(|| format!("<{more} more>"));
        names.extend(more.as_deref());
        format!("[{}]", names.join(" "))
    }
}

/// The node cache, with the eligible set derived from it.
#[derive(Clone)]
pub struct NodeCache {
    store: Store<Node>,
    shared: Arc<Derived>,
}

#[derive(Default)]
struct Derived {
    /// Bumped on every change to the cache.
    version: AtomicU64,
    eligible: Mutex<Option<(u64, Arc<NodeSet>)>>,
}

impl NodeCache {
    /// Wraps the informer's store.
    pub fn new(store: Store<Node>) -> Self {
        NodeCache { store, shared: Arc::default() }
    }

    /// The store.
    pub fn store(&self) -> &Store<Node> {
        &self.store
    }

    /// Every node.
    pub fn all(&self) -> Vec<Arc<Node>> {
        self.store.state()
    }

    /// Notes that the cache changed.
    pub fn changed(&self) {
        self.shared.version.fetch_add(1, Ordering::Release);
    }

    /// The nodes that back load balancers now.
    pub fn eligible(&self) -> Arc<NodeSet> {
        let version = self.shared.version.load(Ordering::Acquire);
        let mut cached = self.shared.eligible.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, set)) = cached.as_ref().filter(|(seen, _)| *seen == version) {
            return set.clone();
        }
        let mut nodes: Vec<Node> =
            self.store.state().iter().filter(|node| is_eligible(node)).map(|node| Node::clone(node)).collect();
        nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let fingerprint = nodes
            .iter()
            .map(|node| {
                let provider_id = node.spec.as_ref().and_then(|spec| spec.provider_id.clone());
                (node.metadata.name.clone().unwrap_or_default(), provider_id)
            })
            .collect();
        let set = Arc::new(NodeSet { nodes, fingerprint });
        *cached = Some((version, set.clone()));
        set
    }
}
