//! Services and Nodes for unit tests.

use wasm_ccm_sdk::types::{KeyValue, Protocol, Service, ServicePort, ServiceType, SessionAffinity, TrafficPolicy};

/// A LoadBalancer Service `namespace/name` with `ports`.
pub fn service(namespace: &str, name: &str, ports: Vec<ServicePort>) -> Service {
    Service {
        name: name.into(),
        namespace: namespace.into(),
        uid: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into(),
        labels: Vec::new(),
        annotations: Vec::new(),
        service_type: ServiceType::LoadBalancer,
        ports,
        load_balancer_ip: None,
        load_balancer_source_ranges: Vec::new(),
        external_traffic_policy: TrafficPolicy::Cluster,
        health_check_node_port: None,
        ip_families: Vec::new(),
        session_affinity: SessionAffinity::None,
        session_affinity_timeout_seconds: None,
        load_balancer_class: None,
    }
}

/// `service` with the annotation `key: value`.
pub fn annotated(mut service: Service, key: &str, value: &str) -> Service {
    service.annotations.push(KeyValue { key: key.into(), value: value.into() });
    service
}

/// A Service port.
pub fn port(protocol: Protocol, port: u16, node_port: Option<u16>) -> ServicePort {
    ServicePort { name: format!("p{port}"), protocol, port, node_port, app_protocol: None }
}
