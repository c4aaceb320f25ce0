//! Registry credentials, from flags or from a Docker config JSON.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::DistributionError;

/// How to authenticate to a registry.
///
/// With [`Auth::Basic`] the client answers a `Basic` challenge with the
/// credentials, or trades them for a bearer token when the registry asks
/// for one (`Bearer realm=...`), as Docker Hub and most hosted registries
/// do.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Auth {
    /// No credentials.
    #[default]
    Anonymous,
    /// A user name and password (or token used as a password).
    Basic {
        /// The user name.
        username: String,
        /// The password; never printed.
        password: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Anonymous => f.write_str("Anonymous"),
            Auth::Basic { username, .. } => {
                f.debug_struct("Basic").field("username", username).field("password", &"<redacted>").finish()
            }
        }
    }
}

/// `~/.docker/config.json` and the `.dockerconfigjson` key of a
/// `kubernetes.io/dockerconfigjson` Secret: registries under `auths`.
#[derive(Deserialize)]
struct DockerConfig {
    auths: BTreeMap<String, Entry>,
}

/// One registry's entry: `auth` is base64 of `user:password`; some tools
/// write `username` and `password` instead.
#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl Auth {
    /// The credentials a Docker config JSON holds for `registry`
    /// (`host[:port]`), or [`Auth::Anonymous`] when it holds none.
    ///
    /// Reads the `auths` map of `~/.docker/config.json` and of a
    /// `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`, and the
    /// older `.dockercfg` shape (the same map at the top level). Keys match
    /// when their host and port equal `registry`, whatever their scheme and
    /// path (`https://registry.example/v1/` matches `registry.example`);
    /// `docker.io`, `index.docker.io` and `registry-1.docker.io` are one
    /// registry. Credential helpers (`credsStore`, `credHelpers`) are not
    /// run.
    ///
    /// # Errors
    /// When the JSON is malformed, or the matching entry's `auth` is not
    /// base64 of `user:password` and it has no `username` and `password`.
    ///
    /// ```
    /// use wasm_ccm_distribution::Auth;
    ///
    /// let json = br#"{"auths": {"registry.example:5000": {"auth": "YWxpY2U6czNjcmV0"}}}"#;
    /// let auth = Auth::from_docker_config(json, "registry.example:5000").unwrap();
    /// assert_eq!(auth, Auth::Basic { username: "alice".into(), password: "s3cret".into() });
    /// assert_eq!(Auth::from_docker_config(json, "other.example").unwrap(), Auth::Anonymous);
    /// ```
    pub fn from_docker_config(json: &[u8], registry: &str) -> Result<Auth, DistributionError> {
        let value: serde_json::Value =
            serde_json::from_slice(json).map_err(|err| DistributionError::DockerConfig(err.to_string()))?;
        let shape = |err: serde_json::Error| {
            DistributionError::DockerConfig(format!("expected an object of registries under \"auths\": {err}"))
        };
        let entries: BTreeMap<String, Entry> = if value.get("auths").is_some() {
            serde_json::from_value::<DockerConfig>(value).map_err(shape)?.auths
        } else {
            // `.dockercfg`: the registries at the top level.
            serde_json::from_value(value).map_err(shape)?
        };
        let wanted = canonical_host(registry);
        let Some((key, entry)) = entries.iter().find(|(key, _)| canonical_host(key) == wanted) else {
            return Ok(Auth::Anonymous);
        };
        if let Some(encoded) = entry.auth.as_deref().filter(|auth| !auth.is_empty()) {
            let decoded = STANDARD
                .decode(encoded.trim())
                .map_err(|err| DistributionError::DockerConfig(format!("the auth of {key:?} is not base64: {err}")))?;
            let decoded = String::from_utf8(decoded)
                .map_err(|_| DistributionError::DockerConfig(format!("the auth of {key:?} is not UTF-8")))?;
            let (username, password) = decoded.split_once(':').ok_or_else(|| {
                DistributionError::DockerConfig(format!("the auth of {key:?} is not base64 of user:password"))
            })?;
            return Ok(Auth::Basic { username: username.to_owned(), password: password.to_owned() });
        }
        match (&entry.username, &entry.password) {
            (Some(username), Some(password)) => {
                Ok(Auth::Basic { username: username.clone(), password: password.clone() })
            }
            _ => Err(DistributionError::DockerConfig(format!(
                "the entry {key:?} has neither auth nor username and password"
            ))),
        }
    }

    pub(crate) fn to_oci(&self) -> oci_client::secrets::RegistryAuth {
        match self {
            Auth::Anonymous => oci_client::secrets::RegistryAuth::Anonymous,
            Auth::Basic { username, password } => {
                oci_client::secrets::RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}

/// `host[:port]` of a config key or registry, lowercase, Docker Hub's
/// aliases folded into `docker.io`.
fn canonical_host(key: &str) -> String {
    let key = key.trim();
    let without_scheme = key.split_once("://").map_or(key, |(_, rest)| rest);
    let host = without_scheme.split('/').next().unwrap_or_default().to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_owned(),
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(username: &str, password: &str) -> Auth {
        Auth::Basic { username: username.to_owned(), password: password.to_owned() }
    }

    #[test]
    fn reads_auths_by_host_and_port() {
        let json = format!(
            r#"{{"auths": {{
                "https://registry.example:5000/v1/": {{"auth": "{}"}},
                "registry.example": {{"auth": "{}"}},
                "plain.example": {{"username": "carol", "password": "p"}}
            }}}}"#,
            STANDARD.encode("alice:pa:ss"),
            STANDARD.encode("bob:hunter2"),
        );
        let json = json.as_bytes();
        assert_eq!(Auth::from_docker_config(json, "registry.example:5000").unwrap(), basic("alice", "pa:ss"));
        assert_eq!(Auth::from_docker_config(json, "REGISTRY.example").unwrap(), basic("bob", "hunter2"));
        assert_eq!(Auth::from_docker_config(json, "plain.example").unwrap(), basic("carol", "p"));
        assert_eq!(Auth::from_docker_config(json, "registry.example:5001").unwrap(), Auth::Anonymous);
    }

    #[test]
    fn docker_hub_aliases_and_the_old_shape() {
        let json = format!(r#"{{"https://index.docker.io/v1/": {{"auth": "{}"}}}}"#, STANDARD.encode("d:h"));
        assert_eq!(Auth::from_docker_config(json.as_bytes(), "docker.io").unwrap(), basic("d", "h"));
        assert_eq!(Auth::from_docker_config(json.as_bytes(), "registry-1.docker.io").unwrap(), basic("d", "h"));
    }

    #[test]
    fn malformed_configs_are_refused() {
        let cases: [(&[u8], &str); 5] = [
            (b"not json", "invalid docker config: expected ident"),
            (br#"{"auths": {"r.example": {"auth": "%%%"}}}"#, "the auth of \"r.example\" is not base64"),
            (br#"{"auths": {"r.example": {"auth": "bm9jb2xvbg=="}}}"#, "is not base64 of user:password"),
            (br#"{"auths": {"r.example": {}}}"#, "has neither auth nor username and password"),
            (br#"{"auths": {"r.example": 3}}"#, "expected an object of registries"),
        ];
        for (json, expected) in cases {
            let err = Auth::from_docker_config(json, "r.example").unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn debug_hides_the_password() {
        let printed = format!("{:?}", basic("alice", "s3cret"));
        assert!(printed.contains("alice") && !printed.contains("s3cret"), "{printed}");
    }
}
