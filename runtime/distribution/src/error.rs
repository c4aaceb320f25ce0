//! The one error type of provider distribution.

use oci_client::errors::{DigestError, OciDistributionError};

/// What went wrong while parsing a reference, talking to a registry, or
/// checking a provider's bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistributionError {
    /// The reference is not `oci://registry[:port]/repository[:tag]` or
    /// `oci://registry[:port]/repository@sha256:<hex>`.
    #[error("invalid reference {reference:?}: {reason}")]
    InvalidReference {
        /// The text given.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A digest or pin is not `sha256:` followed by 64 hex digits.
    #[error("invalid digest {0:?}: expected sha256: and 64 hex digits")]
    InvalidDigest(String),
    /// A Docker config JSON cannot be read.
    #[error("invalid docker config: {0}")]
    DockerConfig(String),
    /// The extra CA certificate is not PEM, or the HTTP client cannot be
    /// built with it.
    #[error("cannot set up the registry client: {0}")]
    Client(String),
    /// The registry refused the credentials, or asked for some when none
    /// were given.
    #[error("registry {registry} refused access to {repository}: {detail}")]
    Unauthorized {
        /// `host[:port]`.
        registry: String,
        /// The repository.
        repository: String,
        /// What the registry or the client said.
        detail: String,
    },
    /// The tag or digest does not exist in the repository.
    #[error("{reference} not found: {detail}")]
    NotFound {
        /// The reference, tag or digest included.
        reference: String,
        /// What the registry said.
        detail: String,
    },
    /// Any other failure to talk to the registry: connection, TLS, HTTP
    /// status, protocol.
    #[error("cannot {action} {reference}: {source}")]
    Registry {
        /// What was being done: "resolve", "pull the manifest of", ...
        action: &'static str,
        /// The reference.
        reference: String,
        /// The client's error.
        #[source]
        source: Box<OciDistributionError>,
    },
    /// The manifest is not a provider artifact: an image, an index, several
    /// layers, a media type that is not WebAssembly.
    #[error("{reference} is not a provider artifact: {reason}")]
    NotAProvider {
        /// The reference.
        reference: String,
        /// What was found instead.
        reason: String,
    },
    /// The provider (or a signature payload) is larger than allowed.
    #[error("{what} is {size} bytes, more than the limit of {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size, as stated or as received so far.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A registry's answer (a manifest, a token) is larger than this
    /// client reads.
    #[error("{what} is larger than the limit of {limit} bytes")]
    AnswerTooLarge {
        /// What was being read.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// A registry named a token realm or redirect, or a name resolved to an
    /// address, that the client does not go to: loopback or link-local
    /// (metadata) addresses when the registry is not on one, or a plain
    /// HTTP realm for a registry spoken to over HTTPS.
    #[error("refused {what} {url}: {reason}")]
    Refused {
        /// "the token realm", "a redirect to", "a connection to".
        what: &'static str,
        /// The URL or name refused.
        url: String,
        /// Why.
        reason: String,
    },
    /// The registry sent more bytes than the manifest states.
    #[error("{what} is larger than the {stated} bytes its descriptor states: {received} bytes or more were sent")]
    SizeMismatch {
        /// What was received.
        what: &'static str,
        /// The size the descriptor states.
        stated: u64,
        /// How many bytes had arrived when the transfer was stopped.
        received: u64,
    },
    /// Content received does not hash to the digest it was asked for by.
    #[error("{what} hashes to {actual}, not to {expected} as its reference states")]
    DigestMismatch {
        /// What was received: "the manifest", "the layer", ...
        what: &'static str,
        /// The digest it was fetched by.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// Roll-back protection requires a version and the provider states
    /// none, or none that is a semantic version.
    #[error("{reference} has no version to check against the minimum: {reason}")]
    NoVersion {
        /// The reference.
        reference: String,
        /// What is missing.
        reason: String,
    },
    /// The provider's version is older than the oldest allowed.
    #[error("version {version} is older than {minimum}, the oldest allowed: a roll-back is refused")]
    VersionTooOld {
        /// The provider's version.
        version: String,
        /// The oldest allowed.
        minimum: String,
    },
    /// The provider's digest is not the pinned one.
    #[error("digest {actual} does not match the pin {pin}")]
    PinMismatch {
        /// The digest of the provider's bytes.
        actual: String,
        /// The pin.
        pin: String,
    },
    /// A key cannot be read.
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// A public key is configured but there is no signature to check.
    #[error("no signature for {0}, and the configured public key requires one")]
    MissingSignature(String),
    /// No signature verifies with the configured public key.
    #[error("signature does not verify with the configured key")]
    BadSignature,
    /// A signature verifies with the key but signs another manifest.
    #[error("the signature verifies but signs {signed}, not {digest}")]
    SignedOtherDigest {
        /// The digest the signature's payload names.
        signed: String,
        /// The digest being verified.
        digest: String,
    },
    /// A sigstore bundle is refused: not a bundle, for other bytes, or with
    /// a transparency log entry that does not check out.
    #[error("sigstore bundle refused: {source}")]
    Bundle {
        /// Why.
        #[source]
        source: Box<crate::BundleError>,
    },
    /// A referrer listed for a manifest names another manifest as its
    /// subject.
    #[error("the referrer {} is of {}, not of {}", .0.referrer, .0.subject, .0.digest)]
    ReferrerOtherSubject(Box<crate::ForeignReferrer>),
    /// A signature is not base64, or its payload is not a cosign payload.
    #[error("malformed signature: {0}")]
    MalformedSignature(String),
    /// Signing failed.
    #[error("cannot sign: {0}")]
    Sign(String),
    /// The bytes are not a WebAssembly component or module, or its world
    /// cannot be decoded.
    #[error("not a WebAssembly component: {0}")]
    NotWebAssembly(String),
}

impl DistributionError {
    /// Sorts a registry client's error into [`DistributionError::Unauthorized`],
    /// [`DistributionError::NotFound`] or [`DistributionError::Registry`].
    pub(crate) fn registry(
        action: &'static str,
        reference: &crate::Reference,
        error: OciDistributionError,
    ) -> DistributionError {
        use oci_client::errors::OciErrorCode;
        let unauthorized = |detail: String| DistributionError::Unauthorized {
            registry: reference.registry().to_owned(),
            repository: reference.repository().to_owned(),
            detail,
        };
        match &error {
            OciDistributionError::UnauthorizedError { url } => {
                unauthorized(format!("401 Unauthorized for {url}; check the credentials"))
            }
            OciDistributionError::AuthenticationFailure(detail) => unauthorized(detail.clone()),
            OciDistributionError::ServerError { code: code @ (401 | 403), url, message } => {
                unauthorized(format!("{code} for {url}: {}", message.trim()))
            }
            OciDistributionError::DigestError(DigestError::VerificationError { expected, actual }) => {
                DistributionError::DigestMismatch {
                    what: "the content",
                    expected: expected.clone(),
                    actual: actual.clone(),
                }
            }
            OciDistributionError::RegistryError { envelope, .. } => {
                let codes = envelope.errors.iter().map(|e| &e.code);
                if codes.clone().any(|code| matches!(code, OciErrorCode::Unauthorized | OciErrorCode::Denied)) {
                    unauthorized(envelope.to_string())
                } else if codes.clone().any(|code| {
                    matches!(
                        code,
                        OciErrorCode::ManifestUnknown
                            | OciErrorCode::BlobUnknown
                            | OciErrorCode::NameUnknown
                            | OciErrorCode::NotFound
                    )
                }) {
                    DistributionError::NotFound { reference: reference.to_string(), detail: envelope.to_string() }
                } else {
                    DistributionError::Registry { action, reference: reference.to_string(), source: Box::new(error) }
                }
            }
            OciDistributionError::ServerError { code: 404, message, .. }
            | OciDistributionError::ImageManifestNotFoundError(message) => {
                DistributionError::NotFound { reference: reference.to_string(), detail: message.clone() }
            }
            _ => DistributionError::Registry { action, reference: reference.to_string(), source: Box::new(error) },
        }
    }
}
