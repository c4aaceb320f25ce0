//! [`Error`], the error of every provider function, and conversions into it.

use std::fmt::Display;
use std::time::Duration;

use crate::wit::wasm_ccm::provider::{credentials, http};

pub use crate::wit::wasm_ccm::provider::types::{CloudError as Error, RetryAfter};

impl Error {
    /// A plain failure whose message reaches the Service's events and the
    /// host's log.
    pub fn other(message: impl Display) -> Self {
        Error::Other(message.to_string())
    }

    /// Not a failure: the controllers try again after `delay`
    /// (`cloudprovider.RetryError`).
    pub fn retry(delay: Duration, message: impl Display) -> Self {
        Error::Retry(RetryAfter {
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            message: message.to_string(),
        })
    }
}

impl From<serde_json::Error> for Error {
    fn from(err: serde_json::Error) -> Self {
        Error::other(format_args!("invalid JSON: {err}"))
    }
}

impl From<http::Error> for Error {
    fn from(err: http::Error) -> Self {
        Error::Other(crate::http::describe(&err))
    }
}

impl From<credentials::Error> for Error {
    fn from(err: credentials::Error) -> Self {
        match err {
            credentials::Error::NotFound(name) => {
                Error::other(format_args!("credential {name:?} is not bound to this provider"))
            }
        }
    }
}
