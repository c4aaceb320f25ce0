//! Cosign signatures of providers in a registry.
//!
//! cosign v3's `sign` stores a sigstore bundle as an OCI 1.1 referrer of
//! the manifest (see [`referrers`](crate::referrers)). Earlier cosigns,
//! and [`sign`] here, store a signature of the manifest `sha256:<hex>` in
//! the same repository under the tag `sha256-<hex>.sig`: an image manifest
//! whose layers are "simple signing" payloads naming the signed digest,
//! each with its base64 signature in the `dev.cosignproject.cosign/signature`
//! annotation; the signature is over the payload's bytes. Both are read.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use tracing::debug;

use crate::artifact::{DOCKER_MANIFEST, Descriptor, Manifest, OCI_MANIFEST};
use crate::bundle::{self, Subject, TransparencyLog};
use crate::json::to_json;
use crate::keys::decode_signature;
use crate::session::Session;
use crate::transfer::{PinnedManifest, fetch_blob, pull_manifest, pull_pinned_manifest, push_manifest, upload};
use crate::{DistributionError, PublicKey, Reference, RegistryOptions, SigningKey, artifact, referrers};

/// The media type of a signature payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature of the payload.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `critical.type` of a payload.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The config media type of a signature manifest.
const IMAGE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The largest payload read: payloads are a few hundred bytes.
const MAX_PAYLOAD: u64 = 64 << 10;
/// The most signature layers examined.
const MAX_SIGNATURES: usize = 32;

/// The tag a signature of `digest` is stored under: `sha256-<hex>.sig`.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}

/// A simple signing payload.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    critical: Critical,
    /// Free-form claims; cosign writes `null` when there are none.
    optional: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// Verifies that a signature stored beside `reference` (pinned) signs
/// `manifest_digest`, whose bytes are `manifest`, with `key`: a sigstore
/// bundle among the manifest's OCI 1.1 referrers (what cosign v3's `sign`
/// stores; the referrers API, or the tag `sha256-<hex>` where the registry
/// has none), or a signature under the tag `sha256-<hex>.sig` (what earlier
/// cosigns store). One that verifies is enough.
///
/// Signatures are bound to the manifest digest, not to the repository's
/// name: a provider copied to another registry keeps its signature.
///
/// # Errors
/// [`DistributionError::MissingSignature`] when there is no signature in
/// either form; otherwise, when none verifies, the most telling refusal:
/// one that says what a signature with the right key signs rather than
/// that a signature does not verify.
pub(crate) async fn verify(
    session: &Session,
    reference: &Reference,
    manifest_digest: &str,
    manifest: &[u8],
    key: &PublicKey,
    log: &TransparencyLog,
) -> Result<(), DistributionError> {
    let mut refusal = Refusal::default();
    match referrers::bundles(session, reference, manifest_digest).await? {
        Ok(listed) => {
            for descriptor in listed {
                let verified = referrers::fetch_bundle(session, reference, manifest_digest, &descriptor)
                    .await?
                    .and_then(|bundle| bundle::verify(&bundle, Subject::new(manifest, manifest_digest), key, log));
                match verified {
                    Ok(()) => {
                        debug!(%reference, referrer = %descriptor.digest, "sigstore bundle verified");
                        return Ok(());
                    }
                    Err(err) => refusal.note(err),
                }
            }
        }
        Err(err) => refusal.note(err),
    }
    match verify_legacy(session, reference, manifest_digest, key).await? {
        Some(Ok(())) => return Ok(()),
        Some(Err(err)) => refusal.note(err),
        None => {}
    }
    Err(refusal.into_error(|| DistributionError::MissingSignature(reference.to_string())))
}

/// The most telling of the refusals met while looking for a signature.
#[derive(Default)]
struct Refusal(Option<DistributionError>);

impl Refusal {
    /// Keeps `err` unless a more telling refusal is kept already: anything
    /// says more than a signature that does not verify.
    fn note(&mut self, err: DistributionError) {
        let keep = match &self.0 {
            None => true,
            Some(DistributionError::BadSignature) => !matches!(err, DistributionError::BadSignature),
            Some(_) => false,
        };
        if keep {
            self.0 = Some(err);
        }
    }

    fn into_error(self, missing: impl FnOnce() -> DistributionError) -> DistributionError {
        self.0.unwrap_or_else(missing)
    }
}

/// The outcome of the signatures under the tag `sha256-<hex>.sig`, or
/// `None` when there is no such tag.
async fn verify_legacy(
    session: &Session,
    reference: &Reference,
    manifest_digest: &str,
    key: &PublicKey,
) -> Result<Option<Result<(), DistributionError>>, DistributionError> {
    let signatures = reference.with_tag(&signature_tag(manifest_digest))?;
    let Some(manifest) = signature_manifest(session, &signatures).await? else {
        return Ok(None);
    };
    let mut outcome = Err(DistributionError::BadSignature);
    let layers = manifest.layers.iter().filter(|layer| layer.media_type == SIMPLE_SIGNING_MEDIA_TYPE);
    for layer in layers.take(MAX_SIGNATURES) {
        let Some(signature) = layer.annotations.as_ref().and_then(|annotations| annotations.get(SIGNATURE_ANNOTATION))
        else {
            continue;
        };
        let Ok(signature) = decode_signature(signature.as_bytes()) else { continue };
        let payload = fetch_blob(session, &signatures, layer, MAX_PAYLOAD, "a signature payload").await?;
        if !key.verifies(&payload, &signature) {
            continue;
        }
        let payload: Payload = match serde_json::from_slice(&payload) {
            Ok(payload) => payload,
            Err(err) => {
                return Ok(Some(Err(DistributionError::MalformedSignature(format!(
                    "a payload that verifies is not a cosign payload: {err}"
                )))));
            }
        };
        if payload.critical.kind != PAYLOAD_TYPE {
            outcome = Err(DistributionError::MalformedSignature(format!(
                "a payload that verifies has the type {:?}, not {PAYLOAD_TYPE:?}",
                payload.critical.kind
            )));
        } else if payload.critical.image.docker_manifest_digest == manifest_digest {
            debug!(%reference, "signature verified");
            return Ok(Some(Ok(())));
        } else {
            outcome = Err(DistributionError::SignedOtherDigest {
                signed: payload.critical.image.docker_manifest_digest,
                digest: manifest_digest.to_owned(),
            });
        }
    }
    Ok(Some(outcome))
}

/// The signature manifest at `signatures`, or `None` when there is none.
async fn signature_manifest(session: &Session, signatures: &Reference) -> Result<Option<Manifest>, DistributionError> {
    let Some(raw) = pull_manifest(session, signatures, "pull the signatures").await? else {
        return Ok(None);
    };
    let manifest: Manifest = serde_json::from_slice(&raw).map_err(|err| {
        DistributionError::MalformedSignature(format!("the signature manifest {signatures} is not a manifest: {err}"))
    })?;
    match manifest.media_type.as_deref() {
        None | Some(OCI_MANIFEST | DOCKER_MANIFEST) => Ok(Some(manifest)),
        Some(other) => Err(DistributionError::MalformedSignature(format!(
            "the signature manifest {signatures} has the media type {other}"
        ))),
    }
}

/// Signs the provider `reference` names with `key`, as `cosign sign --key`
/// does, and returns the manifest digest signed.
///
/// A tag is resolved to its digest first; the manifest must be a provider
/// artifact that [`pull`](crate::pull) would accept. The signature is
/// added beside any already stored for that digest; signing twice with the
/// same key stores it once.
///
/// # Errors
/// When the registry cannot be reached or written to, the manifest is not
/// a provider, or signing fails.
pub async fn sign(
    reference: &Reference,
    key: &SigningKey,
    options: &RegistryOptions,
) -> Result<String, DistributionError> {
    let session = Session::open(reference, options).await?;
    let PinnedManifest { reference: pinned, digest: manifest_digest, bytes: manifest } =
        pull_pinned_manifest(&session, reference).await?;
    artifact::provider_layer(&pinned, &manifest, u64::MAX)?;

    let payload = Payload {
        critical: Critical {
            identity: Identity { docker_reference: pinned.untagged() },
            image: Image { docker_manifest_digest: manifest_digest.clone() },
            kind: PAYLOAD_TYPE.to_owned(),
        },
        optional: None,
    };
    let payload = to_json(&payload);
    let signature = STANDARD.encode(key.sign_raw(&payload)?);
    let mut layer = Descriptor::of(SIMPLE_SIGNING_MEDIA_TYPE, &payload);
    layer.annotations = Some(BTreeMap::from([(SIGNATURE_ANNOTATION.to_owned(), signature)]));

    let signatures = pinned.with_tag(&signature_tag(&manifest_digest))?;
    let mut layers = signature_manifest(&session, &signatures).await?.map(|m| m.layers).unwrap_or_default();
    if layers.contains(&layer) {
        return Ok(manifest_digest);
    }
    let client = options.client(reference).await?;
    layers.push(layer);
    upload(&client, &signatures, &payload).await?;
    let config = signature_config(&layers);
    upload(&client, &signatures, &config).await?;
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.to_owned()),
        config: Some(Descriptor::of(IMAGE_CONFIG_MEDIA_TYPE, &config)),
        layers,
        manifests: None,
        artifact_type: None,
        subject: None,
        annotations: None,
    };
    push_manifest(&client, &signatures, to_json(&manifest)).await?;
    debug!(reference = %pinned, "signed");
    Ok(manifest_digest)
}

/// The image config cosign writes for a signature manifest: empty, with
/// the payloads as its layers.
fn signature_config(layers: &[Descriptor]) -> Vec<u8> {
    let diff_ids: Vec<&str> = layers.iter().map(|layer| layer.digest.as_str()).collect();
    to_json(&serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "config": {},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_have_cosigns_shape() {
        let payload = Payload {
            critical: Critical {
                identity: Identity { docker_reference: "r.example/acme".into() },
                image: Image { docker_manifest_digest: "sha256:ab".into() },
                kind: PAYLOAD_TYPE.into(),
            },
            optional: None,
        };
        assert_eq!(
            String::from_utf8(serde_json::to_vec(&payload).unwrap()).unwrap(),
            r#"{"critical":{"identity":{"docker-reference":"r.example/acme"},"image":{"docker-manifest-digest":"sha256:ab"},"type":"cosign container image signature"},"optional":null}"#
        );
    }

    #[test]
    fn signature_tags() {
        assert_eq!(signature_tag("sha256:0123abcd"), "sha256-0123abcd.sig");
    }
}
