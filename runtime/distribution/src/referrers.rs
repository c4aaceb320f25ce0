//! OCI 1.1 referrers: the sigstore bundles cosign v3's `sign` stores beside
//! a manifest.
//!
//! A referrer is a manifest whose `subject` names the manifest it refers
//! to; cosign v3 writes one with the artifact type and a single layer
//! `application/vnd.dev.sigstore.bundle.v0.3+json`. A registry lists a
//! manifest's referrers in an image index, from the referrers API
//! (`/v2/<name>/referrers/<digest>`) or, where it has none, under the tag
//! `sha256-<hex>` that clients keep up to date (the referrers tag schema).
//!
//! Everything is read with a cap: the index and each referrer manifest as
//! manifests (4 MiB), each bundle up to 256 KiB, at most 32 referrers.
//! A listed referrer is fetched by its digest and checked against it, and
//! must name the manifest being verified as its subject.

use http::Method;
use oci_client::errors::OciDistributionError;
use serde::Deserialize;

use crate::artifact::{Descriptor, Manifest};
use crate::bounded::{self, MAX_MANIFEST};
use crate::session::{Session, body_error};
use crate::transfer::{fetch_blob, pull_manifest};
use crate::{DistributionError, Reference, digest};

/// What the artifact type and layer media type of a sigstore bundle start
/// with.
const BUNDLE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The media type of an OCI image index, which lists referrers.
const INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The largest bundle read: a key-signed bundle is a few KiB, one with a
/// certificate chain and log inclusion proofs some tens.
const MAX_BUNDLE: u64 = 256 << 10;
/// The most bundle referrers examined.
const MAX_REFERRERS: usize = 32;

/// The tag of the referrers tag schema for `digest`: `sha256-<hex>`.
pub fn referrers_tag(digest: &str) -> String {
    digest.replace(':', "-")
}

/// A referrer listed for a manifest that names another manifest as its
/// subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignReferrer {
    /// The referrer's manifest digest.
    pub referrer: String,
    /// The subject it names.
    pub subject: String,
    /// The manifest being verified.
    pub digest: String,
}

/// An image index, as the referrers API and the fallback tag answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

/// The descriptors of the sigstore bundle referrers of `digest`, at most
/// [`MAX_REFERRERS`]: from the referrers API, or from the fallback tag when
/// the registry has no API. The outer error is a registry that cannot be
/// read; the inner one, an index that is not one.
pub(crate) async fn bundles(
    session: &Session,
    reference: &Reference,
    digest: &str,
) -> Result<Result<Vec<Descriptor>, DistributionError>, DistributionError> {
    let (raw, origin) = match from_api(session, reference, digest).await? {
        Some(raw) => (raw, "the referrers API"),
        None => {
            let tag = reference.with_tag(&referrers_tag(digest))?;
            match pull_manifest(session, &tag, "list the referrers of").await? {
                Some(raw) => (raw, "the referrers tag"),
                None => return Ok(Ok(Vec::new())),
            }
        }
    };
    let index: Index = match serde_json::from_slice(&raw) {
        Ok(index) => index,
        Err(err) => {
            return Ok(Err(DistributionError::MalformedSignature(format!(
                "the index of referrers of {digest} from {origin} is not an index: {err}"
            ))));
        }
    };
    if let Some(other) = index.media_type.as_deref().filter(|media_type| *media_type != INDEX) {
        return Ok(Err(DistributionError::MalformedSignature(format!(
            "the index of referrers of {digest} from {origin} has the media type {other}, not {INDEX}"
        ))));
    }
    Ok(Ok(index
        .manifests
        .into_iter()
        .filter(|descriptor| descriptor.artifact_type.as_deref().is_some_and(|kind| kind.starts_with(BUNDLE_PREFIX)))
        .take(MAX_REFERRERS)
        .collect()))
}

/// The referrers index from the registry's referrers API, or `None` when
/// it has no such API: it answers 404, as the specification asks, or
/// another error status (some registries answer 400 or 405). A registry
/// that cannot be reached, or refuses the credentials, is an error.
async fn from_api(
    session: &Session,
    reference: &Reference,
    digest: &str,
) -> Result<Option<Vec<u8>>, DistributionError> {
    let action = "list the referrers of";
    let url = session.referrers_url(digest);
    let response = match session.send(Method::GET, url, INDEX, action, reference).await {
        Ok(response) => response,
        Err(DistributionError::NotFound { .. }) => return Ok(None),
        Err(DistributionError::Registry { source, .. })
            if !matches!(*source, OciDistributionError::RequestError(_)) =>
        {
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    let bytes = bounded::read(response, MAX_MANIFEST, "the referrers index")
        .await
        .map_err(|err| body_error(action, reference, err))?;
    Ok(Some(bytes))
}

/// The sigstore bundle of the referrer `descriptor` of `digest`, fetched by
/// digest and checked. The outer error is a registry that cannot be read;
/// the inner one, a referrer that is refused: of another subject, without
/// a bundle, or not what its digest says.
pub(crate) async fn fetch_bundle(
    session: &Session,
    reference: &Reference,
    digest: &str,
    descriptor: &Descriptor,
) -> Result<Result<Vec<u8>, DistributionError>, DistributionError> {
    let referrer = match digest::parse(&descriptor.digest) {
        Ok(referrer) => referrer,
        Err(err) => return Ok(Err(err)),
    };
    let pinned = reference.with_digest(&referrer)?;
    let Some(raw) = pull_manifest(session, &pinned, "pull a referrer of").await? else {
        return Ok(Err(DistributionError::MalformedSignature(format!(
            "the referrer {referrer} of {digest} is listed but not in the registry"
        ))));
    };
    if let Err(err) = digest::check("a referrer manifest", &raw, &referrer) {
        return Ok(Err(err));
    }
    let manifest: Manifest = match serde_json::from_slice(&raw) {
        Ok(manifest) => manifest,
        Err(err) => {
            return Ok(Err(DistributionError::MalformedSignature(format!(
                "the referrer {referrer} is not a manifest: {err}"
            ))));
        }
    };
    let subject = manifest.subject.as_ref().map(|subject| subject.digest.as_str());
    if subject != Some(digest) {
        return Ok(Err(DistributionError::ReferrerOtherSubject(Box::new(ForeignReferrer {
            referrer,
            subject: subject.unwrap_or("no manifest").to_owned(),
            digest: digest.to_owned(),
        }))));
    }
    let Some(layer) = manifest.layers.iter().find(|layer| layer.media_type.starts_with(BUNDLE_PREFIX)) else {
        return Ok(Err(DistributionError::MalformedSignature(format!(
            "the referrer {referrer} holds no sigstore bundle"
        ))));
    };
    match fetch_blob(session, reference, layer, MAX_BUNDLE, "a sigstore bundle").await {
        Ok(bundle) => Ok(Ok(bundle)),
        Err(
            err @ (DistributionError::Registry { .. }
            | DistributionError::Unauthorized { .. }
            | DistributionError::Client(_)
            | DistributionError::Refused { .. }),
        ) => Err(err),
        Err(err) => Ok(Err(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_tag_is_the_digest_with_a_dash() {
        assert_eq!(referrers_tag("sha256:0123abcd"), "sha256-0123abcd");
    }

    #[test]
    fn indexes_list_descriptors_with_their_artifact_type() {
        let index: Index = serde_json::from_value(serde_json::json!({
            "schemaVersion": 2,
            "mediaType": INDEX,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": "sha256:00",
                "size": 3,
                "artifactType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            }],
        }))
        .unwrap();
        assert_eq!(index.manifests[0].artifact_type.as_deref(), Some("application/vnd.dev.sigstore.bundle.v0.3+json"));
    }
}
