//! Why a source has nothing to offer, and why a provider cannot start.

use wasm_ccm_distribution::DistributionError;
use wasm_ccm_host::LoadError;

/// Why a source could not offer a candidate.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The source cannot be reached or read right now: a registry that does
    /// not answer, a file being replaced, a ConfigMap that is gone. The
    /// source tries again at its next poll or change.
    #[error("{origin} is unavailable: {reason}")]
    Unavailable {
        /// The source.
        origin: String,
        /// Why.
        reason: String,
    },
    /// A new version was found but failed verification (pin, signature,
    /// artifact format): it is rejected and not offered again until it
    /// changes.
    #[error("{origin} failed verification: {source}")]
    Verification {
        /// The source, pinned to what was found when it can be.
        origin: String,
        /// The digest of what was found, when known.
        digest: Option<String>,
        /// The check that failed.
        #[source]
        source: DistributionError,
    },
    /// The source is configured wrongly (bad syntax, a key file that cannot
    /// be read).
    #[error("invalid provider source: {0}")]
    Invalid(String),
}

/// Why the first version of a provider could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Its source had nothing to offer.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Its configuration file or credentials could not be read.
    #[error("cannot read the provider's inputs: {0}")]
    Inputs(String),
    /// It did not load.
    #[error("{origin} does not load: {source}")]
    Load {
        /// Where it came from.
        origin: String,
        /// Why it did not load.
        #[source]
        source: LoadError,
    },
    /// It loaded but cannot replace the provider serving in its handle.
    #[error("{origin} cannot replace the provider serving: {reason}")]
    Unfit {
        /// Where it came from.
        origin: String,
        /// Why.
        reason: String,
    },
}
