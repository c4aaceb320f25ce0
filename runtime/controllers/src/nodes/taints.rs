//! The cloud taints and the node fields the controllers read and write.

use k8s_openapi::api::core::v1::{Node, Taint};

/// Nodes waiting for the cloud node controller carry this taint.
pub const UNINITIALIZED: &str = "node.cloudprovider.kubernetes.io/uninitialized";
/// Nodes whose instance is shut down carry this taint.
pub const SHUTDOWN: &str = "node.cloudprovider.kubernetes.io/shutdown";

/// The node's taints.
pub fn taints(node: &Node) -> &[Taint] {
    node.spec.as_ref().and_then(|spec| spec.taints.as_deref()).unwrap_or_default()
}

/// Whether the node carries a taint with `key`.
pub fn has_taint(node: &Node, key: &str) -> bool {
    taints(node).iter().any(|taint| taint.key == key)
}

/// Whether the node's Ready condition is True.
pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|condition| condition.type_ == "Ready"))
        .is_some_and(|condition| condition.status == "True")
}
