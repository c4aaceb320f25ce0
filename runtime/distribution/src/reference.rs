//! `oci://` references to providers in a registry.

use std::fmt;
use std::str::FromStr;

use crate::DistributionError;
use crate::digest;

/// The scheme every reference starts with.
const SCHEME: &str = "oci://";

/// The tag used when a reference names neither a tag nor a digest.
pub const DEFAULT_TAG: &str = "latest";

/// A provider in an OCI registry: `oci://registry[:port]/repository[:tag]`
/// or `oci://registry[:port]/repository@sha256:<hex>`.
///
/// The registry is always explicit (there is no default registry). Without
/// a tag or a digest the tag is `latest`. When both are given
/// (`repository:tag@sha256:...`) the digest decides what is fetched and the
/// tag is only shown.
///
/// ```
/// use wasm_ccm_distribution::Reference;
///
/// let reference: Reference = "oci://registry.example:5000/providers/acme:v1".parse().unwrap();
/// assert_eq!(reference.registry(), "registry.example:5000");
/// assert_eq!(reference.repository(), "providers/acme");
/// assert_eq!(reference.tag(), Some("v1"));
/// assert_eq!(reference.digest(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl Reference {
    /// `host[:port]` of the registry.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository within the registry, such as `providers/acme`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if the reference has one (`latest` when none was written
    /// and there is no digest).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The manifest digest, `sha256:<hex>`, if the reference pins one.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The same repository pinned to the manifest `digest`; the tag, if
    /// any, is kept for display only.
    ///
    /// # Errors
    /// When `digest` is not `sha256:` and 64 hex digits.
    pub fn with_digest(&self, digest: &str) -> Result<Reference, DistributionError> {
        Ok(Reference { digest: Some(digest::parse(digest)?), ..self.clone() })
    }

    /// The same repository at `tag`, without a digest.
    ///
    /// # Errors
    /// When `tag` is not a valid tag.
    pub fn with_tag(&self, tag: &str) -> Result<Reference, DistributionError> {
        check_tag(tag).map_err(|reason| invalid(&format!("{}:{tag}", self.untagged()), reason))?;
        Ok(Reference { tag: Some(tag.to_owned()), digest: None, ..self.clone() })
    }

    /// `registry/repository`, the identity cosign signs.
    pub(crate) fn untagged(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The client library's reference: by digest when there is one.
    pub(crate) fn to_oci(&self) -> oci_client::Reference {
        match (&self.digest, &self.tag) {
            (Some(digest), _) => {
                oci_client::Reference::with_digest(self.registry.clone(), self.repository.clone(), digest.clone())
            }
            (None, tag) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                tag.clone().unwrap_or_else(|| DEFAULT_TAG.to_owned()),
            ),
        }
    }
}

impl FromStr for Reference {
    type Err = DistributionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| invalid(text, reason.to_owned());
        let rest = text.strip_prefix(SCHEME).ok_or_else(|| fail("a provider reference starts with oci://"))?;
        let (registry, path) = rest.split_once('/').ok_or_else(|| fail("expected oci://registry/repository"))?;
        check_registry(registry).map_err(|reason| invalid(text, reason))?;
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => (path, Some(digest::parse(digest).map_err(|err| fail(&err.to_string()))?)),
            None => (path, None),
        };
        let last = path.rfind('/').map_or(0, |slash| slash + 1);
        let (repository, tag) = match path[last..].find(':') {
            Some(colon) => (&path[..last + colon], Some(&path[last + colon + 1..])),
            None => (path, None),
        };
        check_repository(repository).map_err(|reason| invalid(text, reason))?;
        if let Some(tag) = tag {
            check_tag(tag).map_err(|reason| invalid(text, reason))?;
        }
        let tag = match (tag, &digest) {
            (Some(tag), _) => Some(tag.to_owned()),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_TAG.to_owned()),
        };
        Ok(Reference { registry: registry.to_owned(), repository: repository.to_owned(), tag, digest })
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

fn invalid(reference: &str, reason: String) -> DistributionError {
    DistributionError::InvalidReference { reference: reference.to_owned(), reason }
}

/// `host[:port]`: a DNS name or IPv4 address, or a bracketed IPv6 address.
fn check_registry(registry: &str) -> Result<(), String> {
    let (host, port) = if let Some(bracketed) = registry.strip_prefix('[') {
        let (address, after) =
            bracketed.split_once(']').ok_or_else(|| format!("registry {registry:?} has an unclosed '['"))?;
        address.parse::<std::net::Ipv6Addr>().map_err(|_| format!("registry {registry:?} is not an IPv6 address"))?;
        match after {
            "" => return Ok(()),
            after => ("", after.strip_prefix(':').ok_or_else(|| format!("registry {registry:?}: expected :port"))?),
        }
    } else {
        match registry.split_once(':') {
            Some((host, port)) => (host, port),
            None => (registry, "1"),
        }
    };
    if registry.is_empty() {
        return Err("the registry is empty".to_owned());
    }
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if !host.is_empty() && !host.split('.').all(label_ok) {
        return Err(format!("registry {registry:?} is not a host name"));
    }
    if port.parse::<u16>().map_or(true, |port| port == 0) {
        return Err(format!("registry {registry:?} has an invalid port"));
    }
    Ok(())
}

/// Path components of lowercase letters and digits, joined by `.`, `_`,
/// `__` or dashes, as the distribution specification allows.
fn check_repository(repository: &str) -> Result<(), String> {
    if repository.is_empty() {
        return Err("the repository is empty".to_owned());
    }
    if repository.len() > 255 {
        return Err("the repository is longer than 255 characters".to_owned());
    }
    for component in repository.split('/') {
        let bytes = component.as_bytes();
        let alphanumeric = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        let mut ok = !bytes.is_empty() && alphanumeric(bytes[0]) && alphanumeric(bytes[bytes.len() - 1]);
        let mut i = 0;
        while ok && i < bytes.len() {
            if alphanumeric(bytes[i]) {
                i += 1;
                continue;
            }
            // A separator: `.`, `_`, `__` or one or more `-`.
            let start = i;
            match bytes[i] {
                b'.' => i += 1,
                b'_' => i += if bytes.get(i + 1) == Some(&b'_') { 2 } else { 1 },
                b'-' => {
                    while bytes.get(i) == Some(&b'-') {
                        i += 1;
                    }
                }
                _ => ok = false,
            }
            ok = ok && i > start && bytes.get(i).is_some_and(|&b| alphanumeric(b));
        }
        if !ok {
            return Err(format!(
                "repository component {component:?} must be lowercase letters and digits separated by '.', '_', '__' or '-'"
            ));
        }
    }
    Ok(())
}

/// A word character then up to 127 word characters, dots and dashes.
fn check_tag(tag: &str) -> Result<(), String> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && word(tag.as_bytes()[0])
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!("tag {tag:?} must be 1 to 128 of [A-Za-z0-9_.-], not starting with '.' or '-'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(text: &str) -> Result<Reference, String> {
        text.parse::<Reference>().map_err(|err| err.to_string())
    }

    #[test]
    fn tag_defaults_to_latest() {
        let reference = parse("oci://localhost:5000/acme").unwrap();
        assert_eq!(reference.registry(), "localhost:5000");
        assert_eq!(reference.repository(), "acme");
        assert_eq!(reference.tag(), Some("latest"));
        assert_eq!(reference.digest(), None);
        assert_eq!(reference.to_string(), "oci://localhost:5000/acme:latest");
    }

    #[test]
    fn tags_digests_and_nested_repositories() {
        let reference = parse("oci://registry.example.com/team/providers/acme:v1.2.3-rc_1").unwrap();
        assert_eq!(reference.registry(), "registry.example.com");
        assert_eq!(reference.repository(), "team/providers/acme");
        assert_eq!(reference.tag(), Some("v1.2.3-rc_1"));

        let pinned = parse(&format!("oci://10.0.0.1:443/a/b@sha256:{HEX}")).unwrap();
        assert_eq!(pinned.tag(), None);
        assert_eq!(pinned.digest(), Some(format!("sha256:{HEX}").as_str()));
        assert_eq!(pinned.to_string(), format!("oci://10.0.0.1:443/a/b@sha256:{HEX}"));
        assert_eq!(pinned.to_oci().digest(), Some(format!("sha256:{HEX}").as_str()));

        let both = parse(&format!("oci://[::1]:5000/a:v1@sha256:{HEX}")).unwrap();
        assert_eq!(both.registry(), "[::1]:5000");
        assert_eq!(both.tag(), Some("v1"));
        assert_eq!(both.digest(), Some(format!("sha256:{HEX}").as_str()));
        assert_eq!(both.to_string().parse::<Reference>().unwrap(), both);
    }

    #[test]
    fn with_digest_keeps_the_tag_for_display() {
        let reference = parse("oci://r.example/acme:v1").unwrap();
        let pinned = reference.with_digest(&format!("sha256:{HEX}")).unwrap();
        assert_eq!(pinned.to_string(), format!("oci://r.example/acme:v1@sha256:{HEX}"));
        assert_eq!(pinned.to_oci().digest(), Some(format!("sha256:{HEX}").as_str()));
        assert_eq!(pinned.with_tag("v2").unwrap().to_string(), "oci://r.example/acme:v2");
        assert!(reference.with_digest("sha256:abc").is_err());
        assert!(reference.with_tag(".bad").is_err());
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let cases = [
            ("localhost:5000/acme", "starts with oci://"),
            ("https://localhost/acme", "starts with oci://"),
            ("oci://localhost", "expected oci://registry/repository"),
            ("oci:///acme", "registry is empty"),
            ("oci://reg_istry/acme", "is not a host name"),
            ("oci://localhost:99999/acme", "invalid port"),
            ("oci://localhost:/acme", "invalid port"),
            ("oci://localhost/", "repository is empty"),
            ("oci://localhost/Acme", "lowercase"),
            ("oci://localhost/acme//x", "lowercase"),
            ("oci://localhost/acme-/x", "lowercase"),
            ("oci://localhost/acme:", "tag \"\""),
            ("oci://localhost/acme:-v1", "tag \"-v1\""),
            ("oci://localhost/acme@sha256:abc", "64 hex digits"),
            ("oci://localhost/acme@md5:abc", "64 hex digits"),
        ];
        for (text, expected) in cases {
            let err = parse(text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.starts_with(&format!("invalid reference {text:?}")), "{err}");
        }
    }

    #[test]
    fn repository_separators() {
        for ok in ["a", "a.b", "a_b", "a__b", "a-b", "a---b", "a/b.c/d"] {
            assert!(check_repository(ok).is_ok(), "{ok}");
        }
        for bad in ["_a", "a_", "a___b", "a._b", "a..b", "a/", "/a", "a b", "a:b"] {
            assert!(check_repository(bad).is_err(), "{bad}");
        }
    }
}
