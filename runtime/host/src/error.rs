//! The errors of loading a provider and of calling it.

use std::time::Duration;

/// Why a provider could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not WebAssembly at all.
    #[error("not a WebAssembly binary: {0}")]
    NotWasm(String),
    /// A core module was given where a component is needed.
    #[error(
        "a core WebAssembly module, not a component: build the provider for wasm32-wasip2, \
         or wrap the module with `wasm-tools component new`"
    )]
    CoreModule,
    /// The component does not parse or compile.
    #[error("invalid component: {0}")]
    Invalid(String),
    /// The component is larger than the host compiles.
    #[error("the component is {size} bytes, over the {limit} byte limit")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The engine's limit.
        limit: usize,
    },
    /// Compiling took longer than the host allows.
    #[error("compiling the component took longer than {limit:?}")]
    CompileTimeout {
        /// The engine's limit.
        limit: Duration,
    },
    /// The compiler process went past its CPU time or memory.
    #[error("compiling the component went past {0}")]
    CompileLimit(String),
    /// The component does not export the provider world.
    #[error("not a wasm-ccm provider (contract {expected}): {missing}")]
    WrongWorld {
        /// The contract version this host speaks.
        expected: &'static str,
        /// What is missing or mismatched, one item per line.
        missing: String,
    },
    /// The component imports what this host does not provide.
    #[error("the provider imports what this host does not provide: {0}")]
    UnsupportedImports(String),
    /// The provider failed its start-up calls.
    #[error("the provider failed to start: {0}")]
    Startup(#[source] ProviderError),
    /// Its file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The engine could not be set up.
    #[error("cannot set up the WebAssembly engine: {0}")]
    Engine(String),
    /// The compile cache cannot be used.
    #[error(transparent)]
    CompileCache(#[from] crate::cache::CacheError),
    /// The certificates the provider's HTTPS connections should trust are
    /// not PEM.
    #[error("cannot read the provider's trusted certificates: {0}")]
    TrustedCertificates(#[source] reqwest::Error),
}

impl LoadError {
    pub(crate) fn engine(err: wasmtime::Error) -> Self {
        LoadError::Engine(format!("{err:#}"))
    }

    /// A copy of this error when the component's bytes alone decide it, so
    /// that compiling them again would fail again: what an engine
    /// remembers of a digest instead of compiling it anew.
    pub(crate) fn of_the_bytes(&self) -> Option<LoadError> {
        Some(match self {
            LoadError::NotWasm(reason) => LoadError::NotWasm(reason.clone()),
            LoadError::CoreModule => LoadError::CoreModule,
            LoadError::Invalid(reason) => LoadError::Invalid(reason.clone()),
            LoadError::CompileTimeout { limit } => LoadError::CompileTimeout { limit: *limit },
            LoadError::CompileLimit(limit) => LoadError::CompileLimit(limit.clone()),
            LoadError::WrongWorld { expected, missing } => LoadError::WrongWorld { expected, missing: missing.clone() },
            LoadError::UnsupportedImports(imports) => LoadError::UnsupportedImports(imports.clone()),
            _ => return None,
        })
    }
}

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
    /// `cloudprovider.RetryError`: try again after `delay`.
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
