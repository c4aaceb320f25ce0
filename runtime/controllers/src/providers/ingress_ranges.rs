//! The ingress ranges of a provider's policy, and the entries the operator
//! writes them with: networks, IP addresses, host names and `*.suffix`es.

use std::net::IpAddr;
use std::str::FromStr;

use ipnet::IpNet;
use wasm_ccm_cloud::address::canonical_ip as canonical;

/// Where one provider's ingress answers must fall, set by the operator:
/// networks for IP addresses, names for host names. Empty, it narrows
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressRanges {
    networks: Vec<IpNet>,
    names: Vec<NamePattern>,
}

/// A host name an answer may be: exactly `name`, or any name below a
/// `*.suffix`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NamePattern {
    Exact(String),
    /// The suffix with its leading dot.
    Below(String),
}

impl NamePattern {
    fn matches(&self, name: &str) -> bool {
        match self {
            NamePattern::Exact(exact) => name == exact,
            NamePattern::Below(suffix) => name.len() > suffix.len() && name.ends_with(suffix.as_str()),
        }
    }
}

/// An entry of [`IngressRanges`] that is neither a network nor a host
/// name pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid ingress range {entry:?}: expected a network (203.0.113.0/24, 2001:db8::/32), an IP address, a host \
     name or *.suffix"
)]
pub struct InvalidIngressRange {
    /// The entry.
    pub entry: String,
}

impl FromStr for NamePattern {
    type Err = ();

    fn from_str(entry: &str) -> Result<Self, ()> {
        let name = entry.trim_end_matches('.').to_ascii_lowercase();
        let (pattern, checked) = match name.strip_prefix("*.") {
            Some(suffix) => (NamePattern::Below(format!(".{suffix}")), suffix),
            None => (NamePattern::Exact(name.clone()), name.as_str()),
        };
        let label_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        };
        (checked.len() <= 253 && checked.split('.').all(label_ok)).then_some(pattern).ok_or(())
    }
}

impl IngressRanges {
    /// The ranges of `entries`: networks (`203.0.113.0/24`), IP addresses,
    /// host names (`lb.example.com`) and name suffixes (`*.example.com`).
    ///
    /// # Errors
    /// The first entry that is none of these.
    pub fn new<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> Result<Self, InvalidIngressRange> {
        let mut ranges = IngressRanges::default();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if let Ok(network) = entry.parse::<IpNet>() {
                ranges.networks.push(network.trunc());
            } else if let Ok(address) = entry.parse::<IpAddr>() {
                ranges.networks.push(IpNet::from(canonical(address)));
            } else if let Ok(pattern) = entry.parse::<NamePattern>() {
                ranges.names.push(pattern);
            } else {
                return Err(InvalidIngressRange { entry: entry.to_owned() });
            }
        }
        Ok(ranges)
    }

    /// Whether the ranges narrow anything.
    pub fn is_empty(&self) -> bool {
        self.networks.is_empty() && self.names.is_empty()
    }

    /// Whether an answer may be `address`.
    pub fn allows_address(&self, address: IpAddr) -> bool {
        self.is_empty() || self.networks.iter().any(|network| network.contains(&address))
    }

    /// Whether an answer may be the host name `name`.
    pub fn allows_name(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        self.is_empty() || self.names.iter().any(|pattern| pattern.matches(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_name_networks_addresses_names_and_suffixes_only() {
        for bad in ["*", "*.", "a b", "example.com/24", "10.0.0.0/33", "-a.example.com", "*.*.example.com", ""] {
            assert_eq!(IngressRanges::new([bad]), Err(InvalidIngressRange { entry: bad.to_owned() }), "{bad}");
        }
        assert!(IngressRanges::new(Vec::<String>::new()).unwrap().is_empty());
    }
}
