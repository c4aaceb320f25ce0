//! Where a registry may send the client: token realms, redirects and the
//! addresses names resolve to.
//!
//! A registry names other URLs the client then fetches: the token realm of
//! its `WWW-Authenticate` challenge and the targets of its redirects. A
//! hostile registry could point them at the host itself, at a cloud's
//! metadata service or at the cluster's private network. So loopback
//! addresses (and unspecified ones, which reach it), link-local ones (with
//! the metadata addresses outside that range) and private ones (RFC 1918,
//! unique local, shared CGNAT, IETF protocol assignments, benchmarking,
//! local-use NAT64) are refused, whether a URL names them or a name
//! resolves to them, and whether they are plain or embedded in an IPv6
//! address (IPv4-mapped or compatible, NAT64, 6to4, Teredo), unless the
//! registry itself is on that kind of address: a registry on loopback may
//! keep its token service on loopback, one in a private network its token
//! service in a private network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::{Attempt, Policy};

/// The most redirects followed for one request, as reqwest's default.
const MAX_REDIRECTS: usize = 10;

/// Metadata services outside the link-local ranges: Alibaba Cloud, Azure's
/// WireServer, and AWS's IPv6 instance metadata service.
const METADATA: [IpAddr; 3] = [
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V4(Ipv4Addr::new(168, 63, 129, 16)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
];

/// A kind of address a registry may not send the client to unless it is
/// itself on one; ordered from the most to the least dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Restricted {
    /// `127.0.0.0/8`, `::1`, and the unspecified addresses.
    Loopback,
    /// `169.254.0.0/16`, `fe80::/10` and the metadata addresses.
    LinkLocal,
    /// `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`, `fc00::/7`, the
    /// shared `100.64.0.0/10`, `192.0.0.0/24`, `198.18.0.0/15` and the
    /// local-use NAT64 `64:ff9b:1::/48`.
    Private,
}

impl Restricted {
    /// The kind of `ip`, or of the most dangerous IPv4 address it embeds,
    /// if it is one of these.
    pub(crate) fn of(ip: IpAddr) -> Option<Restricted> {
        match ip {
            IpAddr::V4(v4) => Restricted::of_v4(v4),
            IpAddr::V6(v6) => {
                embedded_v4(v6).into_iter().filter_map(Restricted::of_v4).chain(Restricted::of_v6(v6)).min()
            }
        }
    }

    fn of_v4(ip: Ipv4Addr) -> Option<Restricted> {
        let octets = ip.octets();
        if ip.is_loopback() || ip.is_unspecified() {
            Some(Restricted::Loopback)
        } else if ip.is_link_local() || METADATA.contains(&IpAddr::V4(ip)) {
            Some(Restricted::LinkLocal)
        } else if ip.is_private()
            || (octets[0] == 100 && octets[1] & 0xc0 == 64)
            || octets[..3] == [192, 0, 0]
            || (octets[0] == 198 && octets[1] & 0xfe == 18)
        {
            Some(Restricted::Private)
        } else {
            None
        }
    }

    fn of_v6(ip: Ipv6Addr) -> Option<Restricted> {
        let segments = ip.segments();
        if ip.is_loopback() || ip.is_unspecified() {
            Some(Restricted::Loopback)
        } else if segments[0] & 0xffc0 == 0xfe80 || METADATA.contains(&IpAddr::V6(ip)) {
            Some(Restricted::LinkLocal)
        } else if segments[0] & 0xfe00 == 0xfc00 || segments[..3] == [0x64, 0xff9b, 1] {
            Some(Restricted::Private)
        } else {
            None
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Restricted::Loopback => "a loopback address",
            Restricted::LinkLocal => "a link-local or metadata address",
            Restricted::Private => "a private address",
        }
    }
}

/// The IPv4 addresses an IPv6 address carries: IPv4-mapped and compatible
/// addresses, NAT64 (`64:ff9b::/96`), 6to4 (`2002::/16`) and both ends of
/// Teredo (`2001::/32`: the server, and the client's address inverted).
fn embedded_v4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    let bits = u128::from(ip);
    let low = Ipv4Addr::from(bits as u32);
    let segments = ip.segments();
    match segments {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 0, 0, 0, 0, _, _] => vec![low],
        [0x2002, ..] => vec![Ipv4Addr::from((bits >> 80) as u32)],
        [0x2001, 0, ..] => vec![Ipv4Addr::from((bits >> 64) as u32), Ipv4Addr::from(!(bits as u32))],
        _ => Vec::new(),
    }
}

/// The addresses one registry's answers may lead to.
#[derive(Debug, Clone, Default)]
pub(crate) struct Egress {
    /// The kinds of local address the registry itself is on.
    allowed: Vec<Restricted>,
}

impl Egress {
    /// The rules for a registry at `host` (a name or an IP address, without
    /// the port): the kinds of restricted address it is on are allowed.
    pub(crate) async fn for_registry(host: &str) -> Egress {
        let addresses: Vec<IpAddr> = match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) if host.eq_ignore_ascii_case("localhost") => vec![IpAddr::V6(Ipv6Addr::LOCALHOST)],
            // A name that does not resolve fails the first request instead.
            Err(_) => tokio::net::lookup_host((host, 0))
                .await
                .map(|found| found.map(|a| a.ip()).collect())
                .unwrap_or_default(),
        };
        let mut allowed: Vec<Restricted> = addresses.into_iter().filter_map(Restricted::of).collect();
        allowed.sort_unstable();
        allowed.dedup();
        Egress { allowed }
    }

    /// Refuses `ip` when it is loopback or link-local and the registry is
    /// not on such an address; the error says why.
    pub(crate) fn check_ip(&self, ip: IpAddr) -> Result<(), String> {
        match Restricted::of(ip) {
            Some(local) if !self.allowed.contains(&local) => {
                Err(format!("{ip} is {}, and the registry is not on one", local.describe()))
            }
            _ => Ok(()),
        }
    }

    /// Checks the address a URL names, when it names one; names are checked
    /// as they resolve.
    pub(crate) fn check_url(&self, url: &Url) -> Result<(), String> {
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self.check_ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => self.check_ip(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => Ok(()),
            None => Err("the URL has no host".to_owned()),
        }
    }

    /// The redirect policy: at most ten, each target checked.
    pub(crate) fn redirects(self: &Arc<Self>) -> Policy {
        let egress = Arc::clone(self);
        Policy::custom(move |attempt: Attempt<'_>| {
            let target = attempt.url().to_string();
            if attempt.previous().len() >= MAX_REDIRECTS {
                let reason = format!("more than {MAX_REDIRECTS} redirects");
                return attempt.error(Refusal { what: "a redirect to", target, reason });
            }
            match egress.check_url(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(reason) => attempt.error(Refusal { what: "a redirect to", target, reason }),
            }
        })
    }
}

/// A request the rules refused; found in a request error's sources.
#[derive(Debug, thiserror::Error)]
#[error("refused {what} {target}: {reason}")]
pub(crate) struct Refusal {
    /// "a redirect to", "a connection to".
    pub(crate) what: &'static str,
    /// The URL or name.
    pub(crate) target: String,
    /// Why.
    pub(crate) reason: String,
}

/// Resolves names with the system's resolver and refuses those that
/// resolve to an address the rules refuse.
pub(crate) struct GuardedResolver(pub(crate) Arc<Egress>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let egress = Arc::clone(&self.0);
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addresses: Vec<_> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(reason) = addresses.iter().find_map(|address| egress.check_ip(address.ip()).err()) {
                return Err(Box::new(Refusal { what: "a connection to", target: host, reason }) as _);
            }
            Ok(Box::new(addresses.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn loopback_link_local_metadata_and_private_addresses() {
        for loopback in ["127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1", "64:ff9b::7f00:1"] {
            assert_eq!(Restricted::of(ip(loopback)), Some(Restricted::Loopback), "{loopback}");
        }
        for link_local in [
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "fd00:ec2::254",
            "168.63.129.16",
            "100.100.100.200",
            "64:ff9b::a9fe:a9fe",
            "::ffff:169.254.169.254",
            "2002:a9fe:a9fe::1",
            // Teredo: the server 169.254.169.254, or the client (inverted).
            "2001:0:a9fe:a9fe::1",
            "2001:0:4136:e378:8000:63bf:5601:5601",
        ] {
            assert_eq!(Restricted::of(ip(link_local)), Some(Restricted::LinkLocal), "{link_local}");
        }
        for private in [
            "10.96.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "192.0.0.192",
            "198.18.0.1",
            "198.19.255.254",
            "fd00::1",
            "fc00::1",
            "64:ff9b::a60:1",
            "64:ff9b:1::a00:1",
            "2002:a00:1::1",
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
        ] {
            assert_eq!(Restricted::of(ip(private)), Some(Restricted::Private), "{private}");
        }
        for other in
            ["8.8.8.8", "203.0.113.7", "2001:db8::1", "2606:4700::1111", "2002:cb00:7107::1", "64:ff9b::808:808"]
        {
            assert_eq!(Restricted::of(ip(other)), None, "{other}");
        }
    }

    #[tokio::test]
    async fn a_registry_may_lead_only_where_it_is() {
        let public = Egress::for_registry("203.0.113.7").await;
        assert!(public.check_ip(ip("198.51.100.1")).is_ok());
        let err = public.check_ip(ip("169.254.169.254")).unwrap_err();
        assert_eq!(err, "169.254.169.254 is a link-local or metadata address, and the registry is not on one");
        assert!(public.check_ip(ip("127.0.0.1")).is_err());
        assert!(public.check_url(&"http://[::1]:5000/token".parse().unwrap()).is_err());
        assert!(public.check_url(&"https://auth.example/token".parse().unwrap()).is_ok(), "names resolve later");

        let loopback = Egress::for_registry("127.0.0.1").await;
        assert!(loopback.check_ip(ip("127.0.0.1")).is_ok(), "a registry on loopback keeps its tokens there");
        assert!(loopback.check_ip(ip("169.254.169.254")).is_err(), "but not the metadata service");
        let err = loopback.check_ip(ip("10.96.0.1")).unwrap_err();
        assert_eq!(err, "10.96.0.1 is a private address, and the registry is not on one");

        let private = Egress::for_registry("10.96.0.10").await;
        assert!(private.check_ip(ip("10.96.0.20")).is_ok(), "a registry in a private network keeps its tokens there");
        assert!(private.check_ip(ip("192.168.0.5")).is_ok());
        assert!(private.check_ip(ip("64:ff9b::a9fe:a9fe")).is_err(), "but not the metadata service");
        assert!(private.check_ip(ip("127.0.0.1")).is_err());
        assert!(Egress::for_registry("[::1]").await.check_ip(ip("127.0.0.2")).is_ok());
        assert!(Egress::for_registry("localhost").await.check_ip(ip("127.0.0.1")).is_ok());
    }
}
