//! Which ingress addresses a provider may not publish for a Service:
//! kube-proxy sends the cluster's own traffic for a Service's ingress IP to
//! that Service, so an answer naming loopback, a link-local address (the
//! cloud's metadata service among them), an unspecified, multicast or
//! broadcast address, an address of the cluster's pod or Service networks,
//! another Service's cluster IP or another provider's load balancer would
//! capture traffic meant for something else (the CVE-2020-8554 class).
//! Beyond those, the operator may narrow each provider's answers to its
//! own [`IngressRanges`].

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use k8s_openapi::api::core::v1::{LoadBalancerStatus, Service};
use wasm_ccm_cloud::address::canonical_ip as canonical;

use super::ownership;
use crate::framework::config::Settings;
use crate::framework::error::RefusedIngress;
use crate::providers::ingress_ranges::IngressRanges;

/// The cluster's networks no load balancer may answer.
#[derive(Debug, Clone, Copy)]
pub struct ClusterNetworks<'a> {
    /// The operator's settings: `--cluster-cidr`, `--service-cluster-ip-range`.
    pub settings: &'a Settings,
    /// The nodes' pod networks (`spec.podCIDRs`).
    pub pod_networks: &'a [IpNet],
}

/// The first address or host name of `status` that may not be published:
/// one refused for every provider given the cluster's `networks`, or one
/// outside the provider's `ranges`; or the whole answer, when it holds more
/// than `most` entries. An entry with both an address and a host name has
/// both checked.
pub fn refused(
    status: &LoadBalancerStatus,
    ranges: &IngressRanges,
    most: usize,
    networks: ClusterNetworks,
) -> Option<RefusedIngress> {
    let ingress = status.ingress.as_deref().unwrap_or_default();
    if ingress.len() > most {
        let address = format!("{} entries", ingress.len());
        return Some(RefusedIngress {
            address,
            why: format!("more than the {most} an answer for this Service may hold"),
            kept_by_another: false,
        });
    }
    ingress.iter().find_map(|ingress| {
        let address = ingress.ip.as_deref().and_then(|text| {
            let why = match text.parse::<IpAddr>() {
                Err(_) => "not an IP address",
                Ok(address) => why_refused(canonical(address), networks).or_else(|| {
                    (!ranges.allows_address(canonical(address))).then_some("outside the provider's ingress ranges")
                })?,
            };
            Some(RefusedIngress { address: text.to_owned(), why: why.to_owned(), kept_by_another: false })
        });
        address.or_else(|| {
            let name = ingress.hostname.as_deref()?;
            let why = if is_inside_the_cluster(name) {
                "a name inside the cluster"
            } else if !ranges.allows_name(name) {
                "outside the provider's ingress ranges"
            } else {
                return None;
            };
            Some(RefusedIngress { address: name.to_owned(), why: why.to_owned(), kept_by_another: false })
        })
    })
}

/// Whether `name` names something inside the cluster (a Service's DNS
/// name, `localhost`, a name of one label, resolved by search domains),
/// which no load balancer may claim whatever its ranges.
fn is_inside_the_cluster(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    !name.contains('.')
        || name == "localhost"
        || [".localhost", ".cluster.local", ".svc"].iter().any(|suffix| name.ends_with(suffix))
        || name.contains(".svc.")
}

/// The IP addresses a provider answered for one Service, parsed once to be
/// checked against every other Service's.
pub struct Answer<'a> {
    addresses: Vec<(IpAddr, &'a str)>,
}

impl<'a> Answer<'a> {
    /// The IP addresses of `status` that parse.
    pub fn new(status: &'a LoadBalancerStatus) -> Self {
        Answer { addresses: addresses(status).collect() }
    }

    /// Its IP addresses.
    pub fn addresses(&self) -> impl Iterator<Item = IpAddr> {
        self.addresses.iter().map(|(address, _)| *address)
    }

    /// The first of the addresses, the answer for `service`, that `other`
    /// already has: as a cluster IP, or as the ingress of a load balancer
    /// that `ours` does not say is this provider's own (a provider may
    /// share its own addresses between its Services).
    pub fn taken_by(
        &self,
        service: &Service,
        other: &Service,
        ours: impl Fn(&Service) -> bool,
    ) -> Option<RefusedIngress> {
        if self.addresses.is_empty() || other.metadata.uid == service.metadata.uid {
            return None;
        }
        let (address, as_what) = if let Some(text) = first_shared(&self.addresses, cluster_ips(other)) {
            (text, "the cluster IP")
        } else {
            let address = first_shared(&self.addresses, published(other)).filter(|_| !ours(other))?;
            if published(service).any(|ip| Some(ip) == self.ip(address)) && claimed_first(service, other) {
                return None;
            }
            (address, "the load balancer ingress")
        };
        let namespace = other.metadata.namespace.as_deref().unwrap_or_default();
        let name = other.metadata.name.as_deref().unwrap_or_default();
        Some(RefusedIngress {
            address: address.to_owned(),
            why: format!("{as_what} of Service {namespace}/{name}"),
            kept_by_another: as_what == "the load balancer ingress",
        })
    }

    /// The IP address of `text`, one of the answer's.
    fn ip(&self, text: &str) -> Option<IpAddr> {
        self.addresses.iter().find(|(_, answered)| *answered == text).map(|(address, _)| *address)
    }
}

/// Whether `service` claimed its load balancer before `other`, both by
/// records this controller wrote: by the records' times, then by namespace
/// and name, so that of two Services publishing one address (from before a
/// restart, say) each lane finds the same one keeps it.
fn claimed_first(service: &Service, other: &Service) -> bool {
    let (Some(ours), Some(theirs)) = (ownership::claimed_at(service), ownership::claimed_at(other)) else {
        return false;
    };
    let key = |service: &Service| (service.metadata.namespace.clone(), service.metadata.name.clone());
    (ours.0, key(service)) < (theirs.0, key(other))
}

/// Whether `service` publishes `address`, an address as a provider wrote it.
pub fn publishes(service: &Service, address: &str) -> bool {
    address.parse().is_ok_and(|address| published(service).any(|ip| ip == canonical(address)))
}

/// The IP addresses `service` publishes.
fn published(service: &Service) -> impl Iterator<Item = IpAddr> {
    let published = service.status.as_ref().and_then(|status| status.load_balancer.as_ref());
    published.into_iter().flat_map(addresses).map(|(address, _)| address)
}

/// The text of the first of `answered` that is one of `theirs`.
fn first_shared<'t>(answered: &[(IpAddr, &'t str)], mut theirs: impl Iterator<Item = IpAddr>) -> Option<&'t str> {
    theirs.find_map(|ip| answered.iter().find(|(address, _)| *address == ip).map(|(_, text)| *text))
}

/// The IP addresses `service` holds: its cluster IPs and the ingress of
/// its published load balancer, those that parse.
pub(super) fn held_addresses(service: &Service) -> impl Iterator<Item = IpAddr> {
    cluster_ips(service).chain(published(service))
}

/// The cluster IPs of `service` that parse.
fn cluster_ips(service: &Service) -> impl Iterator<Item = IpAddr> {
    let cluster_ips = service.spec.as_ref().and_then(|spec| spec.cluster_ips.as_deref()).unwrap_or_default();
    cluster_ips.iter().filter_map(|ip| ip.parse().ok()).map(canonical)
}

/// The IP addresses of `status` that parse, with their text.
fn addresses(status: &LoadBalancerStatus) -> impl Iterator<Item = (IpAddr, &str)> {
    let ingress = status.ingress.as_deref().unwrap_or_default();
    ingress
        .iter()
        .filter_map(|ingress| ingress.ip.as_deref())
        .filter_map(|text| Some((canonical(text.parse().ok()?), text)))
}

fn why_refused(address: IpAddr, networks: ClusterNetworks) -> Option<&'static str> {
    let settings = networks.settings;
    let within = |networks: &[IpNet]| networks.iter().any(|network| network.contains(&address));
    let why = match address {
        _ if address.is_loopback() => "a loopback address",
        _ if address.is_unspecified() => "the unspecified address",
        _ if address.is_multicast() => "a multicast address",
        IpAddr::V4(v4) if v4.is_link_local() => "a link-local address (the cloud's metadata service among them)",
        IpAddr::V4(v4) if v4 == Ipv4Addr::BROADCAST => "the broadcast address",
        IpAddr::V6(v6) if v6.is_unicast_link_local() => "a link-local address",
        _ if within(&settings.cluster_cidrs) || within(networks.pod_networks) => "in the cluster's pod networks",
        _ if within(&settings.service_cidrs) => "in the cluster's Service networks",
        _ => return None,
    };
    Some(why)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{LoadBalancerIngress, ServiceStatus};

    use super::*;
    use crate::fixtures::ServiceFixture;
    use crate::providers::policy::MAX_INGRESS;

    fn status(ips: &[&str]) -> LoadBalancerStatus {
        let ingress = ips.iter().map(|ip| LoadBalancerIngress { ip: Some((*ip).to_owned()), ..Default::default() });
        LoadBalancerStatus { ingress: Some(ingress.collect()) }
    }

    fn hostname(name: &str) -> LoadBalancerStatus {
        LoadBalancerStatus {
            ingress: Some(vec![LoadBalancerIngress { hostname: Some(name.to_owned()), ..Default::default() }]),
        }
    }

    fn settings() -> Settings {
        Settings {
            cluster_cidrs: vec!["10.244.0.0/16".parse().unwrap()],
            service_cidrs: vec!["10.96.0.0/12".parse().unwrap()],
            ..Settings::default()
        }
    }

    /// What `refused` says of `status` under `ranges`, in the cluster of
    /// [`settings`] whose nodes have no pod networks.
    fn check(status: &LoadBalancerStatus, ranges: &IngressRanges) -> Option<RefusedIngress> {
        refused(status, ranges, MAX_INGRESS, ClusterNetworks { settings: &settings(), pod_networks: &[] })
    }

    fn refusal(address: &str, why: &str) -> Option<RefusedIngress> {
        Some(RefusedIngress { address: address.to_owned(), why: why.to_owned(), kept_by_another: false })
    }

    #[test]
    fn addresses_that_would_capture_the_cluster_s_traffic_are_refused() {
        let any = IngressRanges::default();
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
            ("10.96.0.1", "in the cluster's Service networks"),
            ("::ffff:0:10.96.0.1", "in the cluster's Service networks"),
            ("64:ff9b::10.244.0.9", "in the cluster's pod networks"),
            ("::127.0.0.1", "a loopback address"),
            ("not-an-ip", "not an IP address"),
        ] {
            assert_eq!(check(&status(&["192.0.2.10", ip]), &any), refusal(ip, why), "{ip}");
        }
    }

    #[test]
    fn a_load_balancer_s_own_addresses_are_published() {
        let any = IngressRanges::default();
        assert_eq!(check(&status(&["192.0.2.10", "2001:db8::1", "10.0.0.5"]), &any), None);
        assert_eq!(check(&hostname("lb.example.com"), &any), None);
    }

    #[test]
    fn a_provider_s_answers_stay_in_its_ranges() {
        let ranges = IngressRanges::new(["203.0.113.0/24", "2001:db8::/32", "198.51.100.7", "*.lb.example.com"]);
        let ranges = ranges.unwrap();
        for allowed in [status(&["203.0.113.9", "2001:db8::5", "198.51.100.7"]), hostname("a.lb.example.com.")] {
            assert_eq!(check(&allowed, &ranges), None, "{allowed:?}");
        }
        let outside = "outside the provider's ingress ranges";
        assert_eq!(check(&status(&["203.0.113.9", "192.0.2.1"]), &ranges), refusal("192.0.2.1", outside));
        assert_eq!(check(&hostname("lb.example.com"), &ranges), refusal("lb.example.com", outside));
        assert_eq!(check(&hostname("evil.example.org"), &ranges), refusal("evil.example.org", outside));
        let addresses_only = IngressRanges::new(["203.0.113.0/24"]).unwrap();
        assert_eq!(check(&hostname("a.example.com"), &addresses_only), refusal("a.example.com", outside));
        assert_eq!(
            check(&status(&["127.0.0.1"]), &IngressRanges::new(["127.0.0.0/8"]).unwrap()),
            refusal("127.0.0.1", "a loopback address"),
            "ranges cannot let in what is always refused"
        );
    }

    #[test]
    fn the_nodes_pod_networks_are_refused_without_a_cluster_cidr() {
        let settings = Settings::default();
        let pod_networks = ["10.42.1.0/24".parse().unwrap()];
        let networks = ClusterNetworks { settings: &settings, pod_networks: &pod_networks };
        let any = IngressRanges::default();
        assert_eq!(
            refused(&status(&["10.42.1.5"]), &any, MAX_INGRESS, networks),
            refusal("10.42.1.5", "in the cluster's pod networks")
        );
        assert_eq!(refused(&status(&["10.42.2.5"]), &any, MAX_INGRESS, networks), None);
    }

    #[test]
    fn host_names_are_checked_beside_an_address_and_never_name_the_cluster() {
        let ranges = IngressRanges::new(["203.0.113.0/24", "*.lb.example.com"]).unwrap();
        let both = |ip: &str, name: &str| LoadBalancerStatus {
            ingress: Some(vec![LoadBalancerIngress {
                ip: Some(ip.to_owned()),
                hostname: Some(name.to_owned()),
                ..Default::default()
            }]),
        };
        let outside = "outside the provider's ingress ranges";
        assert_eq!(
            check(&both("203.0.113.9", "evil.attacker.example"), &ranges),
            refusal("evil.attacker.example", outside)
        );
        assert_eq!(check(&both("203.0.113.9", "a.lb.example.com"), &ranges), None);
        let inside = "a name inside the cluster";
        for name in [
            "kubernetes.default.svc.cluster.local",
            "kubernetes.default.svc",
            "kubernetes",
            "localhost",
            "x.cluster.local.",
        ] {
            assert_eq!(check(&hostname(name), &IngressRanges::default()), refusal(name, inside), "{name}");
        }
    }

    #[test]
    fn an_answer_holds_a_bounded_number_of_entries() {
        let ips: Vec<String> = (1..=5).map(|host| format!("203.0.113.{host}")).collect();
        let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
        let networks = ClusterNetworks { settings: &settings(), pod_networks: &[] };
        let refusal = refused(&status(&ips), &IngressRanges::default(), 4, networks).expect("refused");
        let why = "answered 5 entries as the load balancer's ingress, which is more than the 4 an answer for this Service may hold";
        assert!(refusal.to_string().contains(why), "{refusal}");
        assert_eq!(refused(&status(&ips[..4]), &IngressRanges::default(), 4, networks), None);
    }

    fn published(name: &str, uid: &str, ips: &[&str]) -> Service {
        let mut service = Service::test(name);
        service.metadata.uid = Some(uid.to_owned());
        service.status = Some(ServiceStatus { load_balancer: Some(status(ips)), ..ServiceStatus::default() });
        service
    }

    #[test]
    fn another_service_s_cluster_ip_or_another_provider_s_address_is_taken() {
        let mut api = Service::test("kubernetes");
        api.metadata.uid = Some("api".into());
        api.spec.as_mut().unwrap().cluster_ips = Some(vec!["10.0.0.1".into()]);
        let theirs = published("theirs", "theirs", &["192.0.2.20"]);
        let mine = published("mine", "mine", &["192.0.2.30"]);
        let others = [api, theirs, mine];
        let ours = |service: &Service| service.metadata.name.as_deref() == Some("mine");
        let web = published("web", "web", &[]);
        let answer = |ips: &[&str]| {
            let status = status(ips);
            others.iter().find_map(|other| Answer::new(&status).taken_by(&web, other, ours))
        };
        assert_eq!(answer(&["10.0.0.1"]), refusal("10.0.0.1", "the cluster IP of Service default/kubernetes"));
        let kept = RefusedIngress {
            address: "192.0.2.20".to_owned(),
            why: "the load balancer ingress of Service default/theirs".to_owned(),
            kept_by_another: true,
        };
        assert_eq!(answer(&["192.0.2.5", "192.0.2.20"]), Some(kept));
        assert_eq!(answer(&["192.0.2.30"]), None, "the provider may share its own address");
        assert_eq!(answer(&["192.0.2.5"]), None);
        let itself = published("web", "web", &["192.0.2.40"]);
        let own = status(&["192.0.2.40"]);
        assert_eq!(Answer::new(&own).taken_by(&web, &itself, |_| false), None, "its own answer");
    }
}
