//! Services for tests.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The finalizer upstream's service controller puts on the Services it
/// makes load balancers for.
const LOAD_BALANCER_FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

/// Builders of Services for tests.
pub trait ServiceFixture: Sized {
    /// A Service of type LoadBalancer named `name` in `default`, one TCP
    /// port.
    fn test(name: &str) -> Self;
    /// With the load-balancer finalizer.
    fn with_finalizer(self) -> Self;
    /// Of another type.
    fn with_type(self, type_: &str) -> Self;
    /// Of a load balancer class.
    fn with_class(self, class: &str) -> Self;
    /// In another namespace.
    fn with_namespace(self, namespace: &str) -> Self;
    /// With a UID, as the API server gives one.
    fn with_uid(self, uid: &str) -> Self;
    /// With annotations.
    fn with_annotations(self, annotations: &[(&str, &str)]) -> Self;
    /// Asking for a load balancer address (`spec.loadBalancerIP`).
    fn with_load_balancer_ip(self, ip: &str) -> Self;
    /// With these ports instead.
    fn with_ports(self, ports: impl IntoIterator<Item = ServicePort>) -> Self;
}

impl ServiceFixture for Service {
    fn test(name: &str) -> Self {
        Service {
            metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(vec![ServicePort { port: 80, ..Default::default() }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn with_finalizer(mut self) -> Self {
        self.metadata.finalizers.get_or_insert_default().push(LOAD_BALANCER_FINALIZER.to_owned());
        self
    }

    fn with_type(mut self, type_: &str) -> Self {
        self.spec.get_or_insert_default().type_ = Some(type_.to_owned());
        self
    }

    fn with_class(mut self, class: &str) -> Self {
        self.spec.get_or_insert_default().load_balancer_class = Some(class.to_owned());
        self
    }

    fn with_namespace(mut self, namespace: &str) -> Self {
        self.metadata.namespace = Some(namespace.to_owned());
        self
    }

    fn with_uid(mut self, uid: &str) -> Self {
        self.metadata.uid = Some(uid.to_owned());
        self
    }

    fn with_annotations(mut self, annotations: &[(&str, &str)]) -> Self {
        let existing = self.metadata.annotations.get_or_insert_default();
        existing.extend(annotations.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())));
        self
    }

    fn with_load_balancer_ip(mut self, ip: &str) -> Self {
        self.spec.get_or_insert_default().load_balancer_ip = Some(ip.to_owned());
        self
    }

    fn with_ports(mut self, ports: impl IntoIterator<Item = ServicePort>) -> Self {
        self.spec.get_or_insert_default().ports = Some(ports.into_iter().collect());
        self
    }
}

/// Builders of Service ports for tests.
pub trait ServicePortFixture: Sized {
    /// Port `port` named `name`, its protocol left to the default (TCP).
    fn test(name: &str, port: i32) -> Self;
    /// With a node port.
    fn with_node_port(self, node_port: i32) -> Self;
    /// With a protocol (`TCP`, `UDP`, `SCTP`).
    fn with_protocol(self, protocol: &str) -> Self;
}

impl ServicePortFixture for ServicePort {
    fn test(name: &str, port: i32) -> Self {
        ServicePort { name: Some(name.to_owned()), port, ..Default::default() }
    }

    fn with_node_port(mut self, node_port: i32) -> Self {
        self.node_port = Some(node_port);
        self
    }

    fn with_protocol(mut self, protocol: &str) -> Self {
        self.protocol = Some(protocol.to_owned());
        self
    }
}
