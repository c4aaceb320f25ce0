//! Which node changes make load balancers sync their node sets, as
//! upstream's `shouldSyncUpdatedNode`: a node added or removed, or an
//! update that excludes or includes it again by label, or changes its
//! provider ID. A node being drained (the
//! cluster autoscaler's taint, a deletion timestamp) or turning NotReady
//! stays in the load balancers until one of those happens or its Service
//! syncs: kube-proxy's health checks take it out of traffic meanwhile.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;

use crate::nodes::cache::is_excluded;
use wasm_ccm_kube::informer::Change;

/// What of a node a load balancer's node set depends on between syncs.
#[derive(Debug, PartialEq, Eq)]
struct Relevant {
    excluded: bool,
    provider_id: Option<String>,
}

impl Relevant {
    fn of(node: &Node) -> Self {
        Relevant {
            excluded: is_excluded(node),
            provider_id: node.spec.as_ref().and_then(|spec| spec.provider_id.clone()),
        }
    }
}

/// The nodes seen, by name, with what of each concerns load balancers.
#[derive(Debug, Default)]
pub(crate) struct NodeChanges {
    seen: HashMap<String, Relevant>,
}

impl NodeChanges {
    /// Takes note of `change`, after which `present` tells the nodes the
    /// cache holds; whether load balancers must sync their node sets for it.
    pub(crate) fn concern_load_balancers(&mut self, change: &Change<Node>, present: impl Fn(&str) -> bool) -> bool {
        match change {
            Change::Applied(node) => {
                let (name, relevant) = (node.name_any(), Relevant::of(node));
                let concerns = self.seen.get(&name) != Some(&relevant);
                if concerns {
                    self.seen.insert(name, relevant);
                }
                concerns
            }
            Change::Deleted(node) => {
                self.seen.remove(&node.name_any());
                true
            }
            Change::Resynced => {
                let before = self.seen.len();
                self.seen.retain(|name, _| present(name));
                self.seen.len() != before
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus, Taint};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use std::sync::Arc;

    use super::*;
    use crate::fixtures::NodeFixture;
    use crate::nodes::cache::{AUTOSCALER_TAINT, EXCLUDE_LABEL};

    fn applied(node: &Node) -> Change<Node> {
        Change::Applied(Arc::new(node.clone()))
    }

    #[test]
    fn adds_removals_exclusion_and_provider_ids_concern_load_balancers() {
        let mut changes = NodeChanges::default();
        let node = Node::test("a");
        assert!(changes.concern_load_balancers(&applied(&node), |_| true), "added");
        assert!(!changes.concern_load_balancers(&applied(&node), |_| true), "the same again");

        let mut excluded = node.clone();
        excluded.labels_mut().insert(EXCLUDE_LABEL.into(), String::new());
        assert!(changes.concern_load_balancers(&applied(&excluded), |_| true), "excluded");
        assert!(changes.concern_load_balancers(&applied(&node), |_| true), "included again");

        let mut kept = node.clone();
        kept.labels_mut().insert(EXCLUDE_LABEL.into(), "false".into());
        assert!(!changes.concern_load_balancers(&applied(&kept), |_| true), "labelled false: still included");
        kept.labels_mut().insert(EXCLUDE_LABEL.into(), "true".into());
        assert!(changes.concern_load_balancers(&applied(&kept), |_| true), "relabelled true: excluded");
        assert!(changes.concern_load_balancers(&applied(&node), |_| true), "label removed: included");

        let mut moved = node.clone();
        moved.spec.get_or_insert_with(NodeSpec::default).provider_id = Some("fake://other".into());
        assert!(changes.concern_load_balancers(&applied(&moved), |_| true), "another provider ID");
        assert!(changes.concern_load_balancers(&Change::Deleted(Arc::new(moved)), |_| true), "removed");
    }

    #[test]
    fn draining_and_readiness_do_not() {
        let mut changes = NodeChanges::default();
        let node = Node::test("a");
        changes.concern_load_balancers(&applied(&node), |_| true);
        let mut draining = node.clone();
        draining.spec.get_or_insert_with(NodeSpec::default).taints =
            Some(vec![Taint { key: AUTOSCALER_TAINT.into(), effect: "NoSchedule".into(), ..Taint::default() }]);
        draining.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert!(!changes.concern_load_balancers(&applied(&draining), |_| true), "drained");
        let mut not_ready = node.clone();
        not_ready.status = Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "False".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        assert!(!changes.concern_load_balancers(&applied(&not_ready), |_| true), "NotReady");
    }

    #[test]
    fn a_relist_that_lost_a_node_concerns_load_balancers() {
        let mut changes = NodeChanges::default();
        changes.concern_load_balancers(&applied(&Node::test("a")), |_| true);
        changes.concern_load_balancers(&applied(&Node::test("b")), |_| true);
        assert!(!changes.concern_load_balancers(&Change::Resynced, |_| true), "nothing lost");
        assert!(
            changes.concern_load_balancers(&Change::Resynced, |name| name == "a"),
            "b went while the watch was down"
        );
    }
}
