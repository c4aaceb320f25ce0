//! What the `provider push`, `inspect` and `verify` commands work on: a
//! file or an `oci://` reference, and how to reach its registry.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use anyhow::Context;
use wasm_ccm_distribution::{Auth, Reference, RegistryOptions};
use wasm_ccm_host::MAX_INPUT_FILE;

/// A provider component: a file, or an artifact in a registry.
#[derive(Debug, Clone)]
pub enum Target {
    /// A component file.
    File(PathBuf),
    /// `oci://registry[:port]/repository[:tag|@sha256:<hex>]`.
    Oci(Reference),
}

impl FromStr for Target {
    type Err = wasm_ccm_distribution::DistributionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.starts_with("oci://") { text.parse().map(Target::Oci) } else { Ok(Target::File(text.into())) }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::File(path) => write!(f, "{}", path.display()),
            Target::Oci(reference) => write!(f, "{reference}"),
        }
    }
}

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
    pub fn options(&self, reference: &Reference) -> anyhow::Result<RegistryOptions> {
        let mut options = RegistryOptions { plain_http: self.plain_http, ..RegistryOptions::default() };
        if let Some(path) = &self.registry_config {
            let json = wasm_ccm_host::files::read(path, MAX_INPUT_FILE)
                .with_context(|| format!("cannot read --registry-config {}", path.display()))?;
            options.auth = Auth::from_docker_config(&json, reference.registry())
                .with_context(|| format!("--registry-config {}", path.display()))?;
            if options.auth == Auth::Anonymous {
                tracing::warn!(
                    registry = reference.registry(),
                    "--registry-config {} has no credentials for this registry; going anonymously",
                    path.display()
                );
            }
        }
        if let Some(path) = &self.registry_ca {
            options.extra_ca_pem = Some(
                wasm_ccm_host::files::read(path, MAX_INPUT_FILE)
                    .with_context(|| format!("cannot read --registry-ca-file {}", path.display()))?,
            );
        }
        Ok(options)
    }

    /// Refuses registry flags for a target that is a file.
    ///
    /// # Errors
    /// When one is set.
    pub fn refuse_for(&self, target: &Target) -> anyhow::Result<()> {
        for (set, flag) in [
            (self.registry_config.is_some(), "--registry-config"),
            (self.registry_ca.is_some(), "--registry-ca-file"),
            (self.plain_http, "--plain-http"),
        ] {
            anyhow::ensure!(!set, "{flag} applies to an oci:// provider only, not to the file {target}");
        }
        Ok(())
    }
}

/// Reads a component file, of at most
/// [`DEFAULT_MAX_SIZE`](wasm_ccm_distribution::DEFAULT_MAX_SIZE).
///
/// # Errors
/// When it cannot be read or is larger.
pub fn read(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    wasm_ccm_host::files::read(path, wasm_ccm_distribution::DEFAULT_MAX_SIZE)
        .with_context(|| format!("cannot read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_files_or_references() {
        assert!(
            matches!("provider.wasm".parse::<Target>(), Ok(Target::File(path)) if path == std::path::Path::new("provider.wasm"))
        );
        let Ok(Target::Oci(reference)) = "oci://127.0.0.1:5000/acme:v1".parse::<Target>() else { panic!() };
        assert_eq!(reference.registry(), "127.0.0.1:5000");
        assert!("oci://".parse::<Target>().is_err());
    }

    #[test]
    fn registry_flags_need_a_registry() {
        let target: Target = "p.wasm".parse().unwrap();
        assert!(RegistryArgs::default().refuse_for(&target).is_ok());
        let plain = RegistryArgs { plain_http: true, ..RegistryArgs::default() };
        assert_eq!(
            plain.refuse_for(&target).unwrap_err().to_string(),
            "--plain-http applies to an oci:// provider only, not to the file p.wasm"
        );
        let reference: Reference = "oci://127.0.0.1:5000/acme:v1".parse().unwrap();
        assert!(plain.options(&reference).unwrap().plain_http);
    }
}
