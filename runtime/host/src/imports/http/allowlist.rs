//! Where a provider may send HTTP requests.
//!
//! An allow-list is a set of entries of the form `scheme://host[:ports]`:
//!
//! - `scheme` is `http`, `https` or `*`;
//! - `host` is a DNS name (`ec2.us-east-1.amazonaws.com`), a wildcard
//!   (`*.amazonaws.com` for any name below `amazonaws.com`, `*` for any host),
//!   an IP address (`10.0.0.5`, `[fd00::5]`) or a network (`10.0.0.0/8`,
//!   `[fd00::]/8`);
//! - `ports` is a port (`8443`), a range (`8000-8999`) or `*`; without it,
//!   the scheme's default port (443 for `https`, 80 for `http`).
//!
//! Beyond the URL, every address the host connects to is checked: loopback,
//! link-local (the cloud metadata address 169.254.169.254 among them),
//! private, shared, multicast, unspecified and other special-purpose
//! addresses (benchmarking, IETF, Azure WireServer, local-use NAT64, 6to4
//! and its relays, Teredo, discard-only, and IPv4 embedded in IPv6) are
//! refused unless an IP or network entry covers them and allows the
//! request's scheme and port, whether the URL names them or a DNS name
//! resolves to them.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ipnet::IpNet;
use url::{Host, Url};
use wasm_ccm_cloud::address::canonical_ip as canonical;

/// Why an entry does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid allow-list entry {entry:?}: {reason}")]
pub struct ParseError {
    entry: String,
    reason: &'static str,
}

/// Which schemes an entry allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
    Any,
}

/// Which hosts an entry allows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// Any host.
    Any,
    /// Exactly this DNS name, lower case.
    Name(String),
    /// Any name below this suffix (stored with its leading dot).
    Suffix(String),
    /// An address or a network.
    Network(IpNet),
}

/// Which ports an entry allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ports {
    /// The default port of the request's scheme.
    Default,
    Range(u16, u16),
    Any,
}

/// One entry of an allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    text: String,
    scheme: Scheme,
    host: HostPattern,
    ports: Ports,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Entry {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, ParseError> {
        let fail = |reason| ParseError { entry: text.to_owned(), reason };
        let (scheme, rest) = text.split_once("://").ok_or_else(|| fail("expected scheme://host[:port]"))?;
        let scheme = match scheme {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            "*" => Scheme::Any,
            _ => return Err(fail("the scheme must be http, https or *")),
        };
        if rest.contains(['?', '#', '@']) {
            return Err(fail("an entry names a host and ports, not a query or user"));
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (host, ports) = split_ports(rest).map_err(fail)?;
        let ports = match ports {
            None => Ports::Default,
            Some("*") => Ports::Any,
            Some(spec) => parse_ports(spec).ok_or_else(|| fail("a port is a number, a range like 8000-8999, or *"))?,
        };
        let host = parse_host(host).map_err(fail)?;
        Ok(Entry { text: text.to_owned(), scheme, host, ports })
    }
}

/// Splits `host[:ports]`, minding IPv6 brackets and network prefixes
/// (`[fd00::]/8:443`).
fn split_ports(rest: &str) -> Result<(&str, Option<&str>), &'static str> {
    let host_end = if rest.starts_with('[') {
        let close = rest.find(']').ok_or("unclosed [ in an IPv6 host")? + 1;
        let prefix = rest[close..]
            .strip_prefix('/')
            .map_or(0, |prefix| 1 + prefix.find(|c: char| !c.is_ascii_digit()).unwrap_or(prefix.len()));
        close + prefix
    } else {
        rest.rfind(':').unwrap_or(rest.len())
    };
    let (host, after) = rest.split_at(host_end);
    match after {
        "" => Ok((host, None)),
        _ => after.strip_prefix(':').map(|ports| (host, Some(ports))).ok_or("unexpected text after the host"),
    }
}

fn parse_ports(spec: &str) -> Option<Ports> {
    match spec.split_once('-') {
        Some((low, high)) => {
            let (low, high) = (low.parse().ok()?, high.parse().ok()?);
            (low <= high).then_some(Ports::Range(low, high))
        }
        None => spec.parse().ok().map(|port| Ports::Range(port, port)),
    }
}

fn parse_host(host: &str) -> Result<HostPattern, &'static str> {
    if host == "*" {
        return Ok(HostPattern::Any);
    }
    if let Some(suffix) = host.strip_prefix("*.") {
        if suffix.is_empty() || suffix.contains('*') {
            return Err("a wildcard host is *.<domain>");
        }
        return Ok(HostPattern::Suffix(format!(".{}", suffix.to_ascii_lowercase())));
    }
    let unbracketed = host.replacen('[', "", 1).replacen(']', "", 1);
    if let Ok(network) = unbracketed.parse::<IpNet>() {
        return Ok(HostPattern::Network(network.trunc()));
    }
    if let Ok(address) = unbracketed.parse::<IpAddr>() {
        return Ok(HostPattern::Network(IpNet::from(address)));
    }
    if host.contains('/') {
        return Err("an entry names a host and ports, not a path");
    }
    if host.is_empty() || host.contains(['*', '[', ']']) {
        return Err("the host must be a name, *.<domain>, *, an IP address or a network");
    }
    Ok(HostPattern::Name(host.trim_end_matches('.').to_ascii_lowercase()))
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// No entry allows the URL.
    #[error("{0} is not on the provider's allow-list")]
    NotAllowed(String),
    /// The URL is not one the host sends requests to.
    #[error("{0}")]
    BadUrl(String),
    /// The address is in a blocked range and no entry allows it.
    #[error("{address} ({host}) is a {range} address, which needs an IP or network entry on the allow-list")]
    BlockedAddress {
        /// The host name or IP the request named.
        host: String,
        /// The address it resolved to.
        address: IpAddr,
        /// What kind of address it is.
        range: &'static str,
    },
}

/// The longest host name DNS allows.
const MAX_HOST_NAME: usize = 253;

/// Where a request goes beyond its host: its scheme and port. An IP or
/// network entry lets a special address through only for the schemes and
/// ports it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    scheme: Scheme,
    port: u16,
}

impl Target {
    /// The scheme and port of `url`.
    ///
    /// # Errors
    /// When the scheme is not `http` or `https`, or there is no port.
    pub fn of(url: &Url) -> Result<Self, Denied> {
        let scheme = match url.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => return Err(Denied::BadUrl(format!("the scheme {other:?} is not http or https"))),
        };
        let port = url.port_or_known_default().ok_or_else(|| Denied::BadUrl(format!("{url} has no port")))?;
        Ok(Target { scheme, port })
    }
}

impl Entry {
    /// Whether the entry allows the target's scheme and port.
    fn allows(&self, target: Target) -> bool {
        let default_port = if target.scheme == Scheme::Https { 443 } else { 80 };
        let scheme_ok = self.scheme == Scheme::Any || self.scheme == target.scheme;
        let port_ok = match self.ports {
            Ports::Default => target.port == default_port,
            Ports::Range(low, high) => (low..=high).contains(&target.port),
            Ports::Any => true,
        };
        scheme_ok && port_ok
    }
}

/// A provider's allow-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Vec<Entry>,
}

impl AllowList {
    /// An allow-list of `entries`.
    ///
    /// # Errors
    /// On the first entry that does not parse.
    pub fn parse<I, S>(entries: I) -> Result<Self, ParseError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let entries = entries.into_iter().map(|entry| entry.as_ref().trim().parse()).collect::<Result<_, _>>()?;
        Ok(AllowList { entries })
    }

    /// The entries.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Checks a URL's scheme, host and port; addresses are checked when
    /// connecting, see [`AllowList::check_address`].
    ///
    /// # Errors
    /// When no entry allows the URL.
    pub fn check_url(&self, url: &Url) -> Result<(), Denied> {
        let target = Target::of(url)?;
        let host = url.host().ok_or_else(|| Denied::BadUrl(format!("{url} has no host")))?;
        if let Host::Domain(name) = host
            && name.len() > MAX_HOST_NAME
        {
            return Err(Denied::BadUrl(format!(
                "a host name of {} characters is longer than DNS allows ({MAX_HOST_NAME})",
                name.len()
            )));
        }
        let allowed = self.entries.iter().any(|entry| entry.allows(target) && host_matches(&entry.host, &host));
        if !allowed {
            return Err(Denied::NotAllowed(format!("{}://{}", url.scheme(), host_port(&host, target.port))));
        }
        if let Some(address) = literal_address(&host) {
            self.check_address(&host.to_string(), address, Some(target))?;
        }
        Ok(())
    }

    /// Checks an address the host is about to connect to for `host`, for a
    /// request to `target` (unknown: `None`).
    ///
    /// # Errors
    /// When the address is in a special-purpose range that no IP or network
    /// entry allowing the target covers (with no target, none does).
    pub fn check_address(&self, host: &str, address: IpAddr, target: Option<Target>) -> Result<(), Denied> {
        let address = canonical(address);
        let Some(range) = blocked_range(address) else {
            return Ok(());
        };
        let covered = target.is_some_and(|target| {
            self.entries.iter().any(|entry| {
                entry.allows(target)
                    && matches!(&entry.host, HostPattern::Network(network) if network.contains(&address))
            })
        });
        if covered { Ok(()) } else { Err(Denied::BlockedAddress { host: host.to_owned(), address, range }) }
    }
}

fn host_port(host: &Host<&str>, port: u16) -> String {
    format!("{host}:{port}")
}

fn literal_address(host: &Host<&str>) -> Option<IpAddr> {
    match host {
        Host::Ipv4(address) => Some(IpAddr::V4(*address)),
        Host::Ipv6(address) => Some(IpAddr::V6(*address)),
        Host::Domain(_) => None,
    }
}

fn host_matches(pattern: &HostPattern, host: &Host<&str>) -> bool {
    match (pattern, host) {
        (HostPattern::Any, _) => true,
        (HostPattern::Name(name), Host::Domain(domain)) => domain.trim_end_matches('.').eq_ignore_ascii_case(name),
        (HostPattern::Suffix(suffix), Host::Domain(domain)) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            domain.len() > suffix.len() && domain.ends_with(suffix.as_str())
        }
        (HostPattern::Network(network), host) => {
            literal_address(host).is_some_and(|address| network.contains(&canonical(address)))
        }
        _ => false,
    }
}

/// The kind of special-purpose range `address` is in, if any.
fn blocked_range(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => {
            let octets = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if v4.is_private() {
                Some("private")
            } else if octets[0] == 100 && (octets[1] & 0xc0) == 64 {
                Some("shared (carrier-grade NAT)")
            } else if octets[0] == 0 {
                Some("unspecified")
            } else if octets == [168, 63, 129, 16] {
                Some("cloud host agent (Azure WireServer)")
            } else if octets[..3] == [192, 0, 0] {
                Some("IETF protocol assignment")
            } else if octets[0] == 198 && (octets[1] & 0xfe) == 18 {
                Some("benchmarking")
            } else if octets[..3] == [192, 88, 99] {
                Some("6to4 relay")
            } else if v4.is_multicast() || v4.is_broadcast() || octets[0] >= 240 {
                Some("multicast or reserved")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            let first = segments[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if (first & 0xffc0) == 0xfe80 || (first & 0xffc0) == 0xfec0 {
                Some("link-local")
            } else if (first & 0xfe00) == 0xfc00 {
                Some("private")
            } else if v6.is_multicast() {
                Some("multicast or reserved")
            } else if segments[..3] == [0x64, 0xff9b, 1] {
                Some("local-use NAT64")
            } else if first == 0x2002 {
                Some("6to4")
            } else if segments[..2] == [0x2001, 0] {
                Some("Teredo")
            } else if segments[..4] == [0x100, 0, 0, 0] {
                Some("discard-only")
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> AllowList {
        AllowList::parse(entries).unwrap()
    }

    fn check(list: &AllowList, url: &str) -> Result<(), Denied> {
        list.check_url(&Url::parse(url).unwrap())
    }

    #[test]
    fn parses_the_grammar() {
        for entry in [
            "https://ec2.us-east-1.amazonaws.com",
            "https://*.amazonaws.com",
            "*://*:*",
            "http://127.0.0.1:8080",
            "http://10.0.0.0/8:80-90",
            "https://[fd00::1]:8443",
            "https://[fd00::]/8:*",
            "http://example.com:*",
        ] {
            assert!(entry.parse::<Entry>().is_ok(), "{entry}");
        }
        for entry in [
            "example.com",
            "ftp://example.com",
            "https://example.com/path",
            "https://example.com:99999",
            "https://example.com:90-80",
            "https://*example.com",
            "https://a.*.com",
            "https://user@example.com",
            "https://[fd00::1",
            "https://",
        ] {
            assert!(entry.parse::<Entry>().is_err(), "{entry}");
        }
    }

    #[test]
    fn matches_scheme_host_and_port() {
        let list =
            list(&["https://api.example.com", "http://*.internal.example:8000-8999", "https://[2001:db8::1]:8443"]);
        assert!(check(&list, "https://api.example.com/v1").is_ok());
        assert!(check(&list, "https://API.Example.com.:443/").is_ok());
        assert!(check(&list, "http://api.example.com/").is_err(), "scheme");
        assert!(check(&list, "https://api.example.com:8443/").is_err(), "port");
        assert!(check(&list, "https://evil.com/?https://api.example.com").is_err());
        assert!(check(&list, "http://a.internal.example:8080/").is_ok());
        assert!(check(&list, "http://internal.example:8080/").is_err(), "the suffix itself");
        assert!(check(&list, "http://a.internal.example:9000/").is_err());
        assert!(check(&list, "https://[2001:db8::1]:8443/").is_ok());
    }

    #[test]
    fn names_never_match_ip_literals() {
        let list = list(&["https://api.example.com"]);
        assert!(matches!(check(&list, "https://203.0.113.7/"), Err(Denied::NotAllowed(_))));
    }

    #[test]
    fn wildcard_host_still_blocks_special_addresses() {
        let list = list(&["*://*:*"]);
        assert!(check(&list, "https://203.0.113.7/").is_ok());
        for url in [
            "http://169.254.169.254/latest/meta-data",
            "http://127.0.0.1:8080/",
            "http://10.1.2.3/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://168.63.129.16/",
            "http://192.0.0.8/",
            "http://198.18.0.1/",
            "http://198.19.255.254/",
            "http://[64:ff9b:1::a00:1]/",
            "http://[2002:a9fe:a9fe::1]/",
            "http://[2002:cb00:7107::1]/",
            "http://[100::1]/",
            "http://[::ffff:0:a9fe:a9fe]/",
            "http://[::ffff:0:7f00:1]/",
            "http://192.88.99.1/",
            "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/",
            "http://[2001::1]/",
        ] {
            assert!(matches!(check(&list, url), Err(Denied::BlockedAddress { .. })), "{url}");
        }
    }

    #[test]
    fn ip_entries_allow_their_special_addresses_only() {
        let list = list(&["http://127.0.0.1:8080", "http://10.0.0.0/8:*"]);
        assert!(check(&list, "http://127.0.0.1:8080/").is_ok());
        assert!(check(&list, "http://127.0.0.2:8080/").is_err());
        assert!(check(&list, "http://10.9.8.7:1234/").is_ok());
        let http = |port| Some(Target { scheme: Scheme::Http, port });
        assert!(list.check_address("cloud.internal", "10.1.1.1".parse().unwrap(), http(80)).is_ok());
        assert!(list.check_address("cloud.internal", "192.168.1.1".parse().unwrap(), http(80)).is_err());
        assert!(list.check_address("metadata", "169.254.169.254".parse().unwrap(), http(80)).is_err());
        assert!(list.check_address("public", "203.0.113.1".parse().unwrap(), http(80)).is_ok());
        assert!(list.check_address("cloud.internal", "10.1.1.1".parse().unwrap(), None).is_err(), "no target");
    }

    #[test]
    fn a_network_entry_allows_its_own_scheme_and_ports_only() {
        let list = list(&["https://10.0.0.0/8:8443", "http://*:9999"]);
        assert!(check(&list, "https://10.1.2.3:8443/").is_ok());
        assert!(
            matches!(check(&list, "http://10.1.2.3:9999/"), Err(Denied::BlockedAddress { .. })),
            "the wildcard entry allows the URL, the network entry not its scheme and port"
        );
        let https = |port| Some(Target { scheme: Scheme::Https, port });
        assert!(list.check_address("cloud.internal", "10.1.1.1".parse().unwrap(), https(8443)).is_ok());
        assert!(list.check_address("cloud.internal", "10.1.1.1".parse().unwrap(), https(443)).is_err());
    }

    #[test]
    fn host_names_longer_than_dns_allows_are_refused() {
        let list = list(&["https://*"]);
        let long = format!("https://{}.example.com/", "a.".repeat(130));
        assert!(matches!(check(&list, &long), Err(Denied::BadUrl(why)) if why.contains("longer than DNS allows")));
        assert!(check(&list, "https://api.example.com/").is_ok());
    }

    #[test]
    fn empty_list_allows_nothing() {
        assert!(check(&AllowList::default(), "https://example.com/").is_err());
    }
}
