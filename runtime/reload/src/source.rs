//! One provider source, whatever its kind, and how to build it from
//! settings.

use std::path::PathBuf;
use std::time::Duration;

use wasm_ccm_distribution::{RegistryOptions, Verification};
use wasm_ccm_host::Confinement;

use crate::{Candidate, ConfigMapSource, FileSource, Location, OciSource, SourceError};

/// The default interval between polls of a file or a registry.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(30);

/// How to build a [`Source`].
#[derive(Debug, Clone)]
pub struct SourceSettings {
    /// Where the provider is.
    pub location: Location,
    /// The pin and the public key every version must satisfy.
    pub verification: Verification,
    /// A file holding what `cosign sign-blob` wrote for a file source (a
    /// sigstore bundle or a bare signature); a ConfigMap source reads its
    /// signature from the sibling key `<key>.sigstore.json` or `<key>.sig`,
    /// an OCI source from the registry.
    pub signature: Option<PathBuf>,
    /// How to reach a registry.
    pub registry: RegistryOptions,
    /// How often a file or a registry is polled; a ConfigMap is watched.
    pub poll_interval: Duration,
    /// Roll-back protection for a signed OCI source: the oldest version
    /// accepted; a version older than the one serving is refused too.
    pub minimum_version: Option<semver::Version>,
    /// Which paths a file source and its signature may be read from.
    pub confinement: Confinement,
}

impl SourceSettings {
    /// Settings for `location`, without verification, with the default
    /// poll interval and registry options.
    pub fn new(location: Location) -> Self {
        SourceSettings {
            location,
            verification: Verification::none(),
            signature: None,
            registry: RegistryOptions::default(),
            poll_interval: DEFAULT_POLL_INTERVAL,
            minimum_version: None,
            confinement: Confinement::default(),
        }
    }

    /// Checks that the settings fit together: a signature file only for a
    /// file source, a non-zero poll interval.
    ///
    /// # Errors
    /// [`SourceError::Invalid`] naming what does not fit.
    pub fn check(&self) -> Result<(), SourceError> {
        if self.poll_interval.is_zero() {
            return Err(SourceError::Invalid("the poll interval must be longer than zero".to_owned()));
        }
        if self.signature.is_some() && !matches!(self.location, Location::File(_)) {
            return Err(SourceError::Invalid(format!(
                "a signature file applies to a file source only: a {} source's signature comes from {}",
                self.location.kind(),
                match self.location {
                    Location::Oci(_) => "the registry (cosign sign)",
                    _ => "the sibling key <key>.sigstore.json or <key>.sig",
                }
            )));
        }
        if self.minimum_version.is_some() && !matches!(self.location, Location::Oci(_)) {
            return Err(SourceError::Invalid(format!(
                "a minimum version applies to an OCI source only, whose manifest states its version; pin a {} source with its digest instead",
                self.location.kind()
            )));
        }
        if self.minimum_version.is_some() && self.verification.public_key.is_none() {
            return Err(SourceError::Invalid(
                "a minimum version needs a public key: an unsigned manifest's version proves nothing".to_owned(),
            ));
        }
        if self.signature.is_some() && self.verification.public_key.is_none() {
            return Err(SourceError::Invalid("a signature file needs a public key to check it with".to_owned()));
        }
        Ok(())
    }

    /// Builds the source; a ConfigMap source needs `client`.
    ///
    /// # Errors
    /// [`SourceError::Invalid`] when the settings do not fit together, or a
    /// ConfigMap source has no client.
    pub fn build(&self, client: Option<kube::Client>) -> Result<Source, SourceError> {
        self.check()?;
        let verification = self.verification.clone();
        Ok(match &self.location {
            Location::File(path) => Source::File(FileSource::new(
                path.clone(),
                self.signature.clone(),
                verification,
                self.confinement.clone(),
                self.poll_interval,
            )),
            Location::Oci(reference) => {
                let source = OciSource::new(reference.clone(), self.registry.clone(), verification, self.poll_interval);
                Source::Oci(match &self.minimum_version {
                    Some(minimum) => source.with_minimum_version(minimum.clone()),
                    None => source,
                })
            }
            Location::ConfigMap { namespace, name, key } => {
                let client = client.ok_or_else(|| {
                    SourceError::Invalid("a ConfigMap source needs a connection to the cluster".to_owned())
                })?;
                Source::ConfigMap(ConfigMapSource::new(client, namespace, name, key, verification))
            }
        })
    }
}

/// Where versions of a provider come from.
#[derive(Debug)]
pub enum Source {
    /// A file, polled.
    File(FileSource),
    /// A ConfigMap key, watched.
    ConfigMap(ConfigMapSource),
    /// An OCI artifact, polled.
    Oci(OciSource),
    /// Bytes given once, such as a component built into the binary; never
    /// changes.
    Fixed(Option<Candidate>),
}

impl Source {
    /// The next version, verified: the current one on the first call, then
    /// each change.
    ///
    /// # Errors
    /// [`SourceError::Unavailable`] when the source cannot be read now,
    /// [`SourceError::Verification`] when a new version fails its checks.
    pub async fn next(&mut self) -> Result<Candidate, SourceError> {
        match self {
            Source::File(source) => source.next().await,
            Source::ConfigMap(source) => source.next().await,
            Source::Oci(source) => source.next().await,
            Source::Fixed(candidate) => match candidate.take() {
                Some(candidate) => Ok(candidate),
                None => std::future::pending().await,
            },
        }
    }

    /// Where versions come from, for people.
    pub fn origin(&self) -> String {
        match self {
            Source::File(source) => source.origin(),
            Source::ConfigMap(source) => source.origin(),
            Source::Oci(source) => source.origin(),
            Source::Fixed(_) => "built-in".to_owned(),
        }
    }

    /// The kind of source: `file`, `configmap`, `oci` or `fixed`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::File(_) => "file",
            Source::ConfigMap(_) => "configmap",
            Source::Oci(_) => "oci",
            Source::Fixed(_) => "fixed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_files_are_for_file_sources() {
        let key = wasm_ccm_distribution::SigningKey::generate().unwrap().public_key().unwrap();
        let with = |location: &str, key: Option<wasm_ccm_distribution::PublicKey>| SourceSettings {
            signature: Some("p.sig".into()),
            verification: Verification { pin: None, public_key: key, ..Verification::none() },
            ..SourceSettings::new(location.parse().unwrap())
        };
        assert!(with("p.wasm", Some(key.clone())).check().is_ok());
        let err = with("oci://r.example/p:v1", Some(key.clone())).check().unwrap_err().to_string();
        assert!(err.contains("signature comes from the registry"), "{err}");
        let err = with("configmap:ns/cm/p.wasm", Some(key)).check().unwrap_err().to_string();
        assert!(err.contains("sibling key"), "{err}");
        let err = with("p.wasm", None).check().unwrap_err().to_string();
        assert!(err.contains("needs a public key"), "{err}");
    }

    #[test]
    fn a_minimum_version_needs_a_signed_oci_source() {
        let key = wasm_ccm_distribution::SigningKey::generate().unwrap().public_key().unwrap();
        let with = |location: &str, key: Option<wasm_ccm_distribution::PublicKey>| SourceSettings {
            minimum_version: Some(semver::Version::new(1, 2, 0)),
            verification: Verification { pin: None, public_key: key, ..Verification::none() },
            ..SourceSettings::new(location.parse().unwrap())
        };
        assert!(with("oci://r.example/p:v1", Some(key.clone())).check().is_ok());
        let err = with("oci://r.example/p:v1", None).check().unwrap_err().to_string();
        assert!(err.contains("a minimum version needs a public key"), "{err}");
        let err = with("p.wasm", Some(key)).check().unwrap_err().to_string();
        assert!(err.contains("a minimum version applies to an OCI source only"), "{err}");
    }
}
