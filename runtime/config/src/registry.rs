//! The flags that say how to reach a provider's registry.

use std::path::PathBuf;

use wasm_ccm_distribution::{Auth, Reference, RegistryOptions};
use wasm_ccm_host::MAX_INPUT_FILE;

use crate::OptionError;

/// How to reach a registry.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RegistryArgs {
    /// Registry credentials: a Docker config JSON, such as
    /// `~/.docker/config.json` or the `.dockerconfigjson` key of a
    /// `kubernetes.io/dockerconfigjson` Secret. Without it, anonymous.
    #[arg(long = "registry-config", value_name = "FILE")]
    pub registry_config: Option<PathBuf>,
    /// PEM CA certificates trusted for the registry besides the system's
    /// roots.
    #[arg(long = "registry-ca-file", value_name = "FILE")]
    pub registry_ca: Option<PathBuf>,
    /// Speak plain HTTP to the registry instead of HTTPS.
    #[arg(long = "plain-http", alias = "registry-plain-http")]
    pub plain_http: bool,
}

impl RegistryArgs {
    /// The options to reach `reference`'s registry with.
    ///
    /// # Errors
    /// When a file cannot be read or the Docker config is invalid.
    pub fn options(&self, reference: &Reference) -> Result<RegistryOptions, OptionError> {
        let read = |option, path: &PathBuf| {
            wasm_ccm_host::files::read(path, MAX_INPUT_FILE).map_err(OptionError::reading(option, path))
        };
        let mut options = RegistryOptions { plain_http: self.plain_http, ..RegistryOptions::default() };
        if let Some(path) = &self.registry_config {
            let json = read("--registry-config", path)?;
            options.auth = Auth::from_docker_config(&json, reference.registry())
                .map_err(|source| OptionError::RegistryConfig { path: path.clone(), source })?;
            if options.auth == Auth::Anonymous {
                tracing::warn!(
                    registry = reference.registry(),
                    "--registry-config {} has no credentials for this registry; going anonymously",
                    path.display()
                );
            }
        }
        if let Some(path) = &self.registry_ca {
            options.extra_ca_pem = Some(read("--registry-ca-file", path)?);
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_is_reached_as_the_flags_say() {
        let reference: Reference = "oci://127.0.0.1:5000/acme:v1".parse().unwrap();
        let plain = RegistryArgs { plain_http: true, ..RegistryArgs::default() };
        assert!(plain.options(&reference).unwrap().plain_http);
        let missing = RegistryArgs { registry_ca: Some("/nowhere/ca.pem".into()), ..RegistryArgs::default() };
        let err = missing.options(&reference).unwrap_err().to_string();
        assert_eq!(err, "cannot read --registry-ca-file /nowhere/ca.pem");
    }
}
