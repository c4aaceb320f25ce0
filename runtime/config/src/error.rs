//! Why a provider's flags, trust or providers-file entry were refused.

use std::path::{Path, PathBuf};

use wasm_ccm_controllers::InvalidIngressRange;
use wasm_ccm_distribution::DistributionError;
use wasm_ccm_host::imports::http::allowlist::ParseError;
use wasm_ccm_host::{CredentialsError, FileError};
use wasm_ccm_reload::SourceError;

/// A provider option refused, naming the flag or field it came from.
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    /// A file an option names could not be read.
    #[error("cannot read {option} {}", path.display())]
    Read {
        /// The flag or field naming it.
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: FileError,
    },
    /// A value does not parse.
    #[error("{option}: {problem}")]
    Unparsable {
        /// The flag or field.
        option: &'static str,
        /// What its parser said.
        problem: String,
    },
    /// A value parses but is out of its range.
    #[error("{option} must be {bound}")]
    OutOfRange {
        /// The flag.
        option: &'static str,
        /// The range, in words.
        bound: &'static str,
    },
    /// A key file does not hold a public key.
    #[error("{option} {} is not a public key", path.display())]
    NotAKey {
        /// The flag or field naming it.
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: DistributionError,
    },
    /// `--registry-config` is not a Docker config the registry can be
    /// reached with.
    #[error("--registry-config {}", path.display())]
    RegistryConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: DistributionError,
    },
    /// A registry flag for a provider not in a registry.
    #[error("{option} applies to an oci:// provider only, not to {location}")]
    NotInARegistry {
        /// The flag.
        option: &'static str,
        /// Where the provider is.
        location: String,
    },
    /// `--provider-sha256` is not a sha256 digest.
    #[error("--provider-sha256 {pin:?} is not sha256:<64 lowercase hex digits>")]
    NotADigest {
        /// What was given.
        pin: String,
    },
    /// The source's settings do not fit together.
    #[error("{option}")]
    Source {
        /// The flag or field that does not fit.
        option: &'static str,
        /// Why.
        #[source]
        source: Box<SourceError>,
    },
    /// A sealed credential is not `NAME=ROLE@ORIGIN`.
    #[error("{option}")]
    Seal {
        /// The flag or field.
        option: &'static str,
        /// Why.
        #[source]
        source: CredentialsError,
    },
    /// The credentials cannot be read or sealed.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// An allow-list entry is invalid.
    #[error(transparent)]
    AllowList(#[from] ParseError),
    /// An ingress range is not a network, address, host name or
    /// `*.suffix`.
    #[error(transparent)]
    IngressRange(#[from] InvalidIngressRange),
    /// A providers-file entry names a file with no `--providers-root` set.
    #[error("{field}: a providers file names files only beneath a --providers-root, and none is set")]
    Unconfined {
        /// The field naming it.
        field: &'static str,
    },
    /// `limits.httpBurst` without a rate to burst above.
    #[error("limits.httpBurst needs limits.httpRequestsPerSecond")]
    BurstWithoutRate,
    /// A providers-file entry widens what the trust file gives its
    /// provider.
    #[error("{}", .problems.join("; "))]
    Widens {
        /// Each field widened, naming it.
        problems: Vec<String>,
    },
    /// A providers file's limit above the operator's.
    #[error("{field}: {asked} is above the operator's {flag}={ceiling}; a providers file may only lower a limit")]
    AboveCeiling {
        /// The providers file's field.
        field: &'static str,
        /// The operator's flag.
        flag: &'static str,
        /// What the file asked for.
        asked: String,
        /// The operator's limit.
        ceiling: String,
    },
    /// The trust file names neither the provider nor `"*"`.
    #[error(
        "provider {provider}: --provider-trust does not name it, and has no \"*\" entry for providers it does not name"
    )]
    NotTrusted {
        /// The provider.
        provider: String,
    },
    /// A provider the trust file does not name asks for a credentials
    /// directory a provider it names is trusted with.
    #[error("provider {provider}: credentials {}: --provider-trust gives that directory to another provider", path.display())]
    CredentialsOfAnother {
        /// The provider.
        provider: String,
        /// The directory.
        path: PathBuf,
    },
    /// The trust file is not YAML keyed by provider name.
    #[error("--provider-trust {} is not a trust file", path.display())]
    NotATrustFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_norway::Error,
    },
    /// A trust-file entry is refused.
    #[error("--provider-trust {}: provider {provider}", path.display())]
    TrustEntry {
        /// The file.
        path: PathBuf,
        /// The provider it is for.
        provider: String,
        /// Why.
        #[source]
        source: Box<OptionError>,
    },
}

impl OptionError {
    /// What a failure to read `path`, named by `option`, becomes.
    pub(crate) fn reading(option: &'static str, path: &Path) -> impl FnOnce(FileError) -> OptionError {
        let path = path.to_owned();
        move |source| OptionError::Read { option, path, source }
    }
}
