//! Assigning cluster IPs and node ports to a Service, keeping those it already holds.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::{Spec, needs_health_check, needs_node_ports, number, port_number, ports, ports_mut, service_type, text};
use crate::allocator::{Allocations, Held, NODE_PORTS, SERVICE_CIDR, in_service_range};
use crate::error::ApiError;

/// Assigns the cluster IP: keeps a requested or held one when valid and free, allocates one otherwise,
/// and clears it for ExternalName Services.
pub(super) fn cluster_ip(
    allocations: &Allocations,
    before: &Held,
    old: Option<&Spec>,
    spec: &mut Spec,
    after: &mut Held,
    invalid: &impl Fn(String, String) -> ApiError,
) -> Result<(), ApiError> {
    let old_ip = old.filter(|o| service_type(o) != "ExternalName").map(|o| text(o, "clusterIP")).unwrap_or_default();
    if service_type(spec) == "ExternalName" {
        let ip = text(spec, "clusterIP");
        if !ip.is_empty() && ip != old_ip {
            return Err(invalid(
                "spec.clusterIP".into(),
                format!("Invalid value: \"{ip}\": may not be set for ExternalName services"),
            ));
        }
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            spec.remove(field);
        }
        return Ok(());
    }
    let listed: Vec<&str> =
        spec.get("clusterIPs").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let requested = match (text(spec, "clusterIP"), listed.first()) {
        ("", Some(first)) => first.to_string(),
        (ip, first) => {
            if first.is_some_and(|first| *first != ip) {
                return Err(invalid(
                    "spec.clusterIPs[0]".into(),
                    format!("Invalid value: {:?}: must match `clusterIP` when both are specified", listed),
                ));
            }
            ip.to_string()
        }
    };
    if !old_ip.is_empty() && !requested.is_empty() && requested != old_ip {
        return Err(invalid(
            "spec.clusterIPs[0]".into(),
            format!("Invalid value: \"{requested}\": may not change once set"),
        ));
    }
    let ip = match requested.as_str() {
        "None" => "None".to_string(),
        "" => {
            let ip = allocations
                .free_ip(&after.ips)
                .ok_or_else(|| ApiError::Internal("failed to allocate a serviceIP: range is full".into()))?;
            after.ips.insert(ip);
            ip.to_string()
        }
        text => {
            let field = "spec.clusterIPs[0]".to_string();
            let ip: Ipv4Addr = text.parse().map_err(|_| {
                invalid(field.clone(), format!("Invalid value: \"{text}\": must be a valid IPv4 address"))
            })?;
            if !in_service_range(ip) {
                return Err(invalid(
                    field,
                    format!(
                        "Invalid value: \"{ip}\": failed to allocate IP {ip}: the provided IP ({ip}) is not in the \
                         valid range. The range of valid IPs is {SERVICE_CIDR}"
                    ),
                ));
            }
            if allocations.ip_taken(ip, before) {
                return Err(invalid(
                    field,
                    format!("Invalid value: \"{ip}\": failed to allocate IP {ip}: provided IP is already allocated"),
                ));
            }
            after.ips.insert(ip);
            ip.to_string()
        }
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    spec.entry("ipFamilyPolicy").or_insert_with(|| json!("SingleStack"));
    Ok(())
}

/// Assigns node ports and the health check port: keeps requested ones when valid and free, and
/// allocates the missing ones the Service type needs.
pub(super) fn node_ports(
    allocations: &Allocations,
    before: &Held,
    spec: &mut Spec,
    after: &mut Held,
    invalid: &impl Fn(String, String) -> ApiError,
) -> Result<(), ApiError> {
    if !needs_node_ports(spec) {
        return Ok(());
    }
    let allocate = service_type(spec) == "NodePort" || spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false));
    let health_check = needs_health_check(spec);
    let check = |field: String, port: u16, after: &Held| -> Result<(), ApiError> {
        if !NODE_PORTS.contains(&port) {
            return Err(invalid(
                field,
                format!(
                    "Invalid value: {port}: provided port is not in the valid range. The range of valid ports is \
                     {}-{}",
                    NODE_PORTS.start(),
                    NODE_PORTS.end()
                ),
            ));
        }
        if after.ports.contains(&port) {
            return Err(invalid(field, format!("Duplicate value: {port}")));
        }
        if allocations.port_taken(port, before) {
            return Err(invalid(field, format!("Invalid value: {port}: provided port is already allocated")));
        }
        Ok(())
    };
    for (index, port) in ports(spec).iter().enumerate() {
        if let Some(node_port) = port_number(port, "nodePort") {
            check(format!("spec.ports[{index}].nodePort"), node_port, after)?;
            after.ports.insert(node_port);
        }
    }
    if let Some(port) = number(spec.get("healthCheckNodePort")) {
        check("spec.healthCheckNodePort".into(), port, after)?;
        after.ports.insert(port);
    }
    let full = || ApiError::Internal("failed to allocate a nodePort: range is full".into());
    if allocate {
        for port in ports_mut(spec) {
            if number(port.get("nodePort")).is_none() {
                let node_port = allocations.free_port(&after.ports).ok_or_else(full)?;
                after.ports.insert(node_port);
                port.insert("nodePort".into(), json!(node_port));
            }
        }
    }
    if health_check && number(spec.get("healthCheckNodePort")).is_none() {
        let port = allocations.free_port(&after.ports).ok_or_else(full)?;
        after.ports.insert(port);
        spec.insert("healthCheckNodePort".into(), json!(port));
    }
    Ok(())
}
