//! What the `provider push`, `inspect` and `verify` commands work on: a
//! file or an `oci://` reference.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use anyhow::Context;
use wasm_ccm_config::RegistryArgs;
use wasm_ccm_distribution::Reference;

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

/// Refuses registry flags for a target that is a file.
///
/// # Errors
/// When one is set.
pub fn refuse_registry_flags(registry: &RegistryArgs, target: &Target) -> anyhow::Result<()> {
    for (set, flag) in [
        (registry.registry_config.is_some(), "--registry-config"),
        (registry.registry_ca.is_some(), "--registry-ca-file"),
        (registry.plain_http, "--plain-http"),
    ] {
        anyhow::ensure!(!set, "{flag} applies to an oci:// provider only, not to the file {target}");
    }
    Ok(())
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
        assert!(refuse_registry_flags(&RegistryArgs::default(), &target).is_ok());
        let plain = RegistryArgs { plain_http: true, ..RegistryArgs::default() };
        assert_eq!(
            refuse_registry_flags(&plain, &target).unwrap_err().to_string(),
            "--plain-http applies to an oci:// provider only, not to the file p.wasm"
        );
    }
}
