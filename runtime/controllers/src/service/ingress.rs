//! Which ingress addresses a provider may not publish for a Service:
//! kube-proxy sends the cluster's own traffic for a Service's ingress IP to
//! that Service, so an answer naming loopback, a link-local address (the
//! cloud's metadata service among them), an unspecified, multicast or
//! broadcast address, or an address of the cluster's pod networks would
//! capture traffic meant for something else (the CVE-2020-8554 class).

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use k8s_openapi::api::core::v1::LoadBalancerStatus;

/// An ingress address a provider answered that is not published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the provider answered {address} as the load balancer's ingress, which is {why}; nothing was published")]
pub struct RefusedIngress {
    /// The address, as the provider wrote it.
    pub address: String,
    /// Why it is refused.
    pub why: &'static str,
}

/// The first address of `status` that may not be published, given the
/// cluster's pod networks `cluster_cidrs`.
pub fn refused(status: &LoadBalancerStatus, cluster_cidrs: &[IpNet]) -> Option<RefusedIngress> {
    let ingress = status.ingress.as_deref().unwrap_or_default();
    ingress.iter().filter_map(|ingress| ingress.ip.as_deref()).find_map(|text| {
        let why = match text.parse::<IpAddr>() {
            Err(_) => "not an IP address",
            Ok(address) => why_refused(canonical(address), cluster_cidrs)?,
        };
        Some(RefusedIngress { address: text.to_owned(), why })
    })
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

fn why_refused(address: IpAddr, cluster_cidrs: &[IpNet]) -> Option<&'static str> {
    let why = match address {
        _ if address.is_loopback() => "a loopback address",
        _ if address.is_unspecified() => "the unspecified address",
        _ if address.is_multicast() => "a multicast address",
        IpAddr::V4(v4) if v4.is_link_local() => "a link-local address (the cloud's metadata service among them)",
        IpAddr::V4(v4) if v4 == Ipv4Addr::BROADCAST => "the broadcast address",
        IpAddr::V6(v6) if v6.is_unicast_link_local() => "a link-local address",
        _ if cluster_cidrs.iter().any(|network| network.contains(&address)) => "in the cluster's pod networks",
        _ => return None,
    };
    Some(why)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::LoadBalancerIngress;

    use super::*;

    fn status(ips: &[&str]) -> LoadBalancerStatus {
        let ingress = ips.iter().map(|ip| LoadBalancerIngress { ip: Some((*ip).to_owned()), ..Default::default() });
        LoadBalancerStatus { ingress: Some(ingress.collect()) }
    }

    #[test]
    fn addresses_that_would_capture_the_cluster_s_traffic_are_refused() {
        let pods: Vec<IpNet> = vec!["10.244.0.0/16".parse().unwrap()];
        for (ip, why) in [
            ("127.0.0.1", "a loopback address"),
            ("::1", "a loopback address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("169.254.169.254", "a link-local address (the cloud's metadata service among them)"),
            ("fe80::1", "a link-local address"),
            ("0.0.0.0", "the unspecified address"),
            ("224.0.0.1", "a multicast address"),
            ("255.255.255.255", "the broadcast address"),
            ("10.244.3.7", "in the cluster's pod networks"),
            ("not-an-ip", "not an IP address"),
        ] {
            let refused = refused(&status(&["192.0.2.10", ip]), &pods);
            assert_eq!(refused, Some(RefusedIngress { address: ip.to_owned(), why }), "{ip}");
        }
    }

    #[test]
    fn a_load_balancer_s_own_addresses_are_published() {
        let pods: Vec<IpNet> = vec!["10.244.0.0/16".parse().unwrap()];
        assert_eq!(refused(&status(&["192.0.2.10", "2001:db8::1", "10.0.0.5"]), &pods), None);
        let hostname = LoadBalancerStatus {
            ingress: Some(vec![LoadBalancerIngress { hostname: Some("lb.example.com".into()), ..Default::default() }]),
        };
        assert_eq!(refused(&hostname, &pods), None);
    }
}
