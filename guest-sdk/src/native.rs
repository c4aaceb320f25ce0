//! Running a provider natively, outside a component: for a provider's unit
//! tests and for benchmarks that compare it with the component.
//!
//! Natively, the SDK's HTTP, credential and log calls go to the [`Host`]
//! installed with [`set_host`]; without one, HTTP fails, no credential is
//! bound and logs go to stderr.

use std::sync::{Arc, RwLock};

pub use crate::wit::wasm_ccm::provider::credentials::Error as CredentialError;
pub use crate::wit::wasm_ccm::provider::http::{Error as HttpError, Method, Request, RequestAuth, Response};
pub use crate::wit::wasm_ccm::provider::log::Level;

/// What a natively running provider reaches instead of the host's imports.
pub trait Host: Send + Sync {
    /// Sends an HTTP request.
    fn send(&self, request: &Request) -> Result<Response, HttpError>;

    /// Reads a credential bound to the provider.
    fn credential(&self, name: &str) -> Result<Vec<u8>, CredentialError> {
        Err(CredentialError::NotFound(name.to_owned()))
    }

    /// Writes a log record.
    fn log(&self, level: Level, message: &str, fields: &[(String, String)]) {
        eprintln!("{level:?} {message} {fields:?}");
    }
}

struct Unconnected;

impl Host for Unconnected {
    fn send(&self, _request: &Request) -> Result<Response, HttpError> {
        Err(HttpError::Transport("no native host is installed".into()))
    }
}

static HOST: RwLock<Option<Arc<dyn Host>>> = RwLock::new(None);

/// Installs the host every natively running provider of this process uses.
pub fn set_host(host: Arc<dyn Host>) {
    *HOST.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(host);
}

pub(crate) fn host() -> Arc<dyn Host> {
    HOST.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone().unwrap_or_else(|| Arc::new(Unconnected))
}
