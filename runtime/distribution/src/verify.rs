//! Integrity of a provider's bytes: a digest pin and a signature.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::bundle::{self, Subject, TransparencyLog};
use crate::keys::decode_signature;
use crate::{DistributionError, PublicKey, SigningKey, digest};

/// What a provider's bytes must satisfy before they are used.
///
/// Both checks are optional and both apply when both are set.
/// [`Verification::transparency_log`] says what a sigstore bundle's log
/// entries are checked against.
#[derive(Debug, Clone, Default)]
pub struct Verification {
    /// The sha256 digest the provider's bytes must have: `sha256:<hex>` or
    /// the hex digits alone.
    pub pin: Option<String>,
    /// The key the provider must be signed with: a cosign signature of the
    /// manifest digest in a registry, or a `cosign sign-blob` signature of
    /// the bytes otherwise.
    pub public_key: Option<PublicKey>,
    /// What the transparency log entries of a sigstore bundle are checked
    /// against; by default a bundle with an entry is refused.
    pub transparency_log: TransparencyLog,
}

impl Verification {
    /// No checks.
    pub fn none() -> Verification {
        Verification::default()
    }
}

/// Checks provider bytes that do not come from a registry (a file, a
/// ConfigMap key) and returns their digest, `sha256:<hex>`.
///
/// `signature` is what `cosign sign-blob --key` writes for `wasm`: a
/// sigstore bundle (`--bundle`, JSON, cosign v3's form; a message signature
/// or a DSSE envelope whose statement names the bytes' digest, its log
/// entries checked as [`Verification::transparency_log`] says), as
/// [`sign_bundle`] makes, or the bare signature (`--output-signature`):
/// base64 of the DER ECDSA signature of the bytes' SHA-256 (for a P-256
/// key), as [`sign_bytes`] makes; whitespace around it is ignored. A
/// document that starts with `{` is read as a bundle. It is required when
/// [`Verification::public_key`] is set and ignored otherwise.
///
/// # Errors
/// [`DistributionError::PinMismatch`] when the digest is not the pin,
/// [`DistributionError::MissingSignature`] when a key is configured and no
/// signature is given, [`DistributionError::MalformedSignature`] when it is
/// not base64, [`DistributionError::BadSignature`] when it does not
/// verify with the key, and [`DistributionError::Bundle`] or
/// [`DistributionError::SignedOtherDigest`] when a bundle is for other
/// bytes, or its log entries do not check out.
///
/// ```
/// use wasm_ccm_distribution::{SigningKey, Verification, sign_bytes, verify_bytes};
///
/// let key = SigningKey::generate()?;
/// let signature = sign_bytes(b"\0asm...", &key)?;
/// let verification = Verification { public_key: Some(key.public_key()?), ..Verification::none() };
/// let digest = verify_bytes(b"\0asm...", Some(signature.as_bytes()), &verification)?;
/// assert!(digest.starts_with("sha256:"));
/// assert!(verify_bytes(b"\0asm..!", Some(signature.as_bytes()), &verification).is_err());
/// # Ok::<(), wasm_ccm_distribution::DistributionError>(())
/// ```
pub fn verify_bytes(
    wasm: &[u8],
    signature: Option<&[u8]>,
    verification: &Verification,
) -> Result<String, DistributionError> {
    let digest = digest::sha256_digest(wasm);
    digest::check_pin(&digest, verification.pin.as_deref())?;
    if let Some(key) = &verification.public_key {
        let signature = signature.ok_or_else(|| DistributionError::MissingSignature(digest.clone()))?;
        if bundle::looks_like_json(signature) {
            bundle::verify(signature, Subject::new(wasm, &digest), key, &verification.transparency_log)?;
        } else if !key.verifies(wasm, &decode_signature(signature)?) {
            return Err(DistributionError::BadSignature);
        }
    }
    Ok(digest)
}

/// Signs provider bytes as `cosign sign-blob --key` does: base64 of the
/// signature of `wasm` (ECDSA over its SHA-256, DER-encoded, for a P-256
/// key). [`verify_bytes`] accepts it.
///
/// # Errors
/// When signing fails.
pub fn sign_bytes(wasm: &[u8], key: &SigningKey) -> Result<String, DistributionError> {
    Ok(STANDARD.encode(key.sign_raw(wasm)?))
}

/// Signs provider bytes as `cosign sign-blob --key --bundle` does without
/// a transparency log: a sigstore bundle (v0.3) of a message signature of
/// `wasm`. [`verify_bytes`] accepts it.
///
/// # Errors
/// When signing fails.
pub fn sign_bundle(wasm: &[u8], key: &SigningKey) -> Result<Vec<u8>, DistributionError> {
    bundle::message_bundle(wasm, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_key(key: &SigningKey) -> Verification {
        Verification { public_key: Some(key.public_key().unwrap()), ..Verification::none() }
    }

    #[test]
    fn no_checks_returns_the_digest() {
        assert_eq!(verify_bytes(b"wasm", None, &Verification::none()).unwrap(), digest::sha256_digest(b"wasm"));
    }

    #[test]
    fn pins_are_enforced() {
        let pinned = Verification { pin: Some(digest::sha256_digest(b"wasm")), ..Verification::none() };
        assert!(verify_bytes(b"wasm", None, &pinned).is_ok());
        let err = verify_bytes(b"wasn", None, &pinned).unwrap_err();
        assert!(matches!(err, DistributionError::PinMismatch { .. }), "{err}");
    }

    #[test]
    fn signatures_are_enforced() {
        let key = SigningKey::generate().unwrap();
        let signature = sign_bytes(b"wasm", &key).unwrap();
        assert!(verify_bytes(b"wasm", Some(signature.as_bytes()), &with_key(&key)).is_ok());
        assert!(verify_bytes(b"wasm", Some(format!("{signature}\n").as_bytes()), &with_key(&key)).is_ok());

        let other = SigningKey::generate().unwrap();
        let err = verify_bytes(b"wasm", Some(signature.as_bytes()), &with_key(&other)).unwrap_err();
        assert_eq!(err.to_string(), "signature does not verify with the configured key");

        let mut raw = STANDARD.decode(&signature).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        let tampered = STANDARD.encode(raw);
        let err = verify_bytes(b"wasm", Some(tampered.as_bytes()), &with_key(&key)).unwrap_err();
        assert!(matches!(err, DistributionError::BadSignature), "{err}");

        let err = verify_bytes(b"wasm", None, &with_key(&key)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no signature for {}, and the configured public key requires one", digest::sha256_digest(b"wasm"))
        );
        assert!(matches!(
            verify_bytes(b"wasm", Some(b"not base64!"), &with_key(&key)),
            Err(DistributionError::MalformedSignature(_))
        ));
    }

    #[test]
    fn bundles_are_read_where_bare_signatures_are() {
        let key = SigningKey::generate().unwrap();
        let bundle = sign_bundle(b"wasm", &key).unwrap();
        assert!(verify_bytes(b"wasm", Some(&bundle), &with_key(&key)).is_ok());
        let err = verify_bytes(b"wasn", Some(&bundle), &with_key(&key)).unwrap_err();
        assert!(matches!(err, DistributionError::Bundle { .. }), "{err}");
        let other = SigningKey::generate().unwrap();
        let err = verify_bytes(b"wasm", Some(&bundle), &with_key(&other)).unwrap_err();
        assert!(matches!(err, DistributionError::BadSignature), "{err}");
    }

    #[test]
    fn the_pin_is_checked_before_the_signature() {
        let key = SigningKey::generate().unwrap();
        let signature = sign_bytes(b"wasm", &key).unwrap();
        let both = Verification { pin: Some(digest::sha256_digest(b"other")), ..with_key(&key) };
        let err = verify_bytes(b"wasm", Some(signature.as_bytes()), &both).unwrap_err();
        assert!(matches!(err, DistributionError::PinMismatch { .. }), "{err}");
    }
}
