//! Nodes for tests.

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

/// Builders of nodes for tests.
pub trait NodeFixture: Sized {
    /// A Ready node named `name` with kubelet's host name address.
    fn test(name: &str) -> Self;
    /// With its Ready condition `ready`.
    fn ready(self, ready: bool) -> Self;
    /// With a `NoSchedule` taint `key`.
    fn with_taint(self, key: &str) -> Self;
    /// With a provider ID.
    fn with_provider_id(self, id: &str) -> Self;
    /// With pod CIDRs.
    fn with_pod_cidrs(self, cidrs: &[&str]) -> Self;
    /// With labels.
    fn with_labels(self, labels: &[(&str, &str)]) -> Self;
    /// With these addresses (`(type, address)`) instead.
    fn with_addresses(self, addresses: &[(&str, &str)]) -> Self;
    /// With a condition `type_` of `status` and `reason`.
    fn with_condition(self, type_: &str, status: &str, reason: &str) -> Self;
    /// Being deleted.
    fn deleting(self) -> Self;
}

impl NodeFixture for Node {
    fn test(name: &str) -> Self {
        Node {
            metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..Default::default()
                }]),
                addresses: Some(vec![NodeAddress { type_: "Hostname".into(), address: name.into() }]),
                ..Default::default()
            }),
        }
    }

    fn ready(mut self, ready: bool) -> Self {
        let status = self.status.get_or_insert_default();
        for condition in status.conditions.get_or_insert_default() {
            if condition.type_ == "Ready" {
                condition.status = if ready { "True" } else { "False" }.to_owned();
            }
        }
        self
    }

    fn with_taint(mut self, key: &str) -> Self {
        let taint = Taint { key: key.into(), effect: "NoSchedule".into(), ..Default::default() };
        self.spec.get_or_insert_default().taints.get_or_insert_default().push(taint);
        self
    }

    fn with_provider_id(mut self, id: &str) -> Self {
        self.spec.get_or_insert_default().provider_id = Some(id.to_owned());
        self
    }

    fn with_pod_cidrs(mut self, cidrs: &[&str]) -> Self {
        let spec = self.spec.get_or_insert_default();
        spec.pod_cidr = cidrs.first().map(|cidr| (*cidr).to_owned());
        spec.pod_cidrs = Some(cidrs.iter().map(|cidr| (*cidr).to_owned()).collect());
        self
    }

    fn with_labels(mut self, labels: &[(&str, &str)]) -> Self {
        let existing = self.metadata.labels.get_or_insert_default();
        existing.extend(labels.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())));
        self
    }

    fn with_addresses(mut self, addresses: &[(&str, &str)]) -> Self {
        let addresses =
            addresses.iter().map(|(type_, address)| NodeAddress { type_: (*type_).into(), address: (*address).into() });
        self.status.get_or_insert_default().addresses = Some(addresses.collect());
        self
    }

    fn with_condition(mut self, type_: &str, status: &str, reason: &str) -> Self {
        let condition = NodeCondition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(reason.into()),
            ..Default::default()
        };
        self.status.get_or_insert_default().conditions.get_or_insert_default().push(condition);
        self
    }

    fn deleting(mut self) -> Self {
        self.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        self
    }
}
