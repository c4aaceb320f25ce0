//! A version of a provider offered by a source: bytes already verified.

use std::sync::Arc;

/// A provider's bytes, as a source offers them for loading.
///
/// Sources verify before they offer: [`Candidate::wasm`] is exactly what
/// the pin and the signature were checked against, and
/// [`Candidate::digest`] is computed over these very bytes.
#[derive(Clone)]
pub struct Candidate {
    /// The component.
    pub wasm: Arc<[u8]>,
    /// `sha256:<hex>` of [`Candidate::wasm`].
    pub digest: String,
    /// Where it came from, for people: a path, `configmap:ns/name/key`, or
    /// an OCI reference pinned to the manifest digest.
    pub origin: String,
    /// Its signed version, when roll-back protection is on: a version older
    /// than the one serving is rejected.
    pub version: Option<semver::Version>,
}

impl std::fmt::Debug for Candidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Candidate")
            .field("digest", &self.digest)
            .field("origin", &self.origin)
            .field("version", &self.version)
            .field("size", &self.wasm.len())
            .finish()
    }
}
