//! `meta.k8s.io/v1` Tables, the server-side printing `kubectl get` asks for.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::conversion;
use crate::meta;
use crate::resources::ResourceType;

/// One column: its name, type, and whether it only shows with `-o wide` (priority 1).
struct Column {
    name: &'static str,
    kind: &'static str,
    priority: u8,
    description: &'static str,
}

const fn column(name: &'static str, description: &'static str) -> Column {
    Column { name, kind: "string", priority: 0, description }
}

const fn wide(name: &'static str, description: &'static str) -> Column {
    Column { name, kind: "string", priority: 1, description }
}

const NAME: Column = column("Name", "Name must be unique within a namespace.");
const AGE: Column = column("Age", "CreationTimestamp is the time the object was created.");

const NODE_COLUMNS: &[Column] = &[
    NAME,
    column("Status", "The status of the node, from its Ready condition."),
    column("Roles", "The roles of the node, from its node-role.kubernetes.io labels."),
    AGE,
    column("Version", "Kubelet Version reported by the node."),
    wide("Internal-IP", "The node's InternalIP addresses."),
    wide("External-IP", "The node's ExternalIP addresses."),
    wide("OS-Image", "OS Image reported by the node."),
    wide("Kernel-Version", "Kernel Version reported by the node."),
    wide("Container-Runtime", "ContainerRuntime Version reported by the node."),
];

const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    column("Type", "The type of the service."),
    column("Cluster-IP", "The cluster IP of the service."),
    column("External-IP", "The addresses the service is reachable at from outside the cluster."),
    column("Port(s)", "The ports of the service, with their node ports."),
    AGE,
    wide("Selector", "Route service traffic to pods with label keys and values matching this selector."),
];

const NAMESPACE_COLUMNS: &[Column] = &[NAME, column("Status", "The phase of the namespace."), AGE];

/// kube-apiserver's event columns, for core `v1` and `events.k8s.io/v1` Events alike.
const EVENT_COLUMNS: &[Column] = &[
    column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    column("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    column(
        "Reason",
        "This should be a short, machine understandable string that gives the reason for the transition into the \
         object's current status.",
    ),
    column("Object", "The object that this event is about."),
    wide("Subobject", "The part of the object the event is about, such as spec.containers{name}."),
    wide("Source", "The component reporting this event. Should be a short machine understandable string."),
    column("Message", "A human-readable description of the status of this operation."),
    wide("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
    wide("Count", "The number of times this event has occurred."),
    wide("Name", "Name must be unique within a namespace."),
];

const DEFAULT_COLUMNS: &[Column] = &[NAME, AGE];

fn columns(resource: &ResourceType) -> &'static [Column] {
    match resource.storage {
        "nodes" => NODE_COLUMNS,
        "services" => SERVICE_COLUMNS,
        "namespaces" => NAMESPACE_COLUMNS,
        "events" => EVENT_COLUMNS,
        _ => DEFAULT_COLUMNS,
    }
}

/// A Table of `objects` of `resource`; `list_metadata` becomes the Table's metadata.
pub(crate) fn table(resource: &ResourceType, objects: &[Arc<Value>], list_metadata: Value) -> Value {
    let definitions: Vec<Value> = columns(resource)
        .iter()
        .map(|c| {
            let format = if c.name == "Name" { "name" } else { "" };
            json!({"name": c.name, "type": c.kind, "format": format, "description": c.description, "priority": c.priority})
        })
        .collect();
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = objects.iter().map(|object| row(resource, object, now)).collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

fn row(resource: &ResourceType, object: &Value, now: jiff::Timestamp) -> Value {
    let name = meta::string(object, "name");
    let age = age(meta::string(object, "creationTimestamp"), now);
    let cells: Vec<Value> = match resource.storage {
        "events" => event_cells(resource, object, now),
        "nodes" => {
            let info = |field: &str| text(object, &format!("status.nodeInfo.{field}"), "<unknown>");
            vec![
                name.to_string(),
                node_status(object),
                node_roles(object),
                age,
                text(object, "status.nodeInfo.kubeletVersion", ""),
                node_addresses(object, "InternalIP"),
                node_addresses(object, "ExternalIP"),
                info("osImage"),
                info("kernelVersion"),
                info("containerRuntimeVersion"),
            ]
            .into_iter()
            .map(Value::from)
            .collect()
        }
        "services" => vec![
            name.into(),
            text(object, "spec.type", "ClusterIP").into(),
            text(object, "spec.clusterIP", "<none>").into(),
            service_external_ip(object).into(),
            service_ports(object).into(),
            age.into(),
            service_selector(object).into(),
        ],
        "namespaces" => vec![name.into(), text(object, "status.phase", "").into(), age.into()],
        _ => vec![name.into(), age.into()],
    };
    json!({ "cells": cells, "object": partial(object) })
}

fn partial(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// An Event's cells as kube-apiserver's printer makes them, from either
/// shape: the times fall back from the deprecated fields to `eventTime` and
/// the series, the count is a number (1 for a singleton of the new API),
/// and the source falls back to the reporting controller and instance.
fn event_cells(resource: &ResourceType, object: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let event = conversion::to_storage(resource, object.clone());
    let string = |path: &str| meta::lookup(&event, path).and_then(Value::as_str).unwrap_or_default();
    let first_non_empty =
        |a: &'static str, b: &'static str| Some(string(a)).filter(|s| !s.is_empty()).unwrap_or(string(b));
    let first_seen = match string("firstTimestamp") {
        "" => age(string("eventTime"), now),
        first => age(first, now),
    };
    let mut last_seen = match string("lastTimestamp") {
        "" => first_seen.clone(),
        last => age(last, now),
    };
    let mut count = meta::lookup(&event, "count").and_then(Value::as_i64).unwrap_or(0);
    if meta::lookup(&event, "series").is_some_and(Value::is_object) {
        last_seen = age(string("series.lastObservedTime"), now);
        count = meta::lookup(&event, "series.count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = string("involvedObject.kind").to_lowercase();
    let object_name = match string("involvedObject.name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component = first_non_empty("source.component", "reportingComponent");
    let source = match first_non_empty("source.host", "reportingInstance") {
        "" => component.to_owned(),
        instance => format!("{component}, {instance}"),
    };
    vec![
        last_seen.into(),
        string("type").into(),
        string("reason").into(),
        object_name.into(),
        string("involvedObject.fieldPath").into(),
        source.into(),
        string("message").trim().into(),
        first_seen.into(),
        count.into(),
        meta::string(&event, "name").into(),
    ]
}

fn text(object: &Value, path: &str, absent: &str) -> String {
    match meta::lookup(object, path).and_then(Value::as_str) {
        Some(value) if !value.is_empty() => value.to_string(),
        _ => absent.to_string(),
    }
}

fn list<'a>(object: &'a Value, path: &str) -> &'a [Value] {
    meta::lookup(object, path).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn node_status(node: &Value) -> String {
    let ready = list(node, "status.conditions").iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    let mut status = vec![match ready.and_then(|c| c.get("status")).and_then(Value::as_str) {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if meta::lookup(node, "spec.unschedulable") == Some(&json!(true)) {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

fn node_roles(node: &Value) -> String {
    let mut roles: Vec<String> = meta::labels(node)
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| match key.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role.to_string()),
            _ if key == "kubernetes.io/role" => value.as_str().map(str::to_string),
            _ => None,
        })
        .collect();
    roles.sort();
    roles.dedup();
    if roles.is_empty() { "<none>".into() } else { roles.join(",") }
}

fn node_addresses(node: &Value, kind: &str) -> String {
    let addresses: Vec<&str> = list(node, "status.addresses")
        .iter()
        .filter(|a| a.get("type").and_then(Value::as_str) == Some(kind))
        .filter_map(|a| a.get("address").and_then(Value::as_str))
        .collect();
    if addresses.is_empty() { "<none>".into() } else { addresses.join(",") }
}

fn service_external_ip(service: &Value) -> String {
    let external: Vec<&str> = list(service, "spec.externalIPs").iter().filter_map(Value::as_str).collect();
    match meta::lookup(service, "spec.type").and_then(Value::as_str).unwrap_or("ClusterIP") {
        "ExternalName" => text(service, "spec.externalName", "<none>"),
        "LoadBalancer" => {
            let ingress = list(service, "status.loadBalancer.ingress")
                .iter()
                .filter_map(|i| i.get("ip").or_else(|| i.get("hostname")).and_then(Value::as_str));
            let all: Vec<&str> = ingress.chain(external).collect();
            if all.is_empty() { "<pending>".into() } else { all.join(",") }
        }
        _ if !external.is_empty() => external.join(","),
        _ => "<none>".into(),
    }
}

fn service_ports(service: &Value) -> String {
    let ports: Vec<String> = list(service, "spec.ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_u64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_u64).filter(|n| *n > 0) {
                Some(node_port) => format!("{port}:{node_port}/{protocol}"),
                None => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() { "<none>".into() } else { ports.join(",") }
}

fn service_selector(service: &Value) -> String {
    let selector = meta::lookup(service, "spec.selector").and_then(Value::as_object);
    let pairs: Vec<String> =
        selector.into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    if pairs.is_empty() { "<none>".into() } else { pairs.join(",") }
}

/// The age of an object created at `created`, worded as kubectl words durations.
fn age(created: &str, now: jiff::Timestamp) -> String {
    let Ok(created) = created.parse::<jiff::Timestamp>() else { return "<unknown>".into() };
    let seconds = now.as_second() - created.as_second();
    if seconds < -1 {
        return "<invalid>".into();
    }
    let seconds = seconds.max(0);
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    let (days, years) = (hours / 24, hours / (24 * 365));
    match () {
        _ if seconds < 120 => format!("{seconds}s"),
        _ if minutes < 10 && seconds % 60 != 0 => format!("{minutes}m{}s", seconds % 60),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 && minutes % 60 != 0 => format!("{hours}h{}m", minutes % 60),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 && hours % 24 != 0 => format!("{days}d{}h", hours % 24),
        _ if hours < 24 * 365 * 2 => format!("{days}d"),
        _ if hours < 24 * 365 * 8 && days % 365 != 0 => format!("{years}y{}d", days % 365),
        _ => format!("{years}y"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;

    #[test]
    fn ages_read_like_kubectl() {
        let now: jiff::Timestamp = "2025-01-10T00:00:00Z".parse().unwrap();
        assert_eq!(age("2025-01-09T23:59:30Z", now), "30s");
        assert_eq!(age("2025-01-09T23:55:30Z", now), "4m30s");
        assert_eq!(age("2025-01-09T22:00:00Z", now), "120m");
        assert_eq!(age("2025-01-09T19:30:00Z", now), "4h30m");
        assert_eq!(age("2025-01-08T00:00:00Z", now), "2d");
        assert_eq!(age("2025-01-07T12:00:00Z", now), "2d12h");
        assert_eq!(age("", now), "<unknown>");
    }

    #[test]
    fn services_print_ports_and_pending_addresses() {
        let services = by_name("services").unwrap();
        let service = json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.9",
                     "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]},
            "status": {"loadBalancer": {}},
        });
        let table = table(services, &[Arc::new(service)], json!({"resourceVersion": "3"}));
        let cells = &table["rows"][0]["cells"];
        assert_eq!(cells[1], "LoadBalancer");
        assert_eq!(cells[2], "10.96.0.9");
        assert_eq!(cells[3], "<pending>");
        assert_eq!(cells[4], "80:30080/TCP");
        assert_eq!(table["rows"][0]["object"]["metadata"]["namespace"], "default");
        assert_eq!(table["columnDefinitions"][4]["name"], "Port(s)");
    }

    #[test]
    fn nodes_print_status_and_roles() {
        let nodes = by_name("nodes").unwrap();
        let node = json!({
            "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.33.1"}},
        });
        let table = table(nodes, &[Arc::new(node)], json!({}));
        let cells = &table["rows"][0]["cells"];
        assert_eq!(cells[1], "Ready,SchedulingDisabled");
        assert_eq!(cells[2], "control-plane");
        assert_eq!(cells[4], "v1.33.1");
    }

    /// The cells kube-apiserver 1.24 serves for these events, read at 19:52:47.
    #[test]
    fn events_print_as_kube_apiserver_prints_them() {
        let now: jiff::Timestamp = "2026-11-22T19:52:47Z".parse().unwrap();
        let core = json!({
            "metadata": {"name": "node-a.2", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": "node-a", "fieldPath": "spec.containers{x}"},
            "reason": "Synced", "message": "Node synced successfully", "type": "Warning",
            "source": {"component": "cloud-node-controller", "host": "h1"},
            "firstTimestamp": "2026-11-22T19:40:00Z", "lastTimestamp": "2026-11-22T19:45:00Z", "count": 2,
        });
        let cells = row(by_name("events").unwrap(), &core, now)["cells"].clone();
        assert_eq!(
            cells,
            json!([
                "7m47s",
                "Warning",
                "Synced",
                "node/node-a",
                "spec.containers{x}",
                "cloud-node-controller, h1",
                "Node synced successfully",
                "12m",
                2,
                "node-a.2"
            ])
        );

        let events = by_name("events.events.k8s.io").unwrap();
        let series = json!({
            "metadata": {"name": "web.1", "namespace": "default"},
            "eventTime": "2026-11-22T19:40:00.000000Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-22T19:50:00.000000Z"},
            "reportingController": "service-controller", "reportingInstance": "service-controller-host1",
            "action": "EnsuringLoadBalancer", "reason": "EnsuringLoadBalancer", "type": "Normal",
            "regarding": {"kind": "Service", "namespace": "default", "name": "web"},
            "note": "Ensuring load balancer ",
        });
        let cells = row(events, &series, now)["cells"].clone();
        assert_eq!(
            cells,
            json!([
                "2m47s",
                "Normal",
                "EnsuringLoadBalancer",
                "service/web",
                "",
                "service-controller, service-controller-host1",
                "Ensuring load balancer",
                "12m",
                3,
                "web.1"
            ])
        );
        let single = json!({
            "metadata": {"name": "web.3"}, "eventTime": "2026-11-22T19:58:00.000000Z",
            "reportingController": "service-controller", "reason": "Single", "type": "Warning",
            "regarding": {"kind": "Service"}, "note": "single event",
        });
        let cells = row(events, &single, now)["cells"].clone();
        assert_eq!(
            cells,
            json!([
                "<invalid>",
                "Warning",
                "Single",
                "service",
                "",
                "service-controller",
                "single event",
                "<invalid>",
                1,
                "web.3"
            ])
        );
        let table = table(events, &[Arc::new(series)], json!({}));
        let names: Vec<&str> =
            table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"]
        );
        assert_eq!(table["columnDefinitions"][9]["format"], "name");
        assert_eq!(table["columnDefinitions"][9]["priority"], 1);
    }
}
