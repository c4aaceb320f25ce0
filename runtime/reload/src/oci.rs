//! A provider in an OCI registry, its tag polled for a new manifest digest.
//!
//! Each poll is one `HEAD` request ([`resolve`]); only a manifest digest not
//! tried before is pulled, by digest, so that what is verified and loaded
//! is what was resolved even if the tag moves again meanwhile.

use std::sync::Arc;
use std::time::Duration;

use wasm_ccm_distribution::{
    DistributionError, Reference, RegistryOptions, Verification, check_minimum_version, pull, resolve,
};

use crate::{Candidate, SourceError};

/// A provider pulled from a registry.
#[derive(Debug)]
pub struct OciSource {
    reference: Reference,
    options: RegistryOptions,
    verification: Verification,
    interval: Duration,
    tried: Option<String>,
    polled: bool,
    minimum_version: Option<semver::Version>,
}

impl OciSource {
    /// A source polling `reference` every `interval`; a reference pinned to
    /// a digest never changes.
    pub fn new(reference: Reference, options: RegistryOptions, verification: Verification, interval: Duration) -> Self {
        OciSource { reference, options, verification, interval, tried: None, polled: false, minimum_version: None }
    }

    /// Turns roll-back protection on: every version must state a version of
    /// at least `minimum` in its manifest
    /// ([`VERSION_ANNOTATION`](wasm_ccm_distribution::VERSION_ANNOTATION)),
    /// and carries it so that one older than the version serving is
    /// rejected.
    pub fn with_minimum_version(mut self, minimum: semver::Version) -> Self {
        self.minimum_version = Some(minimum);
        self
    }

    /// The reference polled.
    pub fn origin(&self) -> String {
        self.reference.to_string()
    }

    /// The next version: at once on the first call, then when the tag
    /// points to a manifest not tried before.
    ///
    /// # Errors
    /// [`SourceError::Unavailable`] when the registry cannot be reached,
    /// refuses the credentials, has no such tag, or has no signature for
    /// the new manifest yet (tried again at the next poll);
    /// [`SourceError::Verification`] when the new manifest is not a
    /// provider artifact, fails the signature or pin check, or its content
    /// does not match its digests (not tried again until the tag moves).
    pub async fn next(&mut self) -> Result<Candidate, SourceError> {
        loop {
            if self.polled {
                tokio::time::sleep(self.interval).await;
            }
            self.polled = true;
            let manifest = resolve(&self.reference, &self.options).await.map_err(|err| self.unavailable(&err))?;
            if self.tried.as_ref() == Some(&manifest) {
                continue;
            }
            let pinned = self.reference.with_digest(&manifest).map_err(|err| self.unavailable(&err))?;
            let pulled = pull(&pinned, &self.options, &self.verification).await.and_then(|pulled| {
                let version = match &self.minimum_version {
                    Some(minimum) => {
                        Some(check_minimum_version(&pinned.to_string(), pulled.version.as_deref(), minimum)?)
                    }
                    None => None,
                };
                Ok((pulled, version))
            });
            match pulled {
                Ok((pulled, version)) => {
                    self.tried = Some(manifest);
                    return Ok(Candidate {
                        wasm: Arc::from(pulled.wasm),
                        digest: pulled.digest,
                        origin: pinned.to_string(),
                        version,
                    });
                }
                Err(err) if transient(&err) => return Err(self.unavailable(&err)),
                Err(source) => {
                    self.tried = Some(manifest);
                    let digest = match &source {
                        DistributionError::PinMismatch { actual, .. } => Some(actual.clone()),
                        _ => None,
                    };
                    return Err(SourceError::Verification { origin: pinned.to_string(), digest, source });
                }
            }
        }
    }

    fn unavailable(&self, err: &DistributionError) -> SourceError {
        SourceError::Unavailable { origin: self.origin(), reason: err.to_string() }
    }
}

/// Whether a pull may succeed if tried again: the registry could not be
/// reached or refused access, or the signature is not there yet (`cosign
/// sign` runs after the push), as opposed to content that failed a check.
fn transient(err: &DistributionError) -> bool {
    matches!(
        err,
        DistributionError::Registry { .. }
            | DistributionError::Unauthorized { .. }
            | DistributionError::NotFound { .. }
            | DistributionError::Client(_)
            | DistributionError::MissingSignature(_)
    )
}
