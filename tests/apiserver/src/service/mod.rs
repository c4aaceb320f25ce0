//! Service defaulting, validation of the fields controllers rely on, and IP and node port assignment.

mod assign;
mod defaults;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use crate::allocator::{Allocations, Held, in_service_range};
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::resources::ResourceType;

type Spec = Map<String, Value>;

/// What a Service held before a write and what it holds after it.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub before: Held,
    pub after: Held,
}

/// The cluster IP and node ports `service` holds.
pub(crate) fn held(service: &Value) -> Held {
    let mut held = Held::default();
    let Some(spec) = service.get("spec").and_then(Value::as_object) else { return held };
    if let Some(ip) = text(spec, "clusterIP").parse::<Ipv4Addr>().ok().filter(|ip| in_service_range(*ip)) {
        held.ips.insert(ip);
    }
    held.ports = held_ports(spec);
    held
}

/// Defaults `service` and assigns its cluster IP and node ports, keeping those of `old` that it omits.
///
/// # Errors
///
/// 422 Invalid for requested values that are out of range or held by another Service, and for node
/// ports on a type that cannot have them; 500 when a range is full.
pub(crate) fn prepare(
    allocations: &Allocations,
    resource: &ResourceType,
    old: Option<&Value>,
    service: &mut Value,
) -> Result<Plan, ApiError> {
    let name = meta::string(service, "name").to_string();
    let invalid = |field: String, message: String| ApiError::Invalid {
        kind: resource.kind,
        group: resource.group,
        name: name.clone(),
        causes: vec![Cause { reason: cause_reason(&message), field, message }],
    };
    let old_spec = old.and_then(|o| o.get("spec")).and_then(Value::as_object);
    let map = service.as_object_mut().expect("objects are JSON maps");
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let spec = spec.as_object_mut().expect("spec was just made a map");

    defaults::apply_defaults(spec);
    if let Some(old_spec) = old_spec {
        defaults::keep_allocated(old_spec, spec);
    }
    defaults::drop_type_dependent(old_spec, spec, &invalid)?;
    defaults::validate_ports(spec, &invalid)?;

    let before = old.map(held).unwrap_or_default();
    let mut after = Held::default();
    assign::cluster_ip(allocations, &before, old_spec, spec, &mut after, &invalid)?;
    assign::node_ports(allocations, &before, spec, &mut after, &invalid)?;
    Ok(Plan { before, after })
}

fn cause_reason(message: &str) -> &'static str {
    if message.starts_with("Forbidden") {
        "FieldValueForbidden"
    } else if message.starts_with("Required") {
        "FieldValueRequired"
    } else if message.starts_with("Duplicate") {
        "FieldValueDuplicate"
    } else {
        "FieldValueInvalid"
    }
}

fn text<'a>(spec: &'a Spec, field: &str) -> &'a str {
    spec.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn number(value: Option<&Value>) -> Option<u16> {
    value.and_then(Value::as_u64).filter(|n| *n != 0).and_then(|n| u16::try_from(n).ok())
}

fn port_number(port: &Value, field: &str) -> Option<u16> {
    number(port.get(field))
}

fn name_of(name: Option<&Value>) -> &str {
    name.and_then(Value::as_str).unwrap_or_default()
}

fn held_ports(spec: &Spec) -> BTreeSet<u16> {
    let node_ports = ports(spec).iter().filter_map(|p| port_number(p, "nodePort"));
    node_ports.chain(number(spec.get("healthCheckNodePort"))).collect()
}

fn ports(spec: &Spec) -> &[Value] {
    spec.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn ports_mut(spec: &mut Spec) -> impl Iterator<Item = &mut Map<String, Value>> {
    spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

fn service_type(spec: &Spec) -> &str {
    text(spec, "type")
}

fn needs_node_ports(spec: &Spec) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

fn needs_health_check(spec: &Spec) -> bool {
    service_type(spec) == "LoadBalancer" && text(spec, "externalTrafficPolicy") == "Local"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::NODE_PORTS;
    use crate::resources::by_name;

    fn prepare_new(allocations: &Allocations, mut service: Value) -> Result<(Value, Plan), ApiError> {
        let plan = prepare(allocations, by_name("services").unwrap(), None, &mut service)?;
        Ok((service, plan))
    }

    #[test]
    fn defaults_a_cluster_ip_service() {
        let allocations = Allocations::default();
        let (service, plan) = prepare_new(&allocations, json!({"spec": {"ports": [{"port": 80}]}})).unwrap();
        let spec = &service["spec"];
        assert_eq!(spec["type"], "ClusterIP");
        assert_eq!(spec["clusterIP"], "10.96.0.2");
        assert_eq!(spec["clusterIPs"], json!(["10.96.0.2"]));
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        assert_eq!(spec["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
        assert!(spec.get("externalTrafficPolicy").is_none());
        assert_eq!(plan.after.ports.len(), 0);
    }

    #[test]
    fn load_balancers_with_local_policy_get_a_health_check_port() {
        let allocations = Allocations::default();
        let request = json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}});
        let (service, plan) = prepare_new(&allocations, request).unwrap();
        let spec = &service["spec"];
        assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
        let health = spec["healthCheckNodePort"].as_u64().unwrap();
        assert!(NODE_PORTS.contains(&(health as u16)));
        assert_eq!(plan.after.ports.len(), 3);
    }

    #[test]
    fn refuses_a_node_port_held_elsewhere() {
        let mut allocations = Allocations::default();
        let request = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}});
        let (_, plan) = prepare_new(&allocations, request.clone()).unwrap();
        allocations.transfer(&plan.before, &plan.after);
        let error = prepare_new(&allocations, request).unwrap_err();
        assert_eq!(error.code(), 422);
        assert!(error.to_string().contains("provided port is already allocated"), "{error}");
    }

    #[test]
    fn updates_keep_omitted_ports_and_switching_to_cluster_ip_releases_them() {
        let mut allocations = Allocations::default();
        let (old, plan) = prepare_new(
            &allocations,
            json!({"metadata": {"name": "web"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}),
        )
        .unwrap();
        allocations.transfer(&plan.before, &plan.after);
        let node_port = old["spec"]["ports"][0]["nodePort"].clone();

        let mut update = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let plan = prepare(&allocations, by_name("services").unwrap(), Some(&old), &mut update).unwrap();
        assert_eq!(update["spec"]["ports"][0]["nodePort"], node_port);
        assert_eq!(update["spec"]["clusterIP"], old["spec"]["clusterIP"]);
        assert_eq!(plan.before, plan.after);

        let mut to_cluster_ip = old.clone();
        to_cluster_ip["spec"]["type"] = json!("ClusterIP");
        let plan = prepare(&allocations, by_name("services").unwrap(), Some(&old), &mut to_cluster_ip).unwrap();
        assert!(to_cluster_ip["spec"]["ports"][0].get("nodePort").is_none());
        assert!(plan.after.ports.is_empty());
        assert_eq!(plan.before.ports.len(), 1);
    }

    #[test]
    fn node_ports_are_forbidden_on_cluster_ip_services() {
        let allocations = Allocations::default();
        let error =
            prepare_new(&allocations, json!({"spec": {"ports": [{"port": 80, "nodePort": 30001}]}})).unwrap_err();
        assert!(error.to_string().contains("Forbidden: may not be used when `type` is 'ClusterIP'"), "{error}");
    }

    #[test]
    fn headless_and_external_name_services_get_no_ip() {
        let allocations = Allocations::default();
        let (headless, plan) = prepare_new(&allocations, json!({"spec": {"clusterIP": "None"}})).unwrap();
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        assert!(plan.after.ips.is_empty());
        let (external, _) =
            prepare_new(&allocations, json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}))
                .unwrap();
        assert!(external["spec"].get("clusterIP").is_none());
    }
}
