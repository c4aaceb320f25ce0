//! Keys for cosign-compatible signatures: public keys to verify with and
//! private keys to sign with, in the PEM formats cosign reads and writes.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::signing_key::ecdsa::ECDSAKeys;
use sigstore::crypto::{CosignVerificationKey, SigStoreSigner, Signature, SigningScheme};

use crate::DistributionError;

/// A public key signatures are verified with: a PEM `PUBLIC KEY` (SPKI), as
/// `cosign generate-key-pair` writes to `cosign.pub`.
///
/// ECDSA P-256 with SHA-256 (cosign's default), ECDSA P-384 with SHA-384,
/// Ed25519 and RSA PKCS#1 v1.5 with SHA-256 are understood.
#[derive(Clone)]
pub struct PublicKey {
    key: Arc<CosignVerificationKey>,
    algorithm: &'static str,
}

impl PublicKey {
    /// Reads a PEM public key.
    ///
    /// # Errors
    /// When it is not a PEM public key of a supported algorithm.
    pub fn from_pem(pem: &[u8]) -> Result<PublicKey, DistributionError> {
        let key = CosignVerificationKey::try_from_pem(pem)
            .map_err(|err| DistributionError::InvalidKey(format!("not a supported PEM public key: {err}")))?;
        Ok(PublicKey::new(key))
    }

    fn new(key: CosignVerificationKey) -> PublicKey {
        let algorithm = match &key {
            CosignVerificationKey::ECDSA_P256_SHA256_ASN1(_) => "ECDSA P-256 SHA-256",
            CosignVerificationKey::ECDSA_P384_SHA384_ASN1(_) => "ECDSA P-384 SHA-384",
            CosignVerificationKey::ED25519(_) => "Ed25519",
            _ => "RSA",
        };
        PublicKey { key: Arc::new(key), algorithm }
    }

    /// Whether `signature` (raw, DER for ECDSA) signs `message`.
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        self.key.verify_signature(Signature::Raw(signature), message).is_ok()
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey").field("algorithm", &self.algorithm).finish_non_exhaustive()
    }
}

/// A private key to sign providers with.
pub struct SigningKey {
    signer: SigStoreSigner,
}

impl SigningKey {
    /// A new ECDSA P-256 key, the kind `cosign generate-key-pair` makes.
    ///
    /// # Errors
    /// When the system's random source fails.
    pub fn generate() -> Result<SigningKey, DistributionError> {
        let signer = SigningScheme::ECDSA_P256_SHA256_ASN1
            .create_signer()
            .map_err(|err| DistributionError::Sign(format!("cannot generate a key: {err}")))?;
        Ok(SigningKey { signer })
    }

    /// Reads a PEM private key: PKCS#8 (`PRIVATE KEY`, as `openssl genpkey`
    /// writes), or cosign's encrypted `ENCRYPTED SIGSTORE PRIVATE KEY` /
    /// `ENCRYPTED COSIGN PRIVATE KEY` (`cosign.key`) with its `password`.
    ///
    /// # Errors
    /// When the key cannot be read or decrypted, or is of an unsupported
    /// algorithm.
    pub fn from_pem(pem: &[u8], password: Option<&[u8]>) -> Result<SigningKey, DistributionError> {
        let pair = match password {
            Some(password) => SigStoreKeyPair::from_encrypted_pem(pem, password),
            None if String::from_utf8_lossy(pem).contains("-----BEGIN ENCRYPTED") => {
                return Err(DistributionError::InvalidKey("the key is encrypted; its password is needed".to_owned()));
            }
            None => SigStoreKeyPair::from_pem(pem),
        }
        .map_err(|err| DistributionError::InvalidKey(format!("cannot read the private key: {err}")))?;
        let scheme = match &pair {
            SigStoreKeyPair::ECDSA(ECDSAKeys::P256(_)) => SigningScheme::ECDSA_P256_SHA256_ASN1,
            SigStoreKeyPair::ECDSA(ECDSAKeys::P384(_)) => SigningScheme::ECDSA_P384_SHA384_ASN1,
            SigStoreKeyPair::ED25519(_) => SigningScheme::ED25519,
            SigStoreKeyPair::RSA(_) => SigningScheme::RSA_PKCS1_SHA256(0),
        };
        let signer = pair
            .to_sigstore_signer(&scheme)
            .map_err(|err| DistributionError::InvalidKey(format!("cannot sign with the private key: {err}")))?;
        Ok(SigningKey { signer })
    }

    /// The private key as unencrypted PKCS#8 PEM.
    ///
    /// # Errors
    /// When the key cannot be encoded.
    pub fn to_pem(&self) -> Result<String, DistributionError> {
        let pair = self.signer.to_sigstore_keypair().map_err(|err| DistributionError::Sign(err.to_string()))?;
        let pem = pair.private_key_to_pem().map_err(|err| DistributionError::Sign(err.to_string()))?;
        Ok(pem.to_string())
    }

    /// The public key as PEM, to verify this key's signatures with.
    ///
    /// # Errors
    /// When the key cannot be encoded.
    pub fn public_key_pem(&self) -> Result<String, DistributionError> {
        let pair = self.signer.to_sigstore_keypair().map_err(|err| DistributionError::Sign(err.to_string()))?;
        pair.public_key_to_pem().map_err(|err| DistributionError::Sign(err.to_string()))
    }

    /// The public key, to verify this key's signatures with.
    ///
    /// # Errors
    /// When the key cannot be derived.
    pub fn public_key(&self) -> Result<PublicKey, DistributionError> {
        let key = self.signer.to_verification_key().map_err(|err| DistributionError::Sign(err.to_string()))?;
        Ok(PublicKey::new(key))
    }

    /// The raw signature of `message` (DER for ECDSA).
    pub(crate) fn sign_raw(&self, message: &[u8]) -> Result<Vec<u8>, DistributionError> {
        self.signer.sign(message).map_err(|err| DistributionError::Sign(err.to_string()))
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey").finish_non_exhaustive()
    }
}

/// Decodes a base64 signature, as cosign writes them, ignoring whitespace.
pub(crate) fn decode_signature(signature: &[u8]) -> Result<Vec<u8>, DistributionError> {
    let text: Vec<u8> = signature.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    STANDARD.decode(text).map_err(|err| DistributionError::MalformedSignature(format!("not base64: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_round_trip_through_pem() {
        let key = SigningKey::generate().unwrap();
        let signature = key.sign_raw(b"message").unwrap();
        let public = PublicKey::from_pem(key.public_key_pem().unwrap().as_bytes()).unwrap();
        assert!(public.verifies(b"message", &signature));
        assert!(!public.verifies(b"massage", &signature));
        assert!(key.public_key().unwrap().verifies(b"message", &signature));
        assert_eq!(format!("{public:?}"), "PublicKey { algorithm: \"ECDSA P-256 SHA-256\", .. }");

        let again = SigningKey::from_pem(key.to_pem().unwrap().as_bytes(), None).unwrap();
        assert!(public.verifies(b"other", &again.sign_raw(b"other").unwrap()));
        let other = SigningKey::generate().unwrap();
        assert!(!public.verifies(b"message", &other.sign_raw(b"message").unwrap()));
    }

    #[test]
    fn cosign_encrypted_keys_need_their_password() {
        let key = SigningKey::generate().unwrap();
        let pair = key.signer.to_sigstore_keypair().unwrap();
        let encrypted = pair.private_key_to_encrypted_pem(b"hunter2").unwrap();
        assert!(encrypted.contains("ENCRYPTED SIGSTORE PRIVATE KEY"));
        let err = SigningKey::from_pem(encrypted.as_bytes(), None).unwrap_err().to_string();
        assert_eq!(err, "invalid key: the key is encrypted; its password is needed");
        assert!(SigningKey::from_pem(encrypted.as_bytes(), Some(b"wrong")).is_err());
        let decrypted = SigningKey::from_pem(encrypted.as_bytes(), Some(b"hunter2")).unwrap();
        assert_eq!(decrypted.public_key_pem().unwrap(), key.public_key_pem().unwrap());
    }

    #[test]
    fn bad_keys_are_named() {
        assert!(PublicKey::from_pem(b"nope").unwrap_err().to_string().starts_with("invalid key: not a supported PEM"));
        assert!(SigningKey::from_pem(b"nope", None).unwrap_err().to_string().starts_with("invalid key: cannot read"));
    }

    #[test]
    fn signatures_are_base64() {
        assert_eq!(decode_signature(b" AAEC\n").unwrap(), vec![0, 1, 2]);
        assert!(decode_signature(b"%%").unwrap_err().to_string().starts_with("malformed signature: not base64"));
    }
}
