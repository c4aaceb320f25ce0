//! Why a control plane could not be had.

use std::path::PathBuf;

/// Why a control plane could not be started or used.
#[derive(Debug, thiserror::Error)]
pub enum EnvtestError {
    /// The envtest binaries are required but missing.
    #[error(
        "the real API server is required (WASM_CCM_REQUIRE_ENVTEST is set) but its binaries are missing: {0}; set KUBEBUILDER_ASSETS or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD"
    )]
    Missing(String),
    /// A file of the control plane could not be written or read.
    #[error("cannot use {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A process could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A process exited before it was ready, as when another process took
    /// its port.
    #[error("{name} exited before it was ready; the end of its log:\n{log}")]
    Exited {
        /// Which process.
        name: &'static str,
        /// The last lines it wrote.
        log: String,
    },
    /// A process did not become ready in time.
    #[error("{name} was not ready after {seconds} s; the end of its log:\n{log}")]
    NotReady {
        /// Which process.
        name: &'static str,
        /// How long it was given.
        seconds: u64,
        /// The last lines it wrote.
        log: String,
    },
    /// Certificates or keys could not be made.
    #[error("cannot make certificates: {0}")]
    Certificates(#[from] rcgen::Error),
    /// deploy/'s RBAC could not be read.
    #[error("cannot read {path}: {message}")]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A client could not be made, or a request failed.
    #[error("the API server: {0}")]
    Kube(#[from] kube::Error),
    /// The generated kubeconfig was refused.
    #[error("the generated kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
}

impl EnvtestError {
    pub(crate) fn file(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| EnvtestError::File { path, source }
    }

    /// Whether starting again, on other ports, may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, EnvtestError::Exited { .. })
    }
}
