//! Node lists converted once for many calls.
//!
//! The controllers pass the same nodes to the load balancer of every
//! Service, so the last few node lists converted to the world's records are
//! kept, keyed by each node's UID and resource version (which changes with
//! any change to the node).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Node;

use crate::bindings::types as wit;
use crate::convert;

/// How many node lists are kept.
const KEPT: usize = 4;

struct Entry {
    /// UID and resource version of each node, in order.
    key: Vec<(String, String)>,
    nodes: Arc<Vec<wit::Node>>,
}

impl Entry {
    fn matches(&self, nodes: &[Node]) -> bool {
        self.key.len() == nodes.len()
            && self.key.iter().zip(nodes).all(|((uid, version), node)| {
                node.metadata.uid.as_ref() == Some(uid) && node.metadata.resource_version.as_ref() == Some(version)
            })
    }
}

/// The node lists converted last.
#[derive(Default)]
pub(crate) struct NodeSets {
    recent: Mutex<VecDeque<Entry>>,
}

impl NodeSets {
    /// `nodes` as the world's records, converted now or earlier.
    pub(crate) fn convert(&self, nodes: &[Node]) -> Arc<Vec<wit::Node>> {
        if let Some(found) = self.find(nodes) {
            return found;
        }
        let converted = Arc::new(convert::nodes(nodes));
        // Nodes without a resource version (not read from the API) are not kept.
        let key: Option<Vec<(String, String)>> = nodes
            .iter()
            .map(|node| Some((node.metadata.uid.clone()?, node.metadata.resource_version.clone()?)))
            .collect();
        if let Some(key) = key {
            let mut recent = self.recent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            recent.push_front(Entry { key, nodes: converted.clone() });
            recent.truncate(KEPT);
        }
        converted
    }

    fn find(&self, nodes: &[Node]) -> Option<Arc<Vec<wit::Node>>> {
        let recent = self.recent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        recent.iter().find(|entry| entry.matches(nodes)).map(|entry| entry.nodes.clone())
    }
}
