//! What a valid answer looks like: addresses, host names, statuses and
//! provider IDs as Kubernetes and the controllers accept them.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::{LoadBalancerStatus, NodeAddress};

/// Whether `name` is a DNS name of RFC 1123 labels, as Kubernetes requires
/// of host names.
pub fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A load-balancer status the service controller can publish: at least one
/// ingress, each with a valid IP address or host name.
pub fn status(status: &LoadBalancerStatus) -> Result<(), String> {
    let ingress = status.ingress.as_deref().unwrap_or_default();
    if ingress.is_empty() {
        return Err("the status has no ingress: the Service would get no address".to_owned());
    }
    for entry in ingress {
        match (entry.ip.as_deref(), entry.hostname.as_deref()) {
            (None, None) => return Err("an ingress has neither an IP address nor a host name".to_owned()),
            (Some(ip), _) if ip.parse::<IpAddr>().is_err() => {
                return Err(format!("ingress IP {ip:?} is not an IP address"));
            }
            (_, Some(hostname)) if !is_dns_name(hostname) => {
                return Err(format!("ingress host name {hostname:?} is not a valid DNS name"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The ingress addresses of a status, for messages.
pub fn describe(status: &LoadBalancerStatus) -> String {
    let addresses: Vec<&str> =
        status.ingress.iter().flatten().filter_map(|entry| entry.ip.as_deref().or(entry.hostname.as_deref())).collect();
    if addresses.is_empty() { "no ingress".to_owned() } else { addresses.join(",") }
}

/// Node addresses the cloud node controller can set: at least one, IP
/// types holding IP addresses and name types holding DNS names.
pub fn node_addresses(addresses: &[NodeAddress]) -> Result<(), String> {
    if addresses.is_empty() {
        return Err("no addresses".to_owned());
    }
    for address in addresses {
        let valid = match address.type_.as_str() {
            "InternalIP" | "ExternalIP" => address.address.parse::<IpAddr>().is_ok(),
            "Hostname" | "InternalDNS" | "ExternalDNS" => is_dns_name(&address.address),
            other => return Err(format!("address type {other:?} is not a Kubernetes node address type")),
        };
        if !valid {
            return Err(format!("{} address {:?} is not valid", address.type_, address.address));
        }
    }
    Ok(())
}

/// A provider ID of the form `<provider name>://<id>`.
pub fn provider_id(provider_id: &str, provider_name: &str) -> Result<(), String> {
    match provider_id.strip_prefix(provider_name).and_then(|rest| rest.strip_prefix("://")) {
        Some(id) if !id.is_empty() => Ok(()),
        _ => Err(format!("provider ID {provider_id:?} is not of the form {provider_name}://<id>")),
    }
}

/// A provider name usable as the scheme of its provider IDs (RFC 3986).
pub fn scheme(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let valid = bytes.next().is_some_and(|first| first.is_ascii_lowercase())
        && bytes.all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"+-.".contains(&byte));
    if valid { Ok(()) } else { Err(format!("name {name:?} cannot be the scheme of provider IDs")) }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::LoadBalancerIngress;

    use super::*;

    fn address(type_: &str, address: &str) -> NodeAddress {
        NodeAddress { type_: type_.into(), address: address.into() }
    }

    #[test]
    fn addresses_and_names() {
        assert!(is_dns_name("ip-10-0-1-10.eu-west-1.compute.internal"));
        assert!(!is_dns_name("-bad.example") && !is_dns_name("a..b") && !is_dns_name("under_score"));
        assert!(node_addresses(&[address("InternalIP", "10.0.0.1"), address("Hostname", "node-a")]).is_ok());
        assert_eq!(node_addresses(&[]).unwrap_err(), "no addresses");
        assert_eq!(
            node_addresses(&[address("InternalIP", "node-a")]).unwrap_err(),
            "InternalIP address \"node-a\" is not valid"
        );
        assert!(provider_id("fake://i-1", "fake").is_ok());
        assert!(provider_id("aws:///eu-west-1a/i-1", "aws").is_ok());
        assert!(provider_id("i-1", "fake").is_err() && provider_id("fake://", "fake").is_err());
        assert!(scheme("fake").is_ok() && scheme("Fake").is_err() && scheme("").is_err());
    }

    #[test]
    fn statuses() {
        let ingress = |ip: Option<&str>, hostname: Option<&str>| LoadBalancerStatus {
            ingress: Some(vec![LoadBalancerIngress {
                ip: ip.map(Into::into),
                hostname: hostname.map(Into::into),
                ..Default::default()
            }]),
        };
        assert!(status(&ingress(Some("192.0.2.1"), None)).is_ok());
        assert!(status(&ingress(None, Some("lb-1.elb.example.com"))).is_ok());
        assert!(status(&ingress(Some("192.0.2.300"), None)).is_err());
        assert!(status(&ingress(None, None)).is_err());
        assert!(status(&LoadBalancerStatus::default()).is_err());
        assert_eq!(describe(&ingress(Some("192.0.2.1"), None)), "192.0.2.1");
    }
}
