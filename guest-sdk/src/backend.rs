//! Where the SDK's imports lead: the host's imports inside a component, the
//! [`native`](crate::native) host when a provider runs natively.

use crate::wit::wasm_ccm::provider::{credentials, http, log};

#[cfg(target_family = "wasm")]
pub(crate) fn send(request: &http::Request) -> Result<http::Response, http::Error> {
    http::send(request)
}

#[cfg(target_family = "wasm")]
pub(crate) fn credential(name: &str) -> Result<Vec<u8>, credentials::Error> {
    credentials::get(name)
}

#[cfg(target_family = "wasm")]
pub(crate) fn log(level: log::Level, message: &str, fields: &[(String, String)]) {
    log::emit(level, message, fields);
}

#[cfg(not(target_family = "wasm"))]
pub(crate) fn send(request: &http::Request) -> Result<http::Response, http::Error> {
    crate::native::host().send(request)
}

#[cfg(not(target_family = "wasm"))]
pub(crate) fn credential(name: &str) -> Result<Vec<u8>, credentials::Error> {
    crate::native::host().credential(name)
}

#[cfg(not(target_family = "wasm"))]
pub(crate) fn log(level: log::Level, message: &str, fields: &[(String, String)]) {
    crate::native::host().log(level, message, fields);
}
