//! Moving bytes to and from a registry: resolving tags, streaming blobs
//! with a cap, uploading blobs and manifests.

use futures_util::StreamExt as _;
use http::HeaderValue;
use oci_client::errors::DigestError;
use tracing::debug;

use crate::artifact::{ACCEPTED_MANIFESTS, Descriptor, OCI_MANIFEST};
use crate::{DistributionError, Reference, RegistryOptions, digest};

/// The manifest digest `reference`'s tag points to, with a `HEAD` request.
pub(crate) async fn resolve_with(
    client: &oci_client::Client,
    reference: &Reference,
    options: &RegistryOptions,
) -> Result<String, DistributionError> {
    let digest = client
        .fetch_manifest_digest(&reference.to_oci(), &options.auth.to_oci())
        .await
        .map_err(|err| DistributionError::registry("resolve", reference, err))?;
    debug!(%reference, %digest, "resolved");
    digest::parse(&digest)
}

/// A manifest pulled by its digest.
pub(crate) struct PinnedManifest {
    /// The reference pulled, pinned to [`PinnedManifest::digest`].
    pub(crate) reference: Reference,
    /// The manifest's digest: the reference's own, or the one its tag
    /// pointed to.
    pub(crate) digest: String,
    /// The manifest, checked against the digest.
    pub(crate) bytes: Vec<u8>,
}

/// Pins `reference` to its digest (resolving its tag when it has none) and
/// pulls that manifest, so that what follows reads exactly that version.
pub(crate) async fn pull_pinned_manifest(
    client: &oci_client::Client,
    reference: &Reference,
    options: &RegistryOptions,
) -> Result<PinnedManifest, DistributionError> {
    let digest = match reference.digest() {
        Some(digest) => digest.to_owned(),
        None => resolve_with(client, reference, options).await?,
    };
    let pinned = reference.with_digest(&digest)?;
    let (bytes, _) = client
        .pull_manifest_raw(&pinned.to_oci(), &options.auth.to_oci(), &ACCEPTED_MANIFESTS)
        .await
        .map_err(|err| DistributionError::registry("pull the manifest of", &pinned, err))?;
    digest::check("the manifest", &bytes, &digest)?;
    Ok(PinnedManifest { reference: pinned, digest, bytes: bytes.into() })
}

/// Streams the blob `descriptor` names, at most its stated size and at most
/// `limit` bytes, and checks its digest.
pub(crate) async fn fetch_blob(
    client: &oci_client::Client,
    reference: &Reference,
    descriptor: &Descriptor,
    limit: u64,
    what: &'static str,
) -> Result<Vec<u8>, DistributionError> {
    if descriptor.size > limit {
        return Err(DistributionError::TooLarge { what, size: descriptor.size, limit });
    }
    let mut stream = client
        .pull_blob_stream(&reference.to_oci(), &descriptor.to_oci())
        .await
        .map_err(|err| DistributionError::registry("pull a blob of", reference, err))?;
    let too_large = |received: u64| DistributionError::SizeMismatch { what, stated: descriptor.size, received };
    if let Some(length) = stream.content_length.filter(|&length| length > descriptor.size) {
        return Err(too_large(length));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(descriptor.size).unwrap_or(0));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| match err.get_ref().and_then(|inner| inner.downcast_ref::<DigestError>()) {
            Some(DigestError::VerificationError { expected, actual }) => {
                DistributionError::DigestMismatch { what, expected: expected.clone(), actual: actual.clone() }
            }
            _ => DistributionError::registry("pull a blob of", reference, err.into()),
        })?;
        if (bytes.len() + chunk.len()) as u64 > descriptor.size {
            return Err(too_large((bytes.len() + chunk.len()) as u64));
        }
        bytes.extend_from_slice(&chunk);
    }
    digest::check(what, &bytes, &descriptor.digest)?;
    Ok(bytes)
}

/// Uploads `bytes` as a blob of `reference`'s repository unless it is
/// there already.
pub(crate) async fn upload(
    client: &oci_client::Client,
    reference: &Reference,
    bytes: &[u8],
) -> Result<(), DistributionError> {
    let digest = digest::sha256_digest(bytes);
    let oci = reference.to_oci();
    if client.blob_exists(&oci, &digest).await.unwrap_or(false) {
        return Ok(());
    }
    client
        .push_blob(&oci, bytes.to_vec(), &digest)
        .await
        .map_err(|err| DistributionError::registry("push a blob to", reference, err))?;
    Ok(())
}

/// Puts the image manifest `raw` at `reference`; returns its digest.
pub(crate) async fn push_manifest(
    client: &oci_client::Client,
    reference: &Reference,
    raw: Vec<u8>,
) -> Result<String, DistributionError> {
    let digest = digest::sha256_digest(&raw);
    client
        .push_manifest_raw(&reference.to_oci(), raw, HeaderValue::from_static(OCI_MANIFEST))
        .await
        .map_err(|err| DistributionError::registry("push the manifest of", reference, err))?;
    Ok(digest)
}
