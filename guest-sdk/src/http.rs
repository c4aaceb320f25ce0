//! Outbound HTTP through the host, with JSON in and out.
//!
//! ```no_run
//! use wasm_ccm_sdk::http::Request;
//! # fn main() -> Result<(), wasm_ccm_sdk::Error> {
//! #[derive(serde::Deserialize)]
//! struct Instance {
//!     id: String,
//! }
//!
//! let instances: Vec<Instance> = Request::get("https://api.example.com/v1/instances")
//!     .bearer("api-token")
//!     .send()?
//!     .error_for_status()?
//!     .json()?;
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Error;
use crate::wit::wasm_ccm::provider::http as wit;

pub use wit::{AwsSigv4, Error as HttpError, Method, RequestAuth};

/// A request to build and [`send`](Request::send).
#[derive(Debug, Clone)]
pub struct Request(wit::Request);

impl Request {
    /// A request with no headers and no body.
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Request(wit::Request {
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout_ms: None,
            auth: None,
        })
    }

    /// A `GET` request.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new(Method::Get, url)
    }

    /// A `POST` request.
    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::Post, url)
    }

    /// A `PUT` request.
    pub fn put(url: impl Into<String>) -> Self {
        Self::new(Method::Put, url)
    }

    /// A `DELETE` request.
    pub fn delete(url: impl Into<String>) -> Self {
        Self::new(Method::Delete, url)
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.0.body = body.into();
        self
    }

    /// Sets a JSON body and its content type.
    ///
    /// # Errors
    /// When `value` cannot be serialised.
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Result<Self, Error> {
        let body = serde_json::to_vec(value)?;
        Ok(self.header("content-type", "application/json").body(body))
    }

    /// Bounds the request's duration; the call's deadline bounds it anyway.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.0.timeout_ms = Some(u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX));
        self
    }

    /// Has the host send the credential `credential` as a bearer token.
    pub fn bearer(self, credential: impl Into<String>) -> Self {
        self.auth(RequestAuth::Bearer(credential.into()))
    }

    /// Has the host authenticate the request.
    pub fn auth(mut self, auth: RequestAuth) -> Self {
        self.0.auth = Some(auth);
        self
    }

    /// The request as the host receives it.
    pub fn as_wit(&self) -> &wit::Request {
        &self.0
    }

    /// Sends the request and reads the whole response.
    ///
    /// # Errors
    /// When the host refuses the request or it fails in transport; an HTTP
    /// error status is a response, see [`Response::error_for_status`].
    pub fn send(&self) -> Result<Response, HttpError> {
        crate::backend::send(&self.0).map(Response)
    }
}

/// A response: status, headers (names in lower case) and body.
#[derive(Debug, Clone)]
pub struct Response(wit::Response);

impl Response {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.0.status
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.0.status)
    }

    /// The first value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.0.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.0.body
    }

    /// The body as text, with invalid UTF-8 replaced.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.body).into_owned()
    }

    /// The body parsed as JSON.
    ///
    /// # Errors
    /// When the body is not JSON of type `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        Ok(serde_json::from_slice(&self.0.body)?)
    }

    /// The response itself when its status is 2xx, else an error naming the
    /// status and the start of the body.
    ///
    /// # Errors
    /// On a status outside 2xx.
    pub fn error_for_status(self) -> Result<Self, Error> {
        if self.is_success() {
            return Ok(self);
        }
        let mut body = self.text();
        body.truncate(512);
        Err(Error::other(format_args!("HTTP {}: {}", self.0.status, body.trim())))
    }
}

/// A readable sentence for a host HTTP error.
pub(crate) fn describe(err: &HttpError) -> String {
    match err {
        HttpError::Denied(why) => format!("HTTP request denied: {why}"),
        HttpError::InvalidRequest(why) => format!("invalid HTTP request: {why}"),
        HttpError::TooLarge(why) => format!("HTTP body too large: {why}"),
        HttpError::Timeout => "HTTP request timed out".to_owned(),
        HttpError::Transport(why) => format!("HTTP transport error: {why}"),
    }
}
