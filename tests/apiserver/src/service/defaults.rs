//! Service defaults, the values an update keeps, and the fields a Service type cannot have.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};

use super::{
    Spec, held_ports, name_of, needs_health_check, needs_node_ports, number, port_number, ports, ports_mut,
    service_type, text,
};
use crate::error::ApiError;

/// Fills in the defaults the real server's Service defaulting sets.
pub(super) fn apply_defaults(spec: &mut Spec) {
    if service_type(spec).is_empty() {
        spec.insert("type".into(), json!("ClusterIP"));
    }
    let service_type = service_type(spec).to_string();
    spec.entry("sessionAffinity").or_insert_with(|| json!("None"));
    if service_type != "ExternalName" {
        spec.entry("internalTrafficPolicy").or_insert_with(|| json!("Cluster"));
    }
    if needs_node_ports(spec) {
        spec.entry("externalTrafficPolicy").or_insert_with(|| json!("Cluster"));
    }
    if service_type == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts").or_insert_with(|| json!(true));
    }
    for port in ports_mut(spec) {
        port.entry("protocol").or_insert_with(|| json!("TCP"));
        if !port.contains_key("targetPort")
            && let Some(number) = port.get("port").cloned()
        {
            port.insert("targetPort".into(), number);
        }
    }
}

/// Fills what an update omits with what the Service already holds, as the real registry does.
pub(super) fn keep_allocated(old: &Spec, new: &mut Spec) {
    let needs_ip = |spec: &Spec| service_type(spec) != "ExternalName";
    if needs_ip(old) && needs_ip(new) {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            let omitted = match new.get(field) {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                Some(_) => false,
            };
            if omitted && let Some(value) = old.get(field) {
                new.insert(field.into(), value.clone());
            }
        }
    }
    if needs_node_ports(old) && needs_node_ports(new) {
        let old_ports: BTreeSet<u16> = ports(old).iter().filter_map(|p| port_number(p, "nodePort")).collect();
        let used: BTreeSet<u16> =
            ports(new).iter().filter_map(|p| port_number(p, "nodePort")).filter(|n| old_ports.contains(n)).collect();
        let by_name: HashMap<String, u16> = ports(old)
            .iter()
            .filter_map(|p| Some((name_of(p.get("name")).to_string(), port_number(p, "nodePort")?)))
            .collect();
        for port in ports_mut(new) {
            if number(port.get("nodePort")).is_none()
                && let Some(previous) = by_name.get(name_of(port.get("name"))).filter(|p| !used.contains(p))
            {
                port.insert("nodePort".into(), json!(previous));
            }
        }
    }
    if needs_health_check(old)
        && needs_health_check(new)
        && number(new.get("healthCheckNodePort")).is_none()
        && let Some(previous) = old.get("healthCheckNodePort")
    {
        new.insert("healthCheckNodePort".into(), previous.clone());
    }
}

/// Clears node ports and traffic policy a type cannot have, refusing ones the client newly asked for.
pub(super) fn drop_type_dependent(
    old: Option<&Spec>,
    spec: &mut Spec,
    invalid: &impl Fn(String, String) -> ApiError,
) -> Result<(), ApiError> {
    let service_type = service_type(spec).to_string();
    let held_before = |value: u16| old.is_some_and(|old| held_ports(old).contains(&value));
    if !needs_node_ports(spec) {
        for (index, port) in ports_mut(spec).enumerate() {
            if let Some(node_port) = number(port.get("nodePort")) {
                if !held_before(node_port) {
                    return Err(invalid(
                        format!("spec.ports[{index}].nodePort"),
                        format!("Forbidden: may not be used when `type` is '{service_type}'"),
                    ));
                }
                port.remove("nodePort");
            }
        }
        if spec.get("externalIPs").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec.remove("externalTrafficPolicy");
        }
    }
    if service_type != "LoadBalancer" {
        spec.remove("allocateLoadBalancerNodePorts");
    }
    if !needs_health_check(spec)
        && let Some(port) = number(spec.get("healthCheckNodePort"))
    {
        if !held_before(port) {
            return Err(invalid(
                "spec.healthCheckNodePort".into(),
                format!(
                    "Invalid value: {port}: may only be set when `type` is 'LoadBalancer' and \
                     `externalTrafficPolicy` is 'Local'"
                ),
            ));
        }
        spec.remove("healthCheckNodePort");
    }
    Ok(())
}

/// Checks the ports: required unless headless or ExternalName, numbered, and named when several.
pub(super) fn validate_ports(spec: &Spec, invalid: &impl Fn(String, String) -> ApiError) -> Result<(), ApiError> {
    let headless = text(spec, "clusterIP") == "None";
    let list = ports(spec);
    if list.is_empty() && service_type(spec) != "ExternalName" && !headless {
        return Err(invalid("spec.ports".into(), "Required value".into()));
    }
    for (index, port) in list.iter().enumerate() {
        if port_number(port, "port").is_none() {
            let value = port.get("port").cloned().unwrap_or(json!(0));
            return Err(invalid(
                format!("spec.ports[{index}].port"),
                format!("Invalid value: {value}: must be between 1 and 65535, inclusive"),
            ));
        }
        if list.len() > 1 && port.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(invalid(format!("spec.ports[{index}].name"), "Required value".into()));
        }
    }
    Ok(())
}
