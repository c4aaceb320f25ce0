//! What a Service asks of AWS: a network load balancer's scheme and, per
//! port, a listener and the target group it forwards to.

use wasm_ccm_sdk::Error;
use wasm_ccm_sdk::types::{Protocol, Service, SessionAffinity, TrafficPolicy};

use crate::elbv2::{HealthCheck, TargetGroupSpec};
use crate::naming;

/// Makes the load balancer internal unless it is `false` (any other value,
/// such as `true` or a legacy CIDR, counts).
pub const INTERNAL_ANNOTATION: &str = "service.beta.kubernetes.io/aws-load-balancer-internal";
/// `external` or `nlb-ip` hand the Service to another controller.
pub const TYPE_ANNOTATION: &str = "service.beta.kubernetes.io/aws-load-balancer-type";

/// What to build for a Service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// `internet-facing` or `internal`.
    pub scheme: &'static str,
    /// One listener and target group per Service port with a node port.
    pub ports: Vec<PortPlan>,
}

/// A listener and its target group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    /// `TCP` or `UDP`.
    pub protocol: &'static str,
    /// The port the load balancer listens on.
    pub port: u16,
    /// The node port targets receive traffic on.
    pub node_port: u16,
    /// The target group's name.
    pub target_group_name: String,
    /// The target group's health check.
    pub health_check: HealthCheck,
}

impl PortPlan {
    /// The target group to create in `vpc_id`.
    pub fn target_group(&self, vpc_id: &str) -> TargetGroupSpec {
        TargetGroupSpec {
            name: self.target_group_name.clone(),
            protocol: self.protocol,
            port: self.node_port,
            vpc_id: vpc_id.to_owned(),
            health_check: self.health_check.clone(),
        }
    }
}

fn annotation<'a>(service: &'a Service, key: &str) -> Option<&'a str> {
    service.annotations.iter().find(|annotation| annotation.key == key).map(|annotation| annotation.value.as_str())
}

/// Whether another controller owns the Service's load balancer.
pub fn is_external(service: &Service) -> bool {
    matches!(annotation(service, TYPE_ANNOTATION), Some("external" | "nlb-ip"))
}

/// Whether the Service asks for an internal load balancer.
pub fn is_internal(service: &Service) -> bool {
    annotation(service, INTERNAL_ANNOTATION).is_some_and(|value| !value.is_empty() && value != "false")
}

/// The health check of the Service's target groups: kube-proxy's health
/// check node port for `externalTrafficPolicy: Local`, else TCP on the
/// traffic port.
fn health_check(service: &Service) -> HealthCheck {
    match (service.external_traffic_policy, service.health_check_node_port) {
        (TrafficPolicy::Local, Some(port)) => HealthCheck {
            protocol: "HTTP",
            port: port.to_string(),
            path: Some("/healthz"),
            interval_seconds: 10,
            threshold: 2,
        },
        _ => HealthCheck {
            protocol: "TCP",
            port: "traffic-port".to_owned(),
            path: None,
            interval_seconds: 30,
            threshold: 3,
        },
    }
}

impl Plan {
    /// The plan for `service` in `cluster_name`.
    ///
    /// # Errors
    /// When the Service asks for what a network load balancer with
    /// instance targets cannot do.
    pub fn new(cluster_name: &str, service: &Service) -> Result<Self, Error> {
        if service.session_affinity != SessionAffinity::None {
            return Err(Error::other("unsupported load balancer affinity: ClientIP"));
        }
        if service.load_balancer_ip.is_some() {
            return Err(Error::other("LoadBalancerIP cannot be specified for AWS ELB"));
        }
        if service.ports.is_empty() {
            return Err(Error::other("requested load balancer with no ports"));
        }
        let health_check = health_check(service);
        let mut ports: Vec<PortPlan> = Vec::new();
        for port in &service.ports {
            let protocol = match port.protocol {
                Protocol::Tcp => "TCP",
                Protocol::Udp => "UDP",
                Protocol::Sctp => {
                    return Err(Error::other(format_args!(
                        "port {} is SCTP; AWS network load balancers are made here for TCP and UDP ports",
                        port.port
                    )));
                }
            };
            let Some(node_port) = port.node_port else {
                wasm_ccm_sdk::log::warn(&format!(
                    "ignoring port {} of {}: it has no node port",
                    port.port,
                    naming::service_name(service)
                ));
                continue;
            };
            if let Some(other) = ports.iter().find(|planned| planned.port == port.port) {
                return Err(Error::other(format_args!(
                    "port {} is used for both {} and {protocol}, which needs a TCP_UDP listener; use distinct ports",
                    port.port, other.protocol
                )));
            }
            let identity = [
                cluster_name,
                &port.port.to_string(),
                &node_port.to_string(),
                protocol,
                "instance",
                health_check.protocol,
                &health_check.port,
                health_check.path.unwrap_or_default(),
                &health_check.interval_seconds.to_string(),
                &health_check.threshold.to_string(),
            ];
            ports.push(PortPlan {
                protocol,
                port: port.port,
                node_port,
                target_group_name: naming::target_group_name(&service.namespace, &service.name, &identity),
                health_check: health_check.clone(),
            });
        }
        let scheme = if is_internal(service) { "internal" } else { "internet-facing" };
        Ok(Plan { scheme, ports })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{annotated, port, service};

    #[test]
    fn one_listener_and_target_group_per_port() {
        let web =
            service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30080)), port(Protocol::Udp, 53, Some(30053))]);
        let plan = Plan::new("prod", &web).unwrap();
        assert_eq!(plan.scheme, "internet-facing");
        assert_eq!(plan.ports.len(), 2);
        let (http, dns) = (&plan.ports[0], &plan.ports[1]);
        assert_eq!((http.protocol, http.port, http.node_port), ("TCP", 80, 30080));
        assert_eq!((dns.protocol, dns.port, dns.node_port), ("UDP", 53, 30053));
        assert!(http.target_group_name.starts_with("k8s-shop-web-") && http.target_group_name.len() == 23);
        assert_ne!(http.target_group_name, dns.target_group_name);
        assert_eq!(http.health_check.protocol, "TCP");
        assert_eq!(http.health_check.port, "traffic-port");
        let group = http.target_group("vpc-1");
        assert_eq!((group.port, group.protocol, group.vpc_id.as_str()), (30080, "TCP", "vpc-1"));
        assert_eq!(plan, Plan::new("prod", &web).unwrap(), "deterministic");
        assert_ne!(plan.ports[0].target_group_name, Plan::new("test", &web).unwrap().ports[0].target_group_name);
    }

    #[test]
    fn node_port_changes_rename_the_target_group() {
        let before = Plan::new("prod", &service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30080))])).unwrap();
        let after = Plan::new("prod", &service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30081))])).unwrap();
        assert_ne!(before.ports[0].target_group_name, after.ports[0].target_group_name);
    }

    #[test]
    fn internal_follows_upstream() {
        let web = || service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30080))]);
        for (value, internal) in [("true", true), ("0.0.0.0/0", true), ("false", false), ("", false)] {
            let annotated = annotated(web(), INTERNAL_ANNOTATION, value);
            assert_eq!(is_internal(&annotated), internal, "{value:?}");
            let scheme = Plan::new("prod", &annotated).unwrap().scheme;
            assert_eq!(scheme, if internal { "internal" } else { "internet-facing" });
        }
        assert!(!is_internal(&web()));
    }

    #[test]
    fn external_types_belong_elsewhere() {
        let web = || service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30080))]);
        assert!(is_external(&annotated(web(), TYPE_ANNOTATION, "external")));
        assert!(is_external(&annotated(web(), TYPE_ANNOTATION, "nlb-ip")));
        assert!(!is_external(&annotated(web(), TYPE_ANNOTATION, "nlb")));
        assert!(!is_external(&web()));
    }

    #[test]
    fn local_traffic_checks_kube_proxy() {
        let mut web = service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30080))]);
        web.external_traffic_policy = TrafficPolicy::Local;
        web.health_check_node_port = Some(32000);
        let check = &Plan::new("prod", &web).unwrap().ports[0].health_check;
        assert_eq!((check.protocol, check.port.as_str(), check.path), ("HTTP", "32000", Some("/healthz")));
    }

    #[test]
    fn ports_without_node_ports_are_left_out() {
        let web = service("shop", "web", vec![port(Protocol::Tcp, 80, None), port(Protocol::Tcp, 443, Some(30443))]);
        let plan = Plan::new("prod", &web).unwrap();
        assert_eq!(plan.ports.iter().map(|port| port.port).collect::<Vec<_>>(), [443]);
    }

    #[test]
    fn refuses_what_it_cannot_build() {
        let mut affinity = service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30080))]);
        affinity.session_affinity = SessionAffinity::ClientIp;
        let mut fixed_ip = service("shop", "web", vec![port(Protocol::Tcp, 80, Some(30080))]);
        fixed_ip.load_balancer_ip = Some("192.0.2.1".into());
        for (bad, why) in [
            (service("shop", "web", Vec::new()), "no ports"),
            (service("shop", "web", vec![port(Protocol::Sctp, 80, Some(30080))]), "SCTP"),
            (
                service(
                    "shop",
                    "dns",
                    vec![port(Protocol::Tcp, 53, Some(30053)), port(Protocol::Udp, 53, Some(30054))],
                ),
                "TCP_UDP",
            ),
            (affinity, "affinity"),
            (fixed_ip, "LoadBalancerIP"),
        ] {
            let Err(Error::Other(message)) = Plan::new("prod", &bad) else { panic!("accepted {bad:?}") };
            assert!(message.contains(why), "{message}");
        }
    }
}
