//! Resolving and pulling providers.

use tracing::debug;

use crate::artifact;
use crate::session::Session;
use crate::transfer::{PinnedManifest, fetch_blob, pull_pinned_manifest, resolve_with};
use crate::{DistributionError, Reference, RegistryOptions, Verification, cosign, digest, version};

/// A provider pulled from a registry and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// The reference pulled, pinned to [`Pulled::manifest_digest`].
    pub reference: Reference,
    /// The digest of the manifest the bytes were found through.
    pub manifest_digest: String,
    /// The digest of [`Pulled::wasm`]: `sha256:<hex>`, computed over these
    /// very bytes.
    pub digest: String,
    /// The component.
    pub wasm: Vec<u8>,
    /// The version the manifest states
    /// ([`VERSION_ANNOTATION`](crate::VERSION_ANNOTATION)); signed with the
    /// manifest when a signature was verified.
    pub version: Option<String>,
}

/// The manifest digest `reference` names now: its digest if it has one,
/// otherwise what its tag points to, asked with a `HEAD` request.
///
/// Cheap enough to poll a tag for changes; pull the result with
/// [`Reference::with_digest`] so that what is pulled is what was resolved.
///
/// # Errors
/// When the registry cannot be reached, refuses the credentials, or has no
/// such tag.
pub async fn resolve(reference: &Reference, options: &RegistryOptions) -> Result<String, DistributionError> {
    if let Some(digest) = reference.digest() {
        return Ok(digest.to_owned());
    }
    resolve_with(&Session::open(reference, options).await?, reference).await
}

/// Pulls the provider `reference` names and verifies it.
///
/// In order: a tag is resolved to a manifest digest once, and from then on
/// everything is fetched by digest; the manifest's bytes must hash to that
/// digest and describe a provider artifact (see the crate docs) no larger
/// than [`RegistryOptions::max_size`]; with a pin, the layer digest the
/// manifest states must be the pin; with a public key, a cosign signature
/// of that manifest digest must verify (a sigstore bundle among its OCI
/// 1.1 referrers, as cosign v3 signs, or a signature under the tag
/// `sha256-<hex>.sig`, as earlier cosigns do); the layer is streamed with the size
/// cap and its bytes must hash to the layer digest the manifest states (and
/// so to the pin). The bytes returned are the bytes hashed. A layer refused
/// by its stated size or digest is never downloaded.
///
/// # Errors
/// Any failure of these steps, as a [`DistributionError`] naming it.
pub async fn pull(
    reference: &Reference,
    options: &RegistryOptions,
    verification: &Verification,
) -> Result<Pulled, DistributionError> {
    let session = Session::open(reference, options).await?;
    let PinnedManifest { reference: pinned, digest: manifest_digest, bytes: manifest } =
        pull_pinned_manifest(&session, reference).await?;
    let layer = artifact::provider_layer(&pinned, &manifest, options.max_size)?;
    // Refused from the manifest, before the layer is downloaded; the bytes
    // are checked against the same digest once they are.
    digest::check_pin(&layer.digest, verification.pin.as_deref())?;
    if let Some(key) = &verification.public_key {
        cosign::verify(&session, &pinned, &manifest_digest, &manifest, key, &verification.transparency_log).await?;
    }
    let wasm = fetch_blob(&session, &pinned, &layer, options.max_size, "the provider layer").await?;
    let digest = digest::check("the provider layer", &wasm, &layer.digest)?;
    digest::check_pin(&digest, verification.pin.as_deref())?;
    debug!(reference = %pinned, %digest, size = wasm.len(), "pulled");
    Ok(Pulled { reference: pinned, manifest_digest, digest, wasm, version: version::of_manifest(&manifest) })
}
