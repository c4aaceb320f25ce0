//! Where a provider comes from: `--provider`'s syntax.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use wasm_ccm_distribution::Reference;

use crate::SourceError;

/// The prefix of a ConfigMap location.
pub const CONFIGMAP_PREFIX: &str = "configmap:";

/// Where a provider's component is found.
///
/// Parsed from text:
/// - `oci://registry[:port]/repository[:tag]` or `...@sha256:<hex>`: an
///   OCI artifact, polled for changes of its tag;
/// - `configmap:NAMESPACE/NAME/KEY`: the `binaryData` key `KEY` of a
///   ConfigMap, watched through the API;
/// - anything else: a file path, polled for changes.
///
/// ```
/// use wasm_ccm_reload::Location;
///
/// let location: Location = "configmap:kube-system/providers/fake.wasm".parse().unwrap();
/// assert_eq!(
///     location,
///     Location::ConfigMap { namespace: "kube-system".into(), name: "providers".into(), key: "fake.wasm".into() }
/// );
/// assert!(matches!("oci://r.example/acme:v1".parse().unwrap(), Location::Oci(_)));
/// assert!(matches!("/opt/provider.wasm".parse().unwrap(), Location::File(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file.
    File(PathBuf),
    /// A key of a ConfigMap.
    ConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The `binaryData` key holding the component.
        key: String,
    },
    /// An OCI artifact.
    Oci(Reference),
}

impl Location {
    /// A short name for the kind of source, for metrics and logs: `file`,
    /// `configmap` or `oci`.
    pub fn kind(&self) -> &'static str {
        match self {
            Location::File(_) => "file",
            Location::ConfigMap { .. } => "configmap",
            Location::Oci(_) => "oci",
        }
    }

    /// A name for the provider, from its location: the file's stem, the
    /// key without `.wasm`, or the repository's last segment.
    pub fn default_name(&self) -> String {
        let name = match self {
            Location::File(path) => path.file_stem().map(|stem| stem.to_string_lossy().into_owned()),
            Location::ConfigMap { key, .. } => Some(key.strip_suffix(".wasm").unwrap_or(key).to_owned()),
            Location::Oci(reference) => reference.repository().rsplit('/').next().map(str::to_owned),
        };
        name.filter(|name| !name.is_empty()).unwrap_or_else(|| "provider".to_owned())
    }
}

/// Whether `name` is a valid DNS-1123 subdomain (ConfigMap names and
/// namespaces are stricter, but this catches typos).
fn dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !name.starts_with(['-', '.'])
        && !name.ends_with(['-', '.'])
}

/// Whether `key` is a valid ConfigMap key.
fn config_map_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 253 && key.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
}

impl FromStr for Location {
    type Err = SourceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.starts_with("oci://") {
            return text.parse().map(Location::Oci).map_err(|err| SourceError::Invalid(err.to_string()));
        }
        if let Some(rest) = text.strip_prefix(CONFIGMAP_PREFIX) {
            let invalid = |why: &str| {
                SourceError::Invalid(format!("{text:?}: {why}; expected {CONFIGMAP_PREFIX}NAMESPACE/NAME/KEY"))
            };
            let parts: Vec<&str> = rest.split('/').collect();
            let [namespace, name, key] = parts[..] else {
                return Err(invalid("three parts separated by /"));
            };
            if !dns_name(namespace) {
                return Err(invalid("the namespace is not a valid name"));
            }
            if !dns_name(name) {
                return Err(invalid("the name is not a valid name"));
            }
            if !config_map_key(key) {
                return Err(invalid("the key may hold only letters, digits, -, _ and ."));
            }
            return Ok(Location::ConfigMap { namespace: namespace.into(), name: name.into(), key: key.into() });
        }
        if text.is_empty() {
            return Err(SourceError::Invalid("the provider location is empty".to_owned()));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(SourceError::Invalid(format!(
                "{text:?}: unsupported scheme {scheme}://; use a file path, oci://... or {CONFIGMAP_PREFIX}NAMESPACE/NAME/KEY"
            )));
        }
        Ok(Location::File(PathBuf::from(text)))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::ConfigMap { namespace, name, key } => write!(f, "{CONFIGMAP_PREFIX}{namespace}/{name}/{key}"),
            Location::Oci(reference) => write!(f, "{reference}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind() {
        assert_eq!("./fake.wasm".parse::<Location>().unwrap(), Location::File("./fake.wasm".into()));
        let Location::Oci(reference) = "oci://127.0.0.1:5000/providers/fake@sha256:0000000000000000000000000000000000000000000000000000000000000000".parse().unwrap() else {
            panic!("not OCI")
        };
        assert_eq!(reference.repository(), "providers/fake");
        assert!(reference.digest().is_some());
        assert_eq!(
            "configmap:kube-system/wasm-ccm/aws.wasm".parse::<Location>().unwrap().to_string(),
            "configmap:kube-system/wasm-ccm/aws.wasm"
        );
    }

    #[test]
    fn refuses_malformed_locations() {
        for (text, expected) in [
            ("configmap:kube-system/wasm-ccm", "three parts"),
            ("configmap:Kube/wasm-ccm/a.wasm", "namespace is not a valid name"),
            ("configmap:ns/wasm-ccm/a b", "the key may hold only"),
            ("https://example.com/p.wasm", "unsupported scheme https://"),
            ("oci://", "invalid reference"),
            ("", "empty"),
        ] {
            let err = text.parse::<Location>().unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn default_names() {
        let name = |text: &str| text.parse::<Location>().unwrap().default_name();
        assert_eq!(name("/opt/providers/aws.wasm"), "aws");
        assert_eq!(name("configmap:ns/cm/fake.wasm"), "fake");
        assert_eq!(name("oci://r.example/providers/acme:v1"), "acme");
    }
}
