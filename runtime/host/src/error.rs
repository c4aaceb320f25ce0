//! The errors of loading a provider, and of opening the compile cache it
//! is loaded with.

use std::path::PathBuf;
use std::time::Duration;

use wasm_ccm_cloud::ProviderError;

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
    CompileCache(#[from] CacheError),
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

/// Why a cache directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The directory or the key cannot be created or read.
    #[error("compile cache {path}: {source}")]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The directory or the key could be changed or read by someone else.
    #[error("compile cache {path} is refused: {reason}")]
    Insecure {
        /// The directory or file.
        path: PathBuf,
        /// What is wrong with its owner or permissions.
        reason: String,
    },
}
