//! Ships wasm-ccm providers as OCI artifacts and verifies a provider's
//! bytes before they are used.
//!
//! - [`Reference`]: `oci://registry[:port]/repository[:tag]` or
//!   `oci://registry[:port]/repository@sha256:<hex>`.
//! - [`resolve`] a tag to its manifest digest (one `HEAD` request, to poll
//!   for changes), [`pull`] a provider and verify it, [`push`] one in the
//!   CNCF WebAssembly format, [`sign`] one in a registry.
//! - [`verify_bytes`] and [`sign_bytes`] for providers that do not come from
//!   a registry (a file, a ConfigMap key).
//! - [`inspect`] a provider: component or not, its world's imports and
//!   exports, size and digest.
//!
//! # Artifacts
//! A provider artifact is an image manifest with exactly one layer: the
//! CNCF WebAssembly format (config `application/vnd.wasm.config.v0+json`,
//! layer `application/wasm`), or an older layer media type
//! (`application/vnd.wasm.content.layer.v1+wasm`,
//! `application/vnd.module.wasm.content.layer.v1+wasm`). Images, indexes,
//! artifacts with several layers and other media types are refused, naming
//! what was found.
//!
//! # Guarantees
//! What [`pull`] returns is exactly what was verified: a tag is resolved to
//! a manifest digest once, then the manifest, the signature check and the
//! layer all go by that digest; the manifest's bytes are hashed against the
//! digest, the layer's bytes against the digest the manifest states, and
//! the pin against the digest of the bytes returned. A tag that moves
//! during a pull cannot swap in other bytes.
//!
//! # Signatures
//! Signatures are cosign-compatible, checked with the `sigstore` crate's
//! keys. In a registry: a sigstore bundle among the manifest's OCI 1.1
//! referrers (what cosign v3's `sign --key` stores; the referrers API, or
//! the tag `sha256-<hex>` where the registry has none), or a signature of
//! the manifest digest under the tag `sha256-<hex>.sig` (what earlier
//! cosigns and [`sign`] store). Elsewhere: what `cosign sign-blob --key`
//! writes, a sigstore bundle (`--bundle`) or the bare base64 signature.
//! Verification is offline with a public key: certificates (keyless
//! signing) are not used, and a bundle's transparency log entries are
//! checked against a configured log key or ignored when asked
//! ([`TransparencyLog`]).
//!
//! # Caveats
//! TLS is rustls with the `ring` provider, installed as the process's
//! default provider when none is. Plain HTTP is spoken only when
//! [`RegistryOptions`] asks for it.

mod artifact;
mod auth;
mod bounded;
mod bundle;
mod cosign;
mod digest;
mod egress;
mod error;
mod inspect;
mod json;
mod keys;
mod options;
mod pull;
mod push;
mod reference;
mod referrers;
mod session;
mod transfer;
mod verify;
mod version;

pub use artifact::{
    LAYER_TITLE, LEGACY_LAYER_MEDIA_TYPES, TITLE_ANNOTATION, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
};
pub use auth::Auth;
pub use bundle::{BUNDLE_MEDIA_TYPE, BundleError, LogEntryProblem, LogKey, TransparencyLog};
pub use cosign::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, sign, signature_tag};
pub use digest::sha256_digest;
pub use error::DistributionError;
pub use inspect::{Inspection, inspect};
pub use keys::{PublicKey, SigningKey};
pub use options::{DEFAULT_MAX_SIZE, DEFAULT_TIMEOUT, RegistryOptions};
pub use pull::{Pulled, pull, resolve};
pub use push::{push, push_version};
pub use reference::{DEFAULT_TAG, Reference};
pub use referrers::{ForeignReferrer, referrers_tag};
pub use verify::{Verification, sign_bundle, sign_bytes, verify_bytes};
pub use version::{VERSION_ANNOTATION, check_minimum_version};
