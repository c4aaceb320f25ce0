//! The `http` import: outbound requests, checked against the provider's
//! allow-list, paced by its request rate and bounded by the call's deadline.

pub mod allowlist;
mod client;
mod sigv4;

use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

pub(crate) use client::{BodyLimits, Outbound};

use crate::bindings::http::{self, Error as HttpError, Request, Response};
use crate::credentials::Credentials;
use crate::log::Origin;
use crate::metrics::ProviderMetrics;
use crate::throttle::Throttle;

/// The longest URL a provider may request, so that what the host parses
/// and logs of it stays small.
const MAX_URL: usize = 8192;

/// The `http` import of one call.
pub(crate) struct HttpImport {
    pub(crate) metrics: ProviderMetrics,
    pub(crate) outbound: Arc<Outbound>,
    /// The provider's request rate, which every request and redirect
    /// takes a token from.
    pub(crate) rate: Option<Arc<Throttle>>,
    pub(crate) credentials: Arc<Credentials>,
    pub(crate) deadline: Instant,
    pub(crate) origin: Origin,
}

impl http::Host for HttpImport {
    async fn send(&mut self, request: Request) -> wasmtime::Result<Result<Response, HttpError>> {
        if request.url.len() > MAX_URL {
            let refused = format!("a URL of {} bytes is longer than {MAX_URL}", request.url.len());
            self.metrics.http(&self.origin.provider, "invalid", "error");
            return Ok(Err(HttpError::InvalidRequest(refused)));
        }
        let span = tracing::debug_span!(
            "http.send",
            provider = &*self.origin.provider,
            call = self.origin.call,
            method = ?request.method,
            url = %request.url,
            status = tracing::field::Empty,
        );
        let host = url::Url::parse(&request.url)
            .ok()
            .and_then(|url| url.host_str().map(|host| format!("{host}:{}", url.port_or_known_default().unwrap_or(0))))
            .unwrap_or_else(|| "invalid".to_owned());
        let result = self
            .outbound
            .send(request, &self.credentials, self.rate.as_deref(), self.deadline)
            .instrument(span.clone())
            .await;
        let status = match &result {
            Ok(response) => {
                span.record("status", response.status);
                response.status.to_string()
            }
            Err(HttpError::Denied(why)) => {
                let why = crate::log::clip(why, crate::log::MAX_TEXT);
                tracing::warn!(parent: &span, provider = &*self.origin.provider, "refused a provider's HTTP request: {why}");
                "denied".to_owned()
            }
            Err(err) => {
                tracing::debug!(parent: &span, "HTTP request failed: {err:?}");
                if matches!(err, HttpError::Timeout) { "timeout" } else { "error" }.to_owned()
            }
        };
        self.metrics.http(&self.origin.provider, &host, &status);
        Ok(result)
    }
}
