//! Upstream's rules for which Services get a load balancer, when one must be
//! cleaned up, and which changes need a sync; and the names the controller
//! marks a Service with.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use k8s_openapi::api::core::v1::{LoadBalancerStatus, Service, ServiceSpec};

/// The annotation naming the provider that ensured a Service's load
/// balancer: information, written by the lane with the finalizer.
pub const PROVIDER_ANNOTATION: &str = "wasm-ccm.io/load-balancer-provider";
/// The finalizer that keeps a Service until its load balancer is gone.
pub const LOAD_BALANCER_FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

/// Whether the Service carries the load-balancer finalizer.
pub fn has_finalizer(service: &Service) -> bool {
    service.metadata.finalizers.iter().flatten().any(|finalizer| finalizer == LOAD_BALANCER_FINALIZER)
}

/// A digest of what upstream's `needsUpdate` compares: when it changes, the
/// Service needs a sync.
pub fn sync_digest(service: &Service) -> u64 {
    let mut hasher = DefaultHasher::new();
    service.metadata.uid.hash(&mut hasher);
    // Not the annotation naming the load balancer's provider, which the
    // controller writes itself with the finalizer.
    for annotation in service.metadata.annotations.iter().flatten() {
        if annotation.0 != PROVIDER_ANNOTATION {
            annotation.hash(&mut hasher);
        }
    }
    service.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    if let Some(spec) = &service.spec {
        spec.type_.hash(&mut hasher);
        spec.load_balancer_class.hash(&mut hasher);
        spec.load_balancer_source_ranges.hash(&mut hasher);
        for port in spec.ports.iter().flatten() {
            port.name.hash(&mut hasher);
            port.protocol.hash(&mut hasher);
            port.port.hash(&mut hasher);
            port.node_port.hash(&mut hasher);
            serde_json::to_string(&port.target_port).unwrap_or_default().hash(&mut hasher);
            port.app_protocol.hash(&mut hasher);
        }
        spec.session_affinity.hash(&mut hasher);
        serde_json::to_string(&spec.session_affinity_config).unwrap_or_default().hash(&mut hasher);
        spec.load_balancer_ip.hash(&mut hasher);
        spec.external_ips.hash(&mut hasher);
        spec.external_traffic_policy.hash(&mut hasher);
        spec.health_check_node_port.hash(&mut hasher);
        spec.ip_families.as_ref().map_or(0, Vec::len).hash(&mut hasher);
    }
    hasher.finish()
}

/// The Normal event upstream's `needsUpdate` records for a change from
/// `old` to `new`, `(reason, note)`, of a Service that `wanted` and
/// `wants` a load balancer before and after: the first relevant change in
/// upstream's order names the event, and a change it records nothing for
/// (ports, affinity, annotations, IP families) comes first when earlier in
/// that order.
pub fn update_event(old: &Service, new: &Service, wanted: bool, wants: bool) -> Option<(&'static str, String)> {
    if !wanted && !wants {
        return None;
    }
    let default = ServiceSpec::default();
    let before = old.spec.as_ref().unwrap_or(&default);
    let after = new.spec.as_ref().unwrap_or(&default);
    if wanted != wants {
        return Some(("Type", format!("{} -> {}", text(&before.type_), text(&after.type_))));
    }
    if before.load_balancer_source_ranges != after.load_balancer_source_ranges {
        let note =
            format!("{} -> {}", list(&before.load_balancer_source_ranges), list(&after.load_balancer_source_ranges));
        return Some(("LoadBalancerSourceRanges", note));
    }
    if before.ports != after.ports
        || before.session_affinity != after.session_affinity
        || before.session_affinity_config != after.session_affinity_config
    {
        return None;
    }
    if before.load_balancer_ip != after.load_balancer_ip {
        let note = format!("{} -> {}", text(&before.load_balancer_ip), text(&after.load_balancer_ip));
        return Some(("LoadbalancerIP", note));
    }
    let (old_ips, new_ips) =
        (before.external_ips.as_deref().unwrap_or_default(), after.external_ips.as_deref().unwrap_or_default());
    if old_ips.len() != new_ips.len() {
        return Some(("ExternalIP", format!("Count: {} -> {}", old_ips.len(), new_ips.len())));
    }
    if let Some((_, added)) = old_ips.iter().zip(new_ips).find(|(old, new)| old != new) {
        return Some(("ExternalIP", format!("Added: {added}")));
    }
    if old.metadata.annotations != new.metadata.annotations {
        return None;
    }
    if old.metadata.uid != new.metadata.uid {
        return Some(("UID", format!("{} -> {}", text(&old.metadata.uid), text(&new.metadata.uid))));
    }
    if before.external_traffic_policy != after.external_traffic_policy {
        let note = format!("{} -> {}", text(&before.external_traffic_policy), text(&after.external_traffic_policy));
        return Some(("ExternalTrafficPolicy", note));
    }
    if before.health_check_node_port != after.health_check_node_port {
        let port = |port: Option<i32>| port.unwrap_or_default();
        let note = format!("{} -> {}", port(before.health_check_node_port), port(after.health_check_node_port));
        return Some(("HealthCheckNodePort", note));
    }
    None
}

/// A string field as Go prints it: empty when unset.
fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or_default()
}

/// A list as Go's `%v` prints a slice: `[a b]`.
fn list(values: &Option<Vec<String>>) -> String {
    format!("[{}]", values.as_deref().unwrap_or_default().join(" "))
}

/// Whether two statuses have the same ingress, as upstream compares them.
pub fn same_ingress(current: &LoadBalancerStatus, desired: &LoadBalancerStatus) -> bool {
    current.ingress.as_deref().unwrap_or_default() == desired.ingress.as_deref().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{LoadBalancerIngress, ServicePort, ServiceSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;

    fn service(type_: &str) -> Service {
        Service {
            metadata: ObjectMeta { name: Some("web".into()), uid: Some("uid".into()), ..Default::default() },
            spec: Some(ServiceSpec {
                type_: Some(type_.into()),
                ports: Some(vec![ServicePort { port: 80, node_port: Some(30080), ..Default::default() }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn deleting(mut service: Service) -> Service {
        service.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        service
    }

    fn wants(service: &Service) -> bool {
        service.spec.as_ref().is_some_and(|spec| spec.type_.as_deref() == Some("LoadBalancer"))
    }

    fn update_event(old: &Service, new: &Service) -> Option<(&'static str, String)> {
        super::update_event(old, new, wants(old), wants(new))
    }

    fn finalized(mut service: Service) -> Service {
        service.metadata.finalizers = Some(vec![LOAD_BALANCER_FINALIZER.into()]);
        service
    }

    #[test]
    fn only_relevant_changes_need_a_sync() {
        let base = service("LoadBalancer");
        let digest = sync_digest(&base);
        let mut status_only = base.clone();
        status_only.status = Some(Default::default());
        status_only.metadata.resource_version = Some("42".into());
        status_only.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
        assert_eq!(sync_digest(&status_only), digest, "status, labels and versions are not relevant");

        let mut changes: Vec<Service> = Vec::new();
        let mut port = base.clone();
        port.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 81;
        changes.push(port);
        let mut annotated = base.clone();
        annotated.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        changes.push(annotated);
        let mut ranges = base.clone();
        ranges.spec.as_mut().unwrap().load_balancer_source_ranges = Some(vec!["10.0.0.0/8".into()]);
        changes.push(ranges);
        let mut policy = base.clone();
        policy.spec.as_mut().unwrap().external_traffic_policy = Some("Local".into());
        changes.push(policy);
        let mut families = base.clone();
        families.spec.as_mut().unwrap().ip_families = Some(vec!["IPv4".into(), "IPv6".into()]);
        changes.push(families);
        changes.push(service("ClusterIP"));
        let mut owned = base.clone();
        owned.metadata.annotations = Some([(PROVIDER_ANNOTATION.to_owned(), "a".to_owned())].into());
        assert_eq!(sync_digest(&owned), digest, "the controller's own annotation is not a change");
        let mut classed = base.clone();
        classed.spec.as_mut().unwrap().load_balancer_class = Some("example.com/a".into());
        changes.push(classed);
        changes.push(deleting(base.clone()));
        for changed in changes {
            assert_ne!(sync_digest(&changed), digest, "{changed:?}");
        }
    }

    fn spec(service: &mut Service) -> &mut ServiceSpec {
        service.spec.as_mut().unwrap()
    }

    #[test]
    fn changes_are_reported_as_upstream_s_events() {
        let base = finalized(service("LoadBalancer"));
        let change = |edit: &dyn Fn(&mut Service)| {
            let mut changed = base.clone();
            edit(&mut changed);
            update_event(&base, &changed)
        };
        let event = |reason: &'static str, note: &str| Some((reason, note.to_owned()));

        assert_eq!(update_event(&base, &finalized(service("NodePort"))), event("Type", "LoadBalancer -> NodePort"));
        assert_eq!(update_event(&service("ClusterIP"), &service("NodePort")), None, "neither wants one");
        assert_eq!(
            change(&|s| spec(s).load_balancer_source_ranges = Some(vec!["10.0.0.0/8".into(), "fd00::/8".into()])),
            event("LoadBalancerSourceRanges", "[] -> [10.0.0.0/8 fd00::/8]")
        );
        assert_eq!(
            change(&|s| spec(s).load_balancer_ip = Some("1.2.3.4".into())),
            event("LoadbalancerIP", " -> 1.2.3.4")
        );
        assert_eq!(
            change(&|s| spec(s).external_ips = Some(vec!["1.2.3.4".into()])),
            event("ExternalIP", "Count: 0 -> 1")
        );
        assert_eq!(change(&|s| s.metadata.uid = Some("other".into())), event("UID", "uid -> other"));
        assert_eq!(
            change(&|s| spec(s).external_traffic_policy = Some("Local".into())),
            event("ExternalTrafficPolicy", " -> Local")
        );
        assert_eq!(
            change(&|s| spec(s).health_check_node_port = Some(31000)),
            event("HealthCheckNodePort", "0 -> 31000")
        );

        let mut two_ips = base.clone();
        spec(&mut two_ips).external_ips = Some(vec!["1.2.3.4".into(), "1.2.3.5".into()]);
        let mut other_ip = two_ips.clone();
        spec(&mut other_ip).external_ips = Some(vec!["1.2.3.4".into(), "1.2.3.6".into()]);
        assert_eq!(update_event(&two_ips, &other_ip), event("ExternalIP", "Added: 1.2.3.6"));

        // Earlier in upstream's order, a change without an event hides later ones.
        let mut port_and_ip = base.clone();
        spec(&mut port_and_ip).ports.as_mut().unwrap()[0].port = 81;
        spec(&mut port_and_ip).load_balancer_ip = Some("1.2.3.4".into());
        assert_eq!(update_event(&base, &port_and_ip), None);
        assert_eq!(change(&|s| s.metadata.annotations = Some([("a".into(), "b".into())].into())), None);
    }

    #[test]
    fn ingress_comparison() {
        let status = |ip: &str| LoadBalancerStatus {
            ingress: Some(vec![LoadBalancerIngress { ip: Some(ip.into()), ..Default::default() }]),
        };
        assert!(same_ingress(&status("1.2.3.4"), &status("1.2.3.4")));
        assert!(!same_ingress(&status("1.2.3.4"), &status("1.2.3.5")));
        assert!(!same_ingress(&LoadBalancerStatus::default(), &status("1.2.3.4")));
        let empty = LoadBalancerStatus { ingress: Some(Vec::new()) };
        assert!(same_ingress(&empty, &LoadBalancerStatus::default()));
    }
}
