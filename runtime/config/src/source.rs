//! The flags that say where a provider comes from, how it is verified, and
//! how often its source is checked for a new version.

use std::path::PathBuf;
use std::time::Duration;

use wasm_ccm_distribution::{LogKey, PublicKey, RegistryOptions, TransparencyLog, Verification};
use wasm_ccm_host::{Confinement, MAX_INPUT_FILE};
use wasm_ccm_reload::{DEFAULT_POLL_INTERVAL, Location, SourceSettings};

use crate::{OptionError, RegistryArgs};

/// Integrity, polling and registry flags of `run`.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    /// The sha256 digest every version of the provider must have
    /// (`sha256:<hex>` or the hex alone).
    #[arg(long = "provider-sha256", value_name = "DIGEST")]
    pub sha256: Option<String>,
    /// A cosign public key (PEM) every version must be signed with: in a
    /// registry by `cosign sign --key`, otherwise by `cosign sign-blob
    /// --key`.
    #[arg(long = "provider-public-key", value_name = "FILE")]
    pub public_key: Option<PathBuf>,
    /// For a file provider: the file holding what `cosign sign-blob` wrote
    /// for it, its sigstore bundle (`--bundle`) or its bare base64
    /// signature (watched with it). A ConfigMap provider's is the sibling
    /// key `<key>.sigstore.json` or `<key>.sig`; an OCI provider's is in
    /// the registry.
    #[arg(long = "provider-signature", value_name = "FILE", requires = "public_key")]
    pub signature: Option<PathBuf>,
    /// The transparency log's public key (PEM; Rekor's): a sigstore
    /// bundle's log entries must include one whose signed entry timestamp
    /// verifies with it and that records the bundle's signature. Without
    /// it, or `--provider-insecure-ignore-tlog`, a bundle with a log entry
    /// is refused; one without entries is checked by its signature alone.
    #[arg(long = "provider-tlog-public-key", value_name = "FILE", conflicts_with = "ignore_tlog")]
    pub tlog_public_key: Option<PathBuf>,
    /// Ignore the transparency log entries of sigstore bundles: the
    /// signature with the provider's public key alone decides.
    #[arg(long = "provider-insecure-ignore-tlog")]
    pub ignore_tlog: bool,
    /// How often a file provider, its configuration and credentials, and an
    /// OCI tag are checked for changes; a ConfigMap is watched.
    #[arg(long = "provider-poll-interval", value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    pub poll_interval: Duration,
    /// Roll-back protection for a signed OCI provider: every version's
    /// manifest must state a version (`org.opencontainers.image.version`)
    /// of at least this one, and a version older than the one serving is
    /// rejected. Needs `--provider-public-key`.
    #[arg(long = "provider-minimum-version", value_name = "SEMVER")]
    pub minimum_version: Option<semver::Version>,
    /// How to reach an OCI provider's registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Which paths a file provider, its signature and the key may be read
    /// from: anywhere for flags, beneath `--providers-root` for a
    /// providers file.
    #[arg(skip)]
    pub confinement: Confinement,
}

impl Default for SourceArgs {
    fn default() -> Self {
        SourceArgs {
            sha256: None,
            public_key: None,
            signature: None,
            tlog_public_key: None,
            ignore_tlog: false,
            poll_interval: DEFAULT_POLL_INTERVAL,
            minimum_version: None,
            registry: RegistryArgs::default(),
            confinement: Confinement::default(),
        }
    }
}

impl SourceArgs {
    /// Checks the flags against the provider's location and reads the key
    /// and registry files.
    ///
    /// # Errors
    /// When flags do not fit the location, or a file cannot be read.
    pub fn settings(&self, location: Location) -> Result<SourceSettings, OptionError> {
        self.settings_with_key(location, self.read_public_key()?)
    }

    /// The key of `--provider-public-key`, read within the confinement.
    ///
    /// # Errors
    /// When it cannot be read or is not a key.
    pub fn read_public_key(&self) -> Result<Option<PublicKey>, OptionError> {
        const OPTION: &str = "--provider-public-key";
        let Some(path) = &self.public_key else { return Ok(None) };
        let pem = self.confinement.read(path, MAX_INPUT_FILE).map_err(OptionError::reading(OPTION, path))?;
        let key = PublicKey::from_pem(&pem).map_err(|source| OptionError::NotAKey {
            option: OPTION,
            path: path.clone(),
            source,
        })?;
        Ok(Some(key))
    }

    /// What a sigstore bundle's log entries are checked against:
    /// `--provider-tlog-public-key`, read within the confinement, or
    /// nothing with `--provider-insecure-ignore-tlog`.
    ///
    /// # Errors
    /// When the log key cannot be read or is not a key.
    pub fn transparency_log(&self) -> Result<TransparencyLog, OptionError> {
        const OPTION: &str = "--provider-tlog-public-key";
        if self.ignore_tlog {
            return Ok(TransparencyLog::Ignore);
        }
        let Some(path) = &self.tlog_public_key else { return Ok(TransparencyLog::Unconfigured) };
        let pem = self.confinement.read(path, MAX_INPUT_FILE).map_err(OptionError::reading(OPTION, path))?;
        let key = LogKey::from_pem(&pem).map_err(|source| OptionError::NotAKey {
            option: OPTION,
            path: path.clone(),
            source,
        })?;
        Ok(TransparencyLog::Key(key))
    }

    /// As [`SourceArgs::settings`], with `public_key` rather than the
    /// flag's.
    ///
    /// # Errors
    /// When flags do not fit the location, or a file cannot be read.
    pub fn settings_with_key(
        &self,
        location: Location,
        public_key: Option<PublicKey>,
    ) -> Result<SourceSettings, OptionError> {
        let oci = matches!(location, Location::Oci(_));
        for (set, option) in [
            (self.registry.registry_config.is_some(), "--registry-config"),
            (self.registry.registry_ca.is_some(), "--registry-ca-file"),
            (self.registry.plain_http, "--registry-plain-http"),
        ] {
            if set && !oci {
                return Err(OptionError::NotInARegistry { option, location: location.to_string() });
            }
        }
        if let Some(pin) = &self.sha256 {
            let hex = pin.strip_prefix("sha256:").unwrap_or(pin);
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                return Err(OptionError::NotADigest { pin: pin.clone() });
            }
        }
        let registry = match &location {
            Location::Oci(reference) => self.registry.options(reference)?,
            _ => RegistryOptions::default(),
        };
        let settings = SourceSettings {
            location,
            verification: Verification {
                pin: self.sha256.clone(),
                public_key,
                transparency_log: self.transparency_log()?,
            },
            signature: self.signature.clone(),
            registry,
            poll_interval: self.poll_interval,
            minimum_version: self.minimum_version.clone(),
            confinement: self.confinement.clone(),
        };
        let option = if self.minimum_version.is_some() { "--provider-minimum-version" } else { "--provider-signature" };
        settings.check().map_err(|source| OptionError::Source { option, source: Box::new(source) })?;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_ccm_fleet::error_chain;

    fn settings(args: SourceArgs, location: &str) -> Result<SourceSettings, OptionError> {
        args.settings(location.parse().unwrap())
    }

    #[test]
    fn registry_flags_need_an_oci_provider() {
        let registry = RegistryArgs { plain_http: true, ..RegistryArgs::default() };
        let args = SourceArgs { registry, ..SourceArgs::default() };
        let err = settings(args.clone(), "/p.wasm").unwrap_err().to_string();
        assert_eq!(err, "--registry-plain-http applies to an oci:// provider only, not to /p.wasm");
        assert!(settings(args, "oci://127.0.0.1:5000/p:v1").unwrap().registry.plain_http);
    }

    #[test]
    fn pins_are_checked() {
        let args = SourceArgs { sha256: Some("sha256:abc".into()), ..SourceArgs::default() };
        assert!(settings(args, "/p.wasm").unwrap_err().to_string().contains("is not sha256:<64"));
        let pin = format!("sha256:{}", "ab".repeat(32));
        let args = SourceArgs { sha256: Some(pin.clone()), ..SourceArgs::default() };
        assert_eq!(settings(args, "/p.wasm").unwrap().verification.pin, Some(pin));
    }

    #[test]
    fn signature_files_are_for_file_providers() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("cosign.pub");
        let signing = wasm_ccm_distribution::SigningKey::generate().unwrap();
        std::fs::write(&key, signing.public_key_pem().unwrap()).unwrap();
        let args =
            SourceArgs { public_key: Some(key), signature: Some(dir.path().join("p.sig")), ..SourceArgs::default() };
        assert!(settings(args.clone(), "/p.wasm").is_ok());
        let err = error_chain(&settings(args, "configmap:ns/cm/p.wasm").unwrap_err());
        assert!(err.contains("sibling key <key>.sig"), "{err}");
    }
}
