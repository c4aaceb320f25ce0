//! Sigstore bundles, as cosign v3 writes them (`cosign sign-blob --bundle`,
//! and the bundle `cosign sign` stores as an OCI referrer), verified
//! offline with the operator's key.
//!
//! A bundle (`application/vnd.dev.sigstore.bundle.v0.3+json`, or the
//! earlier `...bundle+json;version=0.1` and `0.2`) holds either a message
//! signature (the signature of the bytes, and their SHA-256) or a DSSE
//! envelope (an in-toto statement naming the bytes' digest as its subject,
//! signed over its pre-authentication encoding), and the material to check
//! it with: here a public key the operator configured, never the bundle's
//! own certificate. Transparency log entries, when there are any, are
//! checked by their signed entry timestamp against the log's key, or
//! ignored when the operator says so ([`TransparencyLog`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::json::to_json;
use crate::{DistributionError, PublicKey};

/// The media type of the bundles cosign v3 writes.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// What every bundle media type starts with (v0.1 and v0.2 are
/// `application/vnd.dev.sigstore.bundle+json;version=0.x`).
const BUNDLE_MEDIA_TYPE_PREFIX: &str = "application/vnd.dev.sigstore.bundle";
/// The payload type of a DSSE envelope holding an in-toto statement.
const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The most transparency log entries and DSSE signatures examined.
const MAX_ENTRIES: usize = 16;

/// What a bundle's transparency log entries are checked against.
///
/// No log is reachable from where providers are verified, so an entry is
/// checked by its signed entry timestamp (the log's promise to include it,
/// signed with the log's key) and by what its body records: this
/// signature, of these bytes. A bundle without entries (`cosign sign-blob
/// --tlog-upload=false`) is checked by its signature alone, whatever this
/// says.
#[derive(Debug, Clone, Default)]
pub enum TransparencyLog {
    /// No log key is configured and entries are not to be ignored: a
    /// bundle with an entry is refused, saying so.
    #[default]
    Unconfigured,
    /// Entries are ignored: the signature alone decides.
    Ignore,
    /// A bundle's entries must include one whose signed entry timestamp
    /// verifies with this key and whose body records the bundle's
    /// signature.
    Key(LogKey),
}

/// A transparency log's public key (Rekor's, PEM), and the log ID it
/// gives: the SHA-256 of the key's DER encoding.
#[derive(Debug, Clone)]
pub struct LogKey {
    key: PublicKey,
    id: String,
}

impl LogKey {
    /// Reads a log's PEM public key.
    ///
    /// # Errors
    /// When it is not a PEM public key of a supported algorithm.
    pub fn from_pem(pem: &[u8]) -> Result<LogKey, DistributionError> {
        let key = PublicKey::from_pem(pem)?;
        let der = pem_body(pem)
            .ok_or_else(|| DistributionError::InvalidKey("the log key is not a PEM public key".to_owned()))?;
        Ok(LogKey { key, id: format!("{:x}", Sha256::digest(der)) })
    }

    /// The log ID of entries this key signs, in hex.
    pub fn log_id(&self) -> &str {
        &self.id
    }
}

/// The DER inside a PEM `PUBLIC KEY` block.
fn pem_body(pem: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(pem).ok()?;
    let (_, rest) = text.split_once("-----BEGIN PUBLIC KEY-----")?;
    let (body, _) = rest.split_once("-----END PUBLIC KEY-----")?;
    let body: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD.decode(body).ok()
}

/// Why a sigstore bundle is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// It is not the JSON of a bundle.
    #[error("not a sigstore bundle: {0}")]
    NotABundle(#[source] serde_json::Error),
    /// Its media type is not a bundle's.
    #[error("media type {0:?} is not a sigstore bundle's")]
    MediaType(String),
    /// It holds neither a message signature nor a DSSE envelope, or both.
    #[error("it holds {0}; a bundle holds a message signature or a DSSE envelope")]
    Content(&'static str),
    /// A field that holds base64 does not.
    #[error("its {field} is not base64: {source}")]
    Base64 {
        /// The field.
        field: &'static str,
        /// The decoder's error.
        #[source]
        source: base64::DecodeError,
    },
    /// The message digest is not a SHA-256.
    #[error("its message digest is {0}, not SHA2_256")]
    DigestAlgorithm(String),
    /// The message signature states the digest of other bytes.
    #[error("it is for sha256:{stated}, not {digest}")]
    OtherDigest {
        /// The digest the bundle states, in hex.
        stated: String,
        /// The digest of the bytes being verified.
        digest: String,
    },
    /// The DSSE envelope does not hold an in-toto statement.
    #[error("its DSSE payload type is {0:?}, not {IN_TOTO_PAYLOAD_TYPE}")]
    PayloadType(String),
    /// The DSSE payload verifies but is not an in-toto statement.
    #[error("its DSSE payload is not an in-toto statement: {0}")]
    NotAStatement(#[source] serde_json::Error),
    /// It has transparency log entries, and no log key is configured to
    /// check them nor are they to be ignored.
    #[error(
        "it has {count} transparency log entr{}, and no log key is configured to check them: \
         configure the log's public key, or ignore the log explicitly",
        if *count == 1 { "y" } else { "ies" }
    )]
    LogUnchecked {
        /// How many entries it has.
        count: usize,
    },
    /// No entry checks out with the configured log key.
    #[error("transparency log entry {index} {problem}")]
    LogEntry {
        /// The entry's position in the bundle.
        index: usize,
        /// What is wrong with it.
        problem: LogEntryProblem,
    },
}

/// What is wrong with a transparency log entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LogEntryProblem {
    /// It is of another log than the configured key's.
    #[error("is of the log {entry}, not of the configured log key's {key}")]
    OtherLog {
        /// The entry's log ID, hex.
        entry: String,
        /// The configured key's log ID, hex.
        key: String,
    },
    /// It has no signed entry timestamp, the part that can be checked
    /// offline.
    #[error("has no signed entry timestamp (inclusion promise), the part checked offline")]
    NoPromise,
    /// Its signed entry timestamp does not verify with the log key.
    #[error("has a signed entry timestamp that does not verify with the log key")]
    BadPromise,
    /// A field cannot be read.
    #[error("cannot be read: {0}")]
    Malformed(String),
    /// Its body is of a kind whose records are not compared.
    #[error("is of kind {0}, whose records are not checked (hashedrekord and dsse are)")]
    Kind(String),
    /// Its body records another signature or other bytes.
    #[error("records {0}, not this bundle's")]
    Mismatch(&'static str),
}

/// The bytes a bundle must sign: a provider's bytes, or a manifest's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// Their digest, `sha256:<hex>`.
    pub digest: &'a str,
}

impl<'a> Subject<'a> {
    /// The subject `bytes`, whose digest is `digest`.
    pub(crate) fn new(bytes: &'a [u8], digest: &'a str) -> Subject<'a> {
        Subject { bytes, digest }
    }

    fn hex(&self) -> &str {
        self.digest.strip_prefix("sha256:").unwrap_or(self.digest)
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    #[serde(default)]
    verification_material: VerificationMaterial,
    message_signature: Option<MessageSignature>,
    dsse_envelope: Option<Envelope>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VerificationMaterial {
    #[serde(default)]
    tlog_entries: Vec<TlogEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    message_digest: Option<MessageDigest>,
    signature: String,
}

#[derive(Debug, Deserialize)]
struct MessageDigest {
    algorithm: String,
    digest: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Deserialize)]
struct EnvelopeSignature {
    sig: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlogEntry {
    log_index: serde_json::Value,
    log_id: LogId,
    integrated_time: serde_json::Value,
    inclusion_promise: Option<InclusionPromise>,
    canonicalized_body: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogId {
    key_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InclusionPromise {
    signed_entry_timestamp: String,
}

/// An in-toto statement: only its subjects matter here.
#[derive(Debug, Deserialize)]
struct Statement {
    subject: Vec<StatementSubject>,
}

#[derive(Debug, Deserialize)]
struct StatementSubject {
    #[serde(default)]
    digest: std::collections::BTreeMap<String, String>,
}

/// What a verified signature signed, for the log entry to record.
enum Signed {
    /// A message signature of the subject's bytes.
    Message { signature: Vec<u8> },
    /// A DSSE envelope: its signature that verified, and its payload.
    Envelope { signature: Vec<u8>, payload: Vec<u8> },
}

/// Whether `raw` looks like a JSON document rather than base64: a bundle
/// rather than a bare signature.
pub(crate) fn looks_like_json(raw: &[u8]) -> bool {
    raw.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Verifies the bundle `raw` for `subject` with `key`, and its log entries
/// as `log` says.
///
/// # Errors
/// [`DistributionError::BadSignature`] when no signature verifies with the
/// key; [`DistributionError::SignedOtherDigest`] when a DSSE statement that
/// verifies names other bytes; [`DistributionError::Bundle`] for the rest.
pub(crate) fn verify(
    raw: &[u8],
    subject: Subject<'_>,
    key: &PublicKey,
    log: &TransparencyLog,
) -> Result<(), DistributionError> {
    let bundle: Bundle = serde_json::from_slice(raw).map_err(BundleError::NotABundle)?;
    if !bundle.media_type.starts_with(BUNDLE_MEDIA_TYPE_PREFIX) {
        return Err(BundleError::MediaType(bundle.media_type).into());
    }
    let signed = match (&bundle.message_signature, &bundle.dsse_envelope) {
        (Some(message), None) => verify_message(message, subject, key)?,
        (None, Some(envelope)) => verify_envelope(envelope, subject, key)?,
        (Some(_), Some(_)) => return Err(BundleError::Content("both").into()),
        (None, None) => return Err(BundleError::Content("neither").into()),
    };
    let entries = &bundle.verification_material.tlog_entries;
    if entries.is_empty() {
        return Ok(());
    }
    match log {
        TransparencyLog::Ignore => Ok(()),
        TransparencyLog::Unconfigured => Err(BundleError::LogUnchecked { count: entries.len() }.into()),
        TransparencyLog::Key(log_key) => {
            let mut first = None;
            for (index, entry) in entries.iter().enumerate().take(MAX_ENTRIES) {
                match check_entry(entry, log_key, subject, &signed) {
                    Ok(()) => return Ok(()),
                    Err(problem) => {
                        first.get_or_insert(BundleError::LogEntry { index, problem });
                    }
                }
            }
            // Refused too when no entry was checked.
            Err(first.unwrap_or(BundleError::LogUnchecked { count: entries.len() }).into())
        }
    }
}

fn decode(field: &'static str, text: &str) -> Result<Vec<u8>, BundleError> {
    STANDARD.decode(text.trim()).map_err(|source| BundleError::Base64 { field, source })
}

fn verify_message(
    message: &MessageSignature,
    subject: Subject<'_>,
    key: &PublicKey,
) -> Result<Signed, DistributionError> {
    if let Some(stated) = &message.message_digest {
        if stated.algorithm != "SHA2_256" {
            return Err(BundleError::DigestAlgorithm(stated.algorithm.clone()).into());
        }
        let stated = decode("message digest", &stated.digest)?;
        let stated: String = stated.iter().map(|b| format!("{b:02x}")).collect();
        if stated != subject.hex() {
            return Err(BundleError::OtherDigest { stated, digest: subject.digest.to_owned() }.into());
        }
    }
    let signature = decode("signature", &message.signature)?;
    if !key.verifies(subject.bytes, &signature) {
        return Err(DistributionError::BadSignature);
    }
    Ok(Signed::Message { signature })
}

fn verify_envelope(envelope: &Envelope, subject: Subject<'_>, key: &PublicKey) -> Result<Signed, DistributionError> {
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
        return Err(BundleError::PayloadType(envelope.payload_type.clone()).into());
    }
    let payload = decode("DSSE payload", &envelope.payload)?;
    let signed = pae(&envelope.payload_type, &payload);
    let mut verified = None;
    for signature in envelope.signatures.iter().take(MAX_ENTRIES) {
        let signature = decode("DSSE signature", &signature.sig)?;
        if key.verifies(&signed, &signature) {
            verified = Some(signature);
            break;
        }
    }
    let signature = verified.ok_or(DistributionError::BadSignature)?;
    let statement: Statement = serde_json::from_slice(&payload).map_err(BundleError::NotAStatement)?;
    let digests: Vec<&String> = statement.subject.iter().filter_map(|subject| subject.digest.get("sha256")).collect();
    if !digests.iter().any(|hex| hex.eq_ignore_ascii_case(subject.hex())) {
        let signed = digests.first().map_or_else(|| "no sha256 digest".to_owned(), |hex| format!("sha256:{hex}"));
        return Err(DistributionError::SignedOtherDigest { signed, digest: subject.digest.to_owned() });
    }
    Ok(Signed::Envelope { signature, payload })
}

/// DSSE's pre-authentication encoding of a payload: what is signed.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut encoded = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    encoded.extend_from_slice(payload);
    encoded
}

/// The payload a signed entry timestamp signs, canonical JSON (RFC 8785:
/// keys sorted, no spaces).
#[derive(serde::Serialize)]
struct PromisedEntry<'a> {
    body: &'a str,
    #[serde(rename = "integratedTime")]
    integrated_time: i64,
    #[serde(rename = "logID")]
    log_id: &'a str,
    #[serde(rename = "logIndex")]
    log_index: i64,
}

/// An integer the bundle's JSON spells as a string (protobuf's int64) or a
/// number.
fn integer(value: &serde_json::Value, field: &str) -> Result<i64, LogEntryProblem> {
    let parsed = match value {
        serde_json::Value::String(text) => text.parse().ok(),
        serde_json::Value::Number(number) => number.as_i64(),
        _ => None,
    };
    parsed.ok_or_else(|| LogEntryProblem::Malformed(format!("its {field} is not an integer")))
}

fn check_entry(entry: &TlogEntry, log: &LogKey, subject: Subject<'_>, signed: &Signed) -> Result<(), LogEntryProblem> {
    let malformed = |field: &str| LogEntryProblem::Malformed(format!("its {field} is not base64"));
    let log_id = STANDARD.decode(&entry.log_id.key_id).map_err(|_| malformed("log ID"))?;
    let log_id: String = log_id.iter().map(|b| format!("{b:02x}")).collect();
    if log_id != log.id {
        return Err(LogEntryProblem::OtherLog { entry: log_id, key: log.id.clone() });
    }
    let promise = entry.inclusion_promise.as_ref().ok_or(LogEntryProblem::NoPromise)?;
    let timestamp =
        STANDARD.decode(&promise.signed_entry_timestamp).map_err(|_| malformed("signed entry timestamp"))?;
    let body = STANDARD.decode(&entry.canonicalized_body).map_err(|_| malformed("canonicalized body"))?;
    let body_text = STANDARD.encode(&body);
    let promised = PromisedEntry {
        body: &body_text,
        integrated_time: integer(&entry.integrated_time, "integrated time")?,
        log_id: &log_id,
        log_index: integer(&entry.log_index, "log index")?,
    };
    let promised = to_json(&promised);
    if !log.key.verifies(&promised, &timestamp) {
        return Err(LogEntryProblem::BadPromise);
    }
    records(&body, subject, signed)
}

/// Checks that a log entry's body records `signed`, of `subject`.
fn records(body: &[u8], subject: Subject<'_>, signed: &Signed) -> Result<(), LogEntryProblem> {
    let body: serde_json::Value = serde_json::from_slice(body)
        .map_err(|err| LogEntryProblem::Malformed(format!("its body is not JSON: {err}")))?;
    let kind = body["kind"].as_str().unwrap_or_default();
    let spec = &body["spec"];
    let base64_equals = |value: &serde_json::Value, bytes: &[u8]| {
        value.as_str().and_then(|text| STANDARD.decode(text).ok()).is_some_and(|decoded| decoded == bytes)
    };
    let hex_equals = |value: &serde_json::Value, hex: &str| value.as_str().is_some_and(|v| v.eq_ignore_ascii_case(hex));
    match (kind, signed) {
        ("hashedrekord", Signed::Message { signature }) => {
            if !hex_equals(&spec["data"]["hash"]["value"], subject.hex()) {
                return Err(LogEntryProblem::Mismatch("the digest of other bytes"));
            }
            if !base64_equals(&spec["signature"]["content"], signature) {
                return Err(LogEntryProblem::Mismatch("another signature"));
            }
            Ok(())
        }
        ("dsse", Signed::Envelope { signature, payload }) => {
            let payload_hex = format!("{:x}", Sha256::digest(payload));
            if !hex_equals(&spec["payloadHash"]["value"], &payload_hex) {
                return Err(LogEntryProblem::Mismatch("the hash of another payload"));
            }
            let signatures = spec["signatures"].as_array().map(Vec::as_slice).unwrap_or_default();
            if !signatures.iter().any(|recorded| base64_equals(&recorded["signature"], signature)) {
                return Err(LogEntryProblem::Mismatch("another signature"));
            }
            Ok(())
        }
        _ => Err(LogEntryProblem::Kind(format!(
            "{} for a {}",
            if kind.is_empty() { "(none)" } else { kind },
            match signed {
                Signed::Message { .. } => "message signature",
                Signed::Envelope { .. } => "DSSE envelope",
            }
        ))),
    }
}

/// Makes a bundle of a message signature of `bytes` with `key`, as `cosign
/// sign-blob --bundle` does without a transparency log.
///
/// # Errors
/// When signing fails.
pub(crate) fn message_bundle(bytes: &[u8], key: &crate::SigningKey) -> Result<Vec<u8>, DistributionError> {
    let signature = key.sign_raw(bytes)?;
    let bundle = serde_json::json!({
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": ""}},
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": STANDARD.encode(Sha256::digest(bytes))},
            "signature": STANDARD.encode(signature),
        },
    });
    Ok(to_json(&bundle))
}

impl From<BundleError> for DistributionError {
    fn from(source: BundleError) -> Self {
        DistributionError::Bundle { source: Box::new(source) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SigningKey, digest};

    fn subject(bytes: &[u8]) -> (Vec<u8>, String) {
        (bytes.to_vec(), digest::sha256_digest(bytes))
    }

    fn key_pair() -> (SigningKey, PublicKey) {
        let key = SigningKey::generate().unwrap();
        let public = key.public_key().unwrap();
        (key, public)
    }

    #[test]
    fn message_bundles_verify_for_their_bytes_and_key_only() {
        let (key, public) = key_pair();
        let (bytes, digest) = subject(b"\0asm provider");
        let bundle = message_bundle(&bytes, &key).unwrap();
        let log = TransparencyLog::Unconfigured;
        verify(&bundle, Subject::new(&bytes, &digest), &public, &log).unwrap();

        let (other, other_digest) = subject(b"\0asm another");
        let err = verify(&bundle, Subject::new(&other, &other_digest), &public, &log).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("sigstore bundle refused: it is for {digest}, not {other_digest}"),
            "the bundle states its digest"
        );
        let (_, wrong) = key_pair();
        let err = verify(&bundle, Subject::new(&bytes, &digest), &wrong, &log).unwrap_err();
        assert!(matches!(err, DistributionError::BadSignature), "{err}");
    }

    /// A DSSE bundle of an in-toto statement naming `hex`, signed with
    /// `key`, as `cosign attest-blob` and cosign v3's `sign` write.
    fn dsse_bundle(hex: &str, key: &SigningKey, entries: serde_json::Value) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let statement = serde_json::json!({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "provider.wasm", "digest": {"sha256": hex}}],
            "predicateType": "https://sigstore.dev/cosign/sign/v1",
            "predicate": {},
        });
        let payload = serde_json::to_vec(&statement).unwrap();
        let signature = key.sign_raw(&pae(IN_TOTO_PAYLOAD_TYPE, &payload)).unwrap();
        let bundle = serde_json::json!({
            "mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": {"publicKey": {"hint": "x"}, "tlogEntries": entries},
            "dsseEnvelope": {
                "payload": STANDARD.encode(&payload),
                "payloadType": IN_TOTO_PAYLOAD_TYPE,
                "signatures": [{"sig": STANDARD.encode(&signature), "keyid": ""}],
            },
        });
        (serde_json::to_vec(&bundle).unwrap(), payload, signature)
    }

    #[test]
    fn dsse_bundles_verify_their_statement_s_subject() {
        let (key, public) = key_pair();
        let (bytes, digest) = subject(b"manifest");
        let hex = digest.strip_prefix("sha256:").unwrap();
        let (bundle, _, _) = dsse_bundle(hex, &key, serde_json::json!([]));
        verify(&bundle, Subject::new(&bytes, &digest), &public, &TransparencyLog::Unconfigured).unwrap();

        let (other, other_digest) = subject(b"other manifest");
        let err = verify(&bundle, Subject::new(&other, &other_digest), &public, &TransparencyLog::Ignore).unwrap_err();
        assert_eq!(err.to_string(), format!("the signature verifies but signs {digest}, not {other_digest}"));

        // The payload changed after signing: the signature no longer covers it.
        let mut tampered: serde_json::Value = serde_json::from_slice(&bundle).unwrap();
        let (_, evil_payload, _) =
            dsse_bundle(other_digest.strip_prefix("sha256:").unwrap(), &key, serde_json::json!([]));
        tampered["dsseEnvelope"]["payload"] = STANDARD.encode(evil_payload).into();
        let tampered = serde_json::to_vec(&tampered).unwrap();
        let err =
            verify(&tampered, Subject::new(&other, &other_digest), &public, &TransparencyLog::Ignore).unwrap_err();
        assert!(matches!(err, DistributionError::BadSignature), "{err}");
    }

    /// A hashedrekord or dsse log entry of `body`, promised by `log_key`.
    fn entry(log_key: &SigningKey, log_id_hex: &str, body: &serde_json::Value) -> serde_json::Value {
        let body = STANDARD.encode(serde_json::to_vec(body).unwrap());
        let promised = PromisedEntry { body: &body, integrated_time: 1_700_000_000, log_id: log_id_hex, log_index: 42 };
        let timestamp = log_key.sign_raw(&serde_json::to_vec(&promised).unwrap()).unwrap();
        let log_id: Vec<u8> =
            (0..log_id_hex.len() / 2).map(|i| u8::from_str_radix(&log_id_hex[2 * i..2 * i + 2], 16).unwrap()).collect();
        serde_json::json!({
            "logIndex": "42",
            "logId": {"keyId": STANDARD.encode(log_id)},
            "kindVersion": {"kind": "dsse", "version": "0.0.1"},
            "integratedTime": "1700000000",
            "inclusionPromise": {"signedEntryTimestamp": STANDARD.encode(timestamp)},
            "canonicalizedBody": body,
        })
    }

    #[test]
    fn log_entries_are_checked_with_the_log_key_or_ignored_when_asked() {
        let (key, public) = key_pair();
        let log_signer = SigningKey::generate().unwrap();
        let log = LogKey::from_pem(log_signer.public_key_pem().unwrap().as_bytes()).unwrap();
        let (bytes, digest) = subject(b"manifest");
        let hex = digest.strip_prefix("sha256:").unwrap().to_owned();
        let (_, payload, signature) = dsse_bundle(&hex, &key, serde_json::json!([]));
        let body = |signature: &[u8]| {
            serde_json::json!({
                "apiVersion": "0.0.1", "kind": "dsse",
                "spec": {
                    "payloadHash": {"algorithm": "sha256", "value": format!("{:x}", Sha256::digest(&payload))},
                    "signatures": [{"signature": STANDARD.encode(signature), "verifier": ""}],
                },
            })
        };
        let good = entry(&log_signer, log.log_id(), &body(&signature));
        let (bundle, _, _) = dsse_bundle(&hex, &key, serde_json::json!([good]));
        let subject = Subject::new(&bytes, &digest);

        verify(&bundle, subject, &public, &TransparencyLog::Key(log.clone())).unwrap();
        verify(&bundle, subject, &public, &TransparencyLog::Ignore).unwrap();
        let err = verify(&bundle, subject, &public, &TransparencyLog::Unconfigured).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sigstore bundle refused: it has 1 transparency log entry, and no log key is configured to check them: \
             configure the log's public key, or ignore the log explicitly"
        );

        let other_log = LogKey::from_pem(SigningKey::generate().unwrap().public_key_pem().unwrap().as_bytes()).unwrap();
        let err = verify(&bundle, subject, &public, &TransparencyLog::Key(other_log.clone())).unwrap_err();
        assert!(err.to_string().contains("transparency log entry 0 is of the log"), "{err}");

        // The right log ID, a promise signed by another key.
        let forged = entry(&SigningKey::generate().unwrap(), log.log_id(), &body(&signature));
        let (bundle, _, _) = dsse_bundle(&hex, &key, serde_json::json!([forged]));
        let err = verify(&bundle, subject, &public, &TransparencyLog::Key(log.clone())).unwrap_err();
        assert!(
            err.to_string().ends_with("has a signed entry timestamp that does not verify with the log key"),
            "{err}"
        );

        // A genuine promise of another signature.
        let elsewhere = entry(&log_signer, log.log_id(), &body(b"another signature"));
        let (bundle, _, _) = dsse_bundle(&hex, &key, serde_json::json!([elsewhere]));
        let err = verify(&bundle, subject, &public, &TransparencyLog::Key(log)).unwrap_err();
        assert!(err.to_string().ends_with("records another signature, not this bundle's"), "{err}");
    }

    #[test]
    fn malformed_bundles_are_named() {
        let (_, public) = key_pair();
        let (bytes, digest) = subject(b"x");
        let subject = Subject::new(&bytes, &digest);
        let refusal =
            |raw: &str| verify(raw.as_bytes(), subject, &public, &TransparencyLog::Ignore).unwrap_err().to_string();
        assert!(refusal("{").starts_with("sigstore bundle refused: not a sigstore bundle"));
        assert!(refusal(r#"{"mediaType": "application/json"}"#).contains("media type \"application/json\" is not"));
        assert!(refusal(&format!(r#"{{"mediaType": "{BUNDLE_MEDIA_TYPE}"}}"#)).contains("it holds neither"));
        let bad = format!(r#"{{"mediaType": "{BUNDLE_MEDIA_TYPE}", "messageSignature": {{"signature": "%%"}}}}"#);
        assert!(refusal(&bad).contains("its signature is not base64"));
        assert!(looks_like_json(b"\n {\"a\": 1}") && !looks_like_json(b"MEUCIQ=="));
    }
}
