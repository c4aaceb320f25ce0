//! The labels a node gets from its cloud: instance type, zone and region
//! (GA and beta), and the provider's additional labels outside the
//! `kubernetes.io` and `k8s.io` domains; and the GA labels a beta one
//! disagrees with, as upstream reconciles them.

use std::collections::BTreeMap;

use wasm_ccm_cloud::InstanceMetadata;

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

/// The labels `metadata` gives a node that has `existing` labels: an
/// additional label the node already has keeps its value, as upstream.
pub fn cloud_labels(
    metadata: &InstanceMetadata,
    existing: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
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
            tracing::warn!(label = %key, "discarding a provider label in a reserved domain");
        } else if existing.is_some_and(|existing| existing.contains_key(key)) {
            tracing::debug!(label = %key, "keeping a label the node already has");
        } else {
            labels.insert(key.clone(), value.clone());
        }
    }
    labels
}

/// The GA labels to set on a node from its beta ones where they are
/// missing or differ, as upstream's `reconcileNodeLabels` (the beta label
/// wins; a GA label without a beta one is left alone).
pub fn labels_to_reconcile(existing: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    let Some(existing) = existing else {
        return BTreeMap::new();
    };
    [(ZONE_BETA, ZONE), (REGION_BETA, REGION), (INSTANCE_TYPE_BETA, INSTANCE_TYPE)]
        .into_iter()
        .filter_map(|(beta, ga)| {
            let value = existing.get(beta)?;
            (existing.get(ga) != Some(value)).then(|| (ga.to_owned(), value.clone()))
        })
        .collect()
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
        let node = BTreeMap::from([("plain".to_owned(), "the node's".to_owned())]);
        let labels = cloud_labels(&metadata, Some(&node));
        let expected: BTreeMap<String, String> = [
            (INSTANCE_TYPE, "m5.large"),
            (INSTANCE_TYPE_BETA, "m5.large"),
            (ZONE, "eu-west-1a"),
            (ZONE_BETA, "eu-west-1a"),
            (REGION, "eu-west-1"),
            (REGION_BETA, "eu-west-1"),
            ("example.com/rack", "r1"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        assert_eq!(labels, expected);
    }

    #[test]
    fn empty_values_add_no_labels() {
        assert!(cloud_labels(&InstanceMetadata::default(), None).is_empty());
    }

    #[test]
    fn beta_labels_win_over_missing_or_different_ga_ones() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect()
        };
        let node = labels(&[(ZONE_BETA, "z1"), (ZONE, "z0"), (REGION_BETA, "r1"), (INSTANCE_TYPE, "only-ga")]);
        assert_eq!(labels_to_reconcile(Some(&node)), labels(&[(ZONE, "z1"), (REGION, "r1")]));
        let in_step = labels(&[(ZONE_BETA, "z1"), (ZONE, "z1")]);
        assert!(labels_to_reconcile(Some(&in_step)).is_empty());
        assert!(labels_to_reconcile(None).is_empty());
    }
}
