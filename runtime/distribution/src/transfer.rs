//! Moving bytes to and from a registry: resolving tags, reading manifests
//! and streaming blobs with caps, uploading blobs and manifests.

use http::{HeaderValue, Method};
use tracing::debug;

use crate::artifact::{ACCEPTED_MANIFESTS, Descriptor, OCI_MANIFEST};
use crate::bounded::{self, MAX_MANIFEST};
use crate::session::{Session, body_error, transport};
use crate::{DistributionError, Reference, digest};

/// The manifest digest `reference`'s tag points to, with a `HEAD` request
/// (a `GET` of the manifest, read with its cap, when the registry states
/// no digest).
pub(crate) async fn resolve_with(session: &Session, reference: &Reference) -> Result<String, DistributionError> {
    let url = session.manifest_url(&tag_or_digest(reference));
    let accept = ACCEPTED_MANIFESTS.join(", ");
    let response = session.send(Method::HEAD, url.clone(), &accept, "resolve", reference).await?;
    let digest = match response.headers().get("docker-content-digest").and_then(|value| value.to_str().ok()) {
        Some(digest) => digest.to_owned(),
        None => {
            let response = session.send(Method::GET, url, &accept, "resolve", reference).await?;
            let manifest = bounded::read(response, MAX_MANIFEST, "the manifest")
                .await
                .map_err(|err| body_error("resolve", reference, err))?;
            digest::sha256_digest(&manifest)
        }
    };
    debug!(%reference, %digest, "resolved");
    digest::parse(&digest)
}

/// The tag or digest a manifest URL names.
fn tag_or_digest(reference: &Reference) -> String {
    let oci = reference.to_oci();
    oci.digest().or(oci.tag()).unwrap_or(crate::DEFAULT_TAG).to_owned()
}

/// The manifest `reference` names, read with its cap, or `None` when the
/// registry has none.
pub(crate) async fn pull_manifest(
    session: &Session,
    reference: &Reference,
    action: &'static str,
) -> Result<Option<Vec<u8>>, DistributionError> {
    let url = session.manifest_url(&tag_or_digest(reference));
    let response = match session.send(Method::GET, url, &ACCEPTED_MANIFESTS.join(", "), action, reference).await {
        Ok(response) => response,
        Err(DistributionError::NotFound { .. }) => return Ok(None),
        Err(err) => return Err(err),
    };
    let bytes = bounded::read(response, MAX_MANIFEST, "the manifest")
        .await
        .map_err(|err| body_error(action, reference, err))?;
    Ok(Some(bytes))
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
    session: &Session,
    reference: &Reference,
) -> Result<PinnedManifest, DistributionError> {
    let digest = match reference.digest() {
        Some(digest) => digest.to_owned(),
        None => resolve_with(session, reference).await?,
    };
    let pinned = reference.with_digest(&digest)?;
    let action = "pull the manifest of";
    let bytes = pull_manifest(session, &pinned, action).await?.ok_or_else(|| DistributionError::NotFound {
        reference: pinned.to_string(),
        detail: "the registry has no such manifest".to_owned(),
    })?;
    digest::check("the manifest", &bytes, &digest)?;
    Ok(PinnedManifest { reference: pinned, digest, bytes })
}

/// Streams the blob `descriptor` names, at most its stated size and at most
/// `limit` bytes, and checks its digest.
pub(crate) async fn fetch_blob(
    session: &Session,
    reference: &Reference,
    descriptor: &Descriptor,
    limit: u64,
    what: &'static str,
) -> Result<Vec<u8>, DistributionError> {
    if descriptor.size > limit {
        return Err(DistributionError::TooLarge { what, size: descriptor.size, limit });
    }
    let action = "pull a blob of";
    let url = session.blob_url(&descriptor.digest);
    let mut response = session.send(Method::GET, url, "*/*", action, reference).await?;
    let too_large = |received: u64| DistributionError::SizeMismatch { what, stated: descriptor.size, received };
    if let Some(length) = response.content_length().filter(|&length| length > descriptor.size) {
        return Err(too_large(length));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(descriptor.size).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(|err| transport(action, reference, err))? {
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
