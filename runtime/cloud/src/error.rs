//! How a call to a provider fails: the provider's own answers and the
//! sandbox stepping in.

use std::time::Duration;

/// The longest a provider can ask the controllers to wait before a retry:
/// a longer delay is cut to this where it enters the host, so that no
/// answer holds a Service or the node lifecycle back for good (or past
/// the end of the clock).
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(600);

/// Why a call to a provider failed.
///
/// The first five variants are the provider's own answers (the sentinel
/// errors of `k8s.io/cloud-provider`); the others are the sandbox stepping
/// in.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// `cloudprovider.InstanceNotFound`.
    #[error("instance not found")]
    InstanceNotFound,
    /// `cloudprovider.NotImplemented`, or a part the provider does not support.
    #[error("not implemented by the provider")]
    NotImplemented,
    /// `cloudprovider.ImplementedElsewhere`.
    #[error("implemented elsewhere")]
    ImplementedElsewhere,
    /// `cloudprovider.RetryError`: try again after `delay`, at most
    /// [`MAX_RETRY_DELAY`].
    #[error("retry after {delay:?}: {message}")]
    Retry {
        /// How long to wait.
        delay: Duration,
        /// Why.
        message: String,
    },
    /// The provider failed, with its message.
    #[error("{0}")]
    Cloud(String),
    /// The guest panicked.
    #[error("the provider panicked: {message}")]
    Panic {
        /// The panic message the guest printed.
        message: String,
    },
    /// The guest trapped for another reason.
    #[error("the provider trapped: {message}")]
    Trap {
        /// The trap and its backtrace.
        message: String,
    },
    /// The call ran past its deadline.
    #[error("the provider exceeded its deadline of {deadline:?}")]
    DeadlineExceeded {
        /// The deadline.
        deadline: Duration,
    },
    /// The guest tried to use more memory than it is allowed.
    #[error("the provider exceeded its memory limit of {limit} bytes")]
    MemoryLimit {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The object cannot be passed to the provider.
    #[error("the object cannot be passed to the provider: {0}")]
    InvalidInput(String),
    /// The provider returned a value the host cannot use.
    #[error("the provider returned an invalid value: {0}")]
    InvalidResult(String),
    /// The host could not run the call.
    #[error("the host could not run the call: {0}")]
    Host(String),
}

impl ProviderError {
    /// A short, stable name for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::InstanceNotFound => "instance_not_found",
            ProviderError::NotImplemented => "not_implemented",
            ProviderError::ImplementedElsewhere => "implemented_elsewhere",
            ProviderError::Retry { .. } => "retry",
            ProviderError::Cloud(_) => "cloud",
            ProviderError::Panic { .. } => "panic",
            ProviderError::Trap { .. } => "trap",
            ProviderError::DeadlineExceeded { .. } => "deadline",
            ProviderError::MemoryLimit { .. } => "memory_limit",
            ProviderError::InvalidInput(_) => "invalid_input",
            ProviderError::InvalidResult(_) => "invalid_result",
            ProviderError::Host(_) => "host",
        }
    }

    /// Whether the sandbox stopped the guest (a trap, panic, deadline or
    /// memory limit), as opposed to the provider answering with an error.
    pub fn is_sandbox_failure(&self) -> bool {
        matches!(
            self,
            ProviderError::Panic { .. }
                | ProviderError::Trap { .. }
                | ProviderError::DeadlineExceeded { .. }
                | ProviderError::MemoryLimit { .. }
        )
    }
}
