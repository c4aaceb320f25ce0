//! The node cache every controller reads, and the set of nodes that back
//! load balancers, computed once per change of the nodes rather than once
//! per Service.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::Store;
use wasm_ccm_cloud::NodeSnapshot;

use crate::service::rules::is_eligible;

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

#[derive(Default)]
struct Derived {
    /// Bumped on every change to the cache.
    version: AtomicU64,
    eligible: Mutex<Option<(u64, Arc<NodeSnapshot>)>>,
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

    /// The nodes that back load balancers now, in name order: one snapshot
    /// per change of the cache, shared by every load balancer.
    pub fn eligible(&self) -> Arc<NodeSnapshot> {
        let version = self.shared.version.load(Ordering::Acquire);
        let mut cached = self.shared.eligible.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, set)) = cached.as_ref().filter(|(seen, _)| *seen == version) {
            return set.clone();
        }
        let nodes = self.store.state().into_iter().filter(|node| is_eligible(node)).collect();
        let set = Arc::new(NodeSnapshot::new(nodes));
        *cached = Some((version, set.clone()));
        set
    }
}
