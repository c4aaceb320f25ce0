//! Conversions between Kubernetes objects and the world's records, and from
//! the records providers return to the host's types.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;

use crate::bindings::Parts as WitParts;
use crate::bindings::batch;
use crate::bindings::types as wit;
use crate::clip::{MAX_TEXT, clip};
use wasm_ccm_cloud::{BatchAnswers, InstanceMetadata, InstanceState, MetadataAnswers, Parts, Route, Zone};
use wasm_ccm_cloud::{MAX_RETRY_DELAY, ProviderError};

/// The most of one value a provider returned (an address, a name) that an
/// error quotes.
const MAX_QUOTED: usize = 256;

/// Why an object cannot be passed to a provider.
fn invalid(what: String) -> ProviderError {
    ProviderError::InvalidInput(what)
}

fn pairs(map: Option<&BTreeMap<String, String>>) -> Vec<wit::KeyValue> {
    map.into_iter().flatten().map(|(key, value)| wit::KeyValue { key: key.clone(), value: value.clone() }).collect()
}

fn port(value: i32, what: &str) -> Result<u16, ProviderError> {
    u16::try_from(value).ok().filter(|port| *port != 0).ok_or_else(|| invalid(format!("{what} {value} is not a port")))
}

fn optional_port(value: Option<i32>, what: &str) -> Result<Option<u16>, ProviderError> {
    value.filter(|value| *value != 0).map(|value| port(value, what)).transpose()
}

fn protocol(value: Option<&str>) -> Result<wit::Protocol, ProviderError> {
    match value.unwrap_or("TCP") {
        "TCP" => Ok(wit::Protocol::Tcp),
        "UDP" => Ok(wit::Protocol::Udp),
        "SCTP" => Ok(wit::Protocol::Sctp),
        other => Err(invalid(format!("unknown protocol {other:?}"))),
    }
}

fn protocol_name(protocol: wit::Protocol) -> &'static str {
    match protocol {
        wit::Protocol::Tcp => "TCP",
        wit::Protocol::Udp => "UDP",
        wit::Protocol::Sctp => "SCTP",
    }
}

/// What a provider reads of a Service.
pub(crate) fn service(service: &core::Service) -> Result<wit::Service, ProviderError> {
    let metadata = &service.metadata;
    let spec = service.spec.clone().unwrap_or_default();
    let service_type = match spec.type_.as_deref().unwrap_or("ClusterIP") {
        "ClusterIP" => wit::ServiceType::ClusterIp,
        "NodePort" => wit::ServiceType::NodePort,
        "LoadBalancer" => wit::ServiceType::LoadBalancer,
        "ExternalName" => wit::ServiceType::ExternalName,
        other => return Err(invalid(format!("unknown service type {other:?}"))),
    };
    let ports = spec
        .ports
        .iter()
        .flatten()
        .map(|service_port| {
            Ok(wit::ServicePort {
                name: service_port.name.clone().unwrap_or_default(),
                protocol: protocol(service_port.protocol.as_deref())?,
                port: port(service_port.port, "port")?,
                node_port: optional_port(service_port.node_port, "nodePort")?,
                app_protocol: service_port.app_protocol.clone(),
            })
        })
        .collect::<Result<_, ProviderError>>()?;
    let ip_families = spec
        .ip_families
        .iter()
        .flatten()
        .map(|family| match family.as_str() {
            "IPv4" => Ok(wit::IpFamily::Ipv4),
            "IPv6" => Ok(wit::IpFamily::Ipv6),
            other => Err(invalid(format!("unknown IP family {other:?}"))),
        })
        .collect::<Result<_, ProviderError>>()?;
    Ok(wit::Service {
        name: metadata.name.clone().unwrap_or_default(),
        namespace: metadata.namespace.clone().unwrap_or_default(),
        uid: metadata.uid.clone().unwrap_or_default(),
        labels: pairs(metadata.labels.as_ref()),
        annotations: pairs(metadata.annotations.as_ref()),
        service_type,
        ports,
        load_balancer_ip: spec.load_balancer_ip.filter(|ip| !ip.is_empty()),
        load_balancer_source_ranges: spec.load_balancer_source_ranges.unwrap_or_default(),
        external_traffic_policy: match spec.external_traffic_policy.as_deref() {
            Some("Local") => wit::TrafficPolicy::Local,
            _ => wit::TrafficPolicy::Cluster,
        },
        health_check_node_port: optional_port(spec.health_check_node_port, "healthCheckNodePort")?,
        ip_families,
        session_affinity: match spec.session_affinity.as_deref() {
            Some("ClientIP") => wit::SessionAffinity::ClientIp,
            _ => wit::SessionAffinity::None,
        },
        session_affinity_timeout_seconds: spec
            .session_affinity_config
            .and_then(|config| config.client_ip)
            .and_then(|client_ip| client_ip.timeout_seconds)
            .and_then(|seconds| u32::try_from(seconds).ok()),
        load_balancer_class: spec.load_balancer_class,
    })
}

fn address_type(name: &str) -> Option<wit::NodeAddressType> {
    Some(match name {
        "Hostname" => wit::NodeAddressType::Hostname,
        "InternalIP" => wit::NodeAddressType::InternalIp,
        "ExternalIP" => wit::NodeAddressType::ExternalIp,
        "InternalDNS" => wit::NodeAddressType::InternalDns,
        "ExternalDNS" => wit::NodeAddressType::ExternalDns,
        _ => return None,
    })
}

pub(crate) fn address_type_name(address_type: wit::NodeAddressType) -> &'static str {
    match address_type {
        wit::NodeAddressType::Hostname => "Hostname",
        wit::NodeAddressType::InternalIp => "InternalIP",
        wit::NodeAddressType::ExternalIp => "ExternalIP",
        wit::NodeAddressType::InternalDns => "InternalDNS",
        wit::NodeAddressType::ExternalDns => "ExternalDNS",
    }
}

fn to_wit_addresses(addresses: &[core::NodeAddress]) -> Vec<wit::NodeAddress> {
    // Address types this contract does not know are left out.
    addresses
        .iter()
        .filter_map(|address| {
            Some(wit::NodeAddress { address_type: address_type(&address.type_)?, address: address.address.clone() })
        })
        .collect()
}

/// What a provider reads of a Node.
pub(crate) fn node(node: &core::Node) -> wit::Node {
    let metadata = &node.metadata;
    let spec = node.spec.as_ref();
    let status = node.status.as_ref();
    let pod_cidrs = match (spec.and_then(|spec| spec.pod_cidrs.as_ref()), spec.and_then(|spec| spec.pod_cidr.as_ref()))
    {
        (Some(cidrs), _) if !cidrs.is_empty() => cidrs.clone(),
        (_, Some(cidr)) if !cidr.is_empty() => vec![cidr.clone()],
        _ => Vec::new(),
    };
    wit::Node {
        name: metadata.name.clone().unwrap_or_default(),
        uid: metadata.uid.clone().unwrap_or_default(),
        provider_id: spec.and_then(|spec| spec.provider_id.clone()).filter(|id| !id.is_empty()),
        labels: pairs(metadata.labels.as_ref()),
        annotations: pairs(metadata.annotations.as_ref()),
        addresses: to_wit_addresses(status.and_then(|status| status.addresses.as_deref()).unwrap_or_default()),
        pod_cidrs,
        conditions: status
            .and_then(|status| status.conditions.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|condition| wit::NodeCondition {
                status: match condition.status.as_str() {
                    "True" => wit::ConditionStatus::True,
                    "False" => wit::ConditionStatus::False,
                    _ => wit::ConditionStatus::Unknown,
                },
                condition_type: condition.type_.clone(),
                reason: condition.reason.clone(),
                message: condition.message.clone(),
            })
            .collect(),
        taints: spec
            .and_then(|spec| spec.taints.as_deref())
            .unwrap_or_default()
            .iter()
            .filter_map(|taint| {
                let effect = match taint.effect.as_str() {
                    "NoSchedule" => wit::TaintEffect::NoSchedule,
                    "PreferNoSchedule" => wit::TaintEffect::PreferNoSchedule,
                    "NoExecute" => wit::TaintEffect::NoExecute,
                    _ => return None,
                };
                Some(wit::Taint { key: taint.key.clone(), value: taint.value.clone(), effect })
            })
            .collect(),
    }
}

/// Addresses a provider returned, each checked.
pub(crate) fn node_addresses(addresses: Vec<wit::NodeAddress>) -> Result<Vec<core::NodeAddress>, ProviderError> {
    addresses
        .into_iter()
        .map(|address| {
            let is_ip =
                matches!(address.address_type, wit::NodeAddressType::InternalIp | wit::NodeAddressType::ExternalIp);
            if address.address.is_empty() || (is_ip && address.address.parse::<IpAddr>().is_err()) {
                return Err(ProviderError::InvalidResult(format!("bad node address {:?}", quoted(&address.address))));
            }
            Ok(core::NodeAddress {
                type_: address_type_name(address.address_type).to_owned(),
                address: address.address,
            })
        })
        .collect()
}

/// A load-balancer status a provider returned, checked.
pub(crate) fn load_balancer_status(status: wit::LoadBalancerStatus) -> Result<core::LoadBalancerStatus, ProviderError> {
    let ingress = status
        .ingress
        .into_iter()
        .map(|ingress| {
            if let Some(ip) = ingress.ip.as_deref().filter(|ip| ip.parse::<IpAddr>().is_err()) {
                return Err(ProviderError::InvalidResult(format!(
                    "load-balancer ingress IP {:?} is not an IP address",
                    quoted(ip)
                )));
            }
            if ingress.ip.is_none() && ingress.hostname.is_none() {
                return Err(ProviderError::InvalidResult("load-balancer ingress has neither IP nor host name".into()));
            }
            Ok(core::LoadBalancerIngress {
                ip: ingress.ip,
                hostname: ingress.hostname,
                ip_mode: ingress.ip_mode.map(|mode| match mode {
                    wit::IpMode::Vip => "VIP".to_owned(),
                    wit::IpMode::Proxy => "Proxy".to_owned(),
                }),
                ports: Some(ingress.ports).filter(|ports| !ports.is_empty()).map(|ports| {
                    ports
                        .into_iter()
                        .map(|port| core::PortStatus {
                            port: i32::from(port.port),
                            protocol: protocol_name(port.protocol).to_owned(),
                            error: port.error,
                        })
                        .collect()
                }),
            })
        })
        .collect::<Result<Vec<_>, ProviderError>>()?;
    Ok(core::LoadBalancerStatus { ingress: Some(ingress) })
}

/// Instance metadata a provider returned, checked.
pub(crate) fn instance_metadata(metadata: wit::InstanceMetadata) -> Result<InstanceMetadata, ProviderError> {
    Ok(InstanceMetadata {
        provider_id: metadata.provider_id,
        instance_type: metadata.instance_type,
        node_addresses: node_addresses(metadata.node_addresses)?,
        zone: metadata.zone,
        region: metadata.region,
        additional_labels: metadata.additional_labels.into_iter().map(|kv| (kv.key, kv.value)).collect(),
    })
}

/// A zone a provider returned.
pub(crate) fn zone(zone: wit::Zone) -> Zone {
    Zone { failure_domain: zone.failure_domain, region: zone.region }
}

/// A route for a provider.
pub(crate) fn to_wit_route(route: &Route) -> wit::Route {
    wit::Route {
        name: route.name.clone(),
        target_node: route.target_node.clone(),
        enable_node_addresses: route.enable_node_addresses,
        target_node_addresses: to_wit_addresses(&route.target_node_addresses),
        destination_cidr: route.destination_cidr.clone(),
        blackhole: route.blackhole,
    }
}

/// A route a provider returned, checked.
pub(crate) fn route(route: wit::Route) -> Result<Route, ProviderError> {
    if route.destination_cidr.parse::<ipnet::IpNet>().is_err() {
        return Err(ProviderError::InvalidResult(format!(
            "route {:?} has a bad destination {:?}",
            quoted(&route.name),
            quoted(&route.destination_cidr)
        )));
    }
    Ok(Route {
        name: route.name,
        target_node: route.target_node,
        enable_node_addresses: route.enable_node_addresses,
        target_node_addresses: node_addresses(route.target_node_addresses)?,
        destination_cidr: route.destination_cidr,
        blackhole: route.blackhole,
    })
}

/// The parts a provider supports.
pub(crate) fn parts(parts: WitParts) -> Parts {
    Parts {
        load_balancer: parts.contains(WitParts::LOAD_BALANCER),
        instances: parts.contains(WitParts::INSTANCES),
        instances_v2: parts.contains(WitParts::INSTANCES_V2),
        zones: parts.contains(WitParts::ZONES),
        clusters: parts.contains(WitParts::CLUSTERS),
        routes: parts.contains(WitParts::ROUTES),
    }
}

/// A batch's answers, one per node asked about.
///
/// # Errors
/// `InvalidResult` when the provider gave another number of answers.
pub(crate) fn batch_answers(
    answers: Vec<Result<batch::InstanceState, wit::CloudError>>,
    asked: usize,
) -> Result<BatchAnswers, ProviderError> {
    one_per_node(answers.len(), asked)?;
    let state = |state: batch::InstanceState| InstanceState { exists: state.exists, shut_down: state.shut_down };
    Ok(answers.into_iter().map(|answer| answer.map(state).map_err(cloud_error)).collect())
}

/// A metadata batch's answers, one per node asked about, each checked as
/// `instances-v2.metadata`'s answer is.
///
/// # Errors
/// `InvalidResult` when the provider gave another number of answers.
pub(crate) fn metadata_answers(
    answers: Vec<Result<wit::InstanceMetadata, wit::CloudError>>,
    asked: usize,
) -> Result<MetadataAnswers, ProviderError> {
    one_per_node(answers.len(), asked)?;
    Ok(answers.into_iter().map(|answer| answer.map_err(cloud_error).and_then(instance_metadata)).collect())
}

/// Refuses a batch's `answered` answers unless there is one per node of
/// the `asked`.
fn one_per_node(answered: usize, asked: usize) -> Result<(), ProviderError> {
    if answered == asked {
        return Ok(());
    }
    Err(ProviderError::InvalidResult(format!("{answered} answers for a batch of {asked} nodes")))
}

/// A provider's error, its message cut to [`MAX_TEXT`] as log records
/// are: what it costs in logs, events and metrics stays bounded whatever
/// the provider sends.
pub(crate) fn cloud_error(error: wit::CloudError) -> ProviderError {
    match error {
        wit::CloudError::InstanceNotFound => ProviderError::InstanceNotFound,
        wit::CloudError::NotImplemented => ProviderError::NotImplemented,
        wit::CloudError::ImplementedElsewhere => ProviderError::ImplementedElsewhere,
        wit::CloudError::Retry(retry) => {
            let delay = Duration::from_millis(retry.delay_ms).min(MAX_RETRY_DELAY);
            ProviderError::Retry { delay, message: bounded(retry.message) }
        }
        wit::CloudError::Other(message) => ProviderError::Cloud(bounded(message)),
    }
}

/// A value a provider returned, cut to quote it in an error.
pub(crate) fn quoted(value: &str) -> Cow<'_, str> {
    clip(value, MAX_QUOTED)
}

/// `text` cut to [`MAX_TEXT`] bytes, saying how much was cut.
pub(crate) fn bounded(text: String) -> String {
    match clip(&text, MAX_TEXT) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clipped) => clipped,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    #[test]
    fn a_batch_answers_once_per_node_asked() {
        let answers =
            vec![Ok(batch::InstanceState { exists: true, shut_down: true }), Err(wit::CloudError::NotImplemented)];
        let converted = vec![Ok(InstanceState { exists: true, shut_down: true }), Err(ProviderError::NotImplemented)];
        assert_eq!(batch_answers(answers.clone(), 2), Ok(converted));
        assert_eq!(
            batch_answers(answers, 3),
            Err(ProviderError::InvalidResult("2 answers for a batch of 3 nodes".into()))
        );
    }

    #[test]
    fn converts_a_load_balancer_service() {
        let service = core::Service {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("shop".into()),
                uid: Some("1234-5678".into()),
                annotations: Some([("a".to_owned(), "b".to_owned())].into()),
                ..Default::default()
            },
            spec: Some(core::ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(vec![core::ServicePort {
                    name: Some("http".into()),
                    port: 80,
                    node_port: Some(30080),
                    protocol: Some("UDP".into()),
                    ..Default::default()
                }]),
                external_traffic_policy: Some("Local".into()),
                health_check_node_port: Some(32000),
                ip_families: Some(vec!["IPv4".into(), "IPv6".into()]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let converted = super::service(&service).unwrap();
        assert_eq!(converted.service_type, wit::ServiceType::LoadBalancer);
        assert_eq!(converted.ports[0].protocol, wit::Protocol::Udp);
        assert_eq!(converted.ports[0].node_port, Some(30080));
        assert_eq!(converted.external_traffic_policy, wit::TrafficPolicy::Local);
        assert_eq!(converted.health_check_node_port, Some(32000));
        assert_eq!(converted.ip_families, [wit::IpFamily::Ipv4, wit::IpFamily::Ipv6]);
        assert_eq!(converted.annotations, [wit::KeyValue { key: "a".into(), value: "b".into() }]);
    }

    #[test]
    fn refuses_bad_ports() {
        let service = core::Service {
            spec: Some(core::ServiceSpec {
                ports: Some(vec![core::ServicePort { port: 70000, ..Default::default() }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(matches!(super::service(&service), Err(ProviderError::InvalidInput(_))));
    }

    #[test]
    fn checks_what_providers_return() {
        let bad = wit::LoadBalancerStatus {
            ingress: vec![wit::LoadBalancerIngress {
                ip: Some("not-an-ip".into()),
                hostname: None,
                ip_mode: None,
                ports: vec![],
            }],
        };
        assert!(matches!(load_balancer_status(bad), Err(ProviderError::InvalidResult(_))));
        let empty = wit::LoadBalancerStatus {
            ingress: vec![wit::LoadBalancerIngress { ip: None, hostname: None, ip_mode: None, ports: vec![] }],
        };
        assert!(load_balancer_status(empty).is_err());
        let address = wit::NodeAddress { address_type: wit::NodeAddressType::InternalIp, address: "10.0.0.300".into() };
        assert!(node_addresses(vec![address]).is_err());
        let huge = wit::NodeAddress { address_type: wit::NodeAddressType::InternalIp, address: "1".repeat(1 << 20) };
        let err = node_addresses(vec![huge]).unwrap_err().to_string();
        assert!(err.len() < 2 * MAX_QUOTED, "a returned value is quoted cut short: {} bytes", err.len());
    }

    #[test]
    fn a_provider_s_error_text_is_cut_where_it_enters_the_host() {
        let huge = "e".repeat(200 << 10);
        let ProviderError::Cloud(message) = cloud_error(wit::CloudError::Other(huge.clone())) else { panic!() };
        assert_eq!(message, format!("{}…[{} more bytes]", &huge[..MAX_TEXT], huge.len() - MAX_TEXT));
        let retry = wit::CloudError::Retry(wit::RetryAfter { delay_ms: 5, message: huge });
        let ProviderError::Retry { message, .. } = cloud_error(retry) else { panic!() };
        assert!(message.len() < MAX_TEXT + 32, "{}", message.len());
        let short = cloud_error(wit::CloudError::Other("quota exceeded".into()));
        assert_eq!(short, ProviderError::Cloud("quota exceeded".into()));
    }

    #[test]
    fn a_retry_delay_is_cut_to_the_longest_the_host_waits() {
        let asked =
            |delay_ms| cloud_error(wit::CloudError::Retry(wit::RetryAfter { delay_ms, message: String::new() }));
        let ProviderError::Retry { delay, .. } = asked(u64::MAX) else { panic!() };
        assert_eq!(delay, MAX_RETRY_DELAY);
        let ProviderError::Retry { delay, .. } = asked(30_000) else { panic!() };
        assert_eq!(delay, Duration::from_secs(30));
    }
}
