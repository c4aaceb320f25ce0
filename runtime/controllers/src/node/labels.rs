//! The labels a node gets from its cloud: instance type, zone and region
//! (GA and beta), and the provider's additional labels outside the
//! `kubernetes.io` and `k8s.io` domains.

use std::collections::BTreeMap;

use wasm_ccm_host::types::InstanceMetadata;

/// `node.kubernetes.io/instance-type`.
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// `beta.kubernetes.io/instance-type`.
pub const INSTANCE_TYPE_BETA: &str = "beta.kubernetes.io/instance-type";
/// `topology.kubernetes.io/zone`.
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// `failure-domain.beta.kubernetes.io/zone`.
pub const ZONE_BETA: &str = "failure-domain.beta.kubernetes.io/zone";
/// `topology.kubernetes.io/region`.
pub const REGION: &str = "topology.kubernetes.io/region";
/// `failure-domain.beta.kubernetes.io/region`.
pub const REGION_BETA: &str = "failure-domain.beta.kubernetes.io/region";

/// Whether a label key is in a domain reserved to Kubernetes.
fn reserved(key: &str) -> bool {
    let Some((domain, _)) = key.split_once('/') else {
        return false;
    };
    ["kubernetes.io", "k8s.io"].iter().any(|reserved| domain == *reserved || domain.ends_with(&format!(".{reserved}")))
}

/// The labels `metadata` gives a node.
pub fn cloud_labels(metadata: &InstanceMetadata) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    for (keys, value) in [
        ([INSTANCE_TYPE, INSTANCE_TYPE_BETA], &metadata.instance_type),
        ([ZONE, ZONE_BETA], &metadata.zone),
        ([REGION, REGION_BETA], &metadata.region),
    ] {
        if !value.is_empty() {
            for key in keys {
                labels.insert(key.to_owned(), value.clone());
            }
        }
    }
    for (key, value) in &metadata.additional_labels {
        if reserved(key) {
            tracing::debug!(label = %key, "ignoring a provider label in a reserved domain");
        } else {
            labels.insert(key.clone(), value.clone());
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_from_metadata() {
        let metadata = InstanceMetadata {
            instance_type: "m5.large".into(),
            zone: "eu-west-1a".into(),
            region: "eu-west-1".into(),
            additional_labels: [
                ("example.com/rack", "r1"),
                ("kubernetes.io/hostname", "x"),
                ("node.kubernetes.io/role", "x"),
                ("foo.k8s.io/bar", "x"),
                ("plain", "yes"),
            ]
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect(),
            ..Default::default()
        };
        let labels = cloud_labels(&metadata);
        let expected: BTreeMap<String, String> = [
            (INSTANCE_TYPE, "m5.large"),
            (INSTANCE_TYPE_BETA, "m5.large"),
            (ZONE, "eu-west-1a"),
            (ZONE_BETA, "eu-west-1a"),
            (REGION, "eu-west-1"),
            (REGION_BETA, "eu-west-1"),
            ("example.com/rack", "r1"),
            ("plain", "yes"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        assert_eq!(labels, expected);
    }

    #[test]
    fn empty_values_add_no_labels() {
        assert!(cloud_labels(&InstanceMetadata::default()).is_empty());
    }
}
