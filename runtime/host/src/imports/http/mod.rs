//! The `http` import: outbound requests, checked against the provider's
//! allow-list, paced by its request rate and bounded by the call's deadline.

pub mod allowlist;
mod client;
mod scrub;
mod sigv4;

use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

pub(crate) use client::{BodyLimits, Outbound};
pub(crate) use scrub::Scrubber;

use crate::bindings::http::{self, Error as HttpError, Request, Response};
use crate::call::throttle::Throttle;
use crate::clip::{MAX_TEXT, clip};
use crate::imports::credentials::Credentials;
use crate::imports::log::Origin;
use crate::metrics::ProviderMetrics;

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
            self.metrics.http(&self.origin.provider, None, "error");
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
        let host = self.outbound.allowed_origin(&request.url);
        let result = self
            .outbound
            .send(request, &self.credentials, self.rate.as_deref(), self.deadline)
            .instrument(span.clone())
            .await;
        let status = match &result {
            Ok(response) => {
                span.record("status", response.status);
                status_class(response.status)
            }
            Err(HttpError::Denied(why)) => {
                if self.origin.take_line() {
                    let why = clip(why, MAX_TEXT);
                    tracing::warn!(parent: &span, provider = &*self.origin.provider, "refused a provider's HTTP request: {why}");
                }
                "denied"
            }
            Err(err) => {
                tracing::debug!(parent: &span, "HTTP request failed: {err:?}");
                if matches!(err, HttpError::Timeout) { "timeout" } else { "error" }
            }
        };
        self.metrics.http(&self.origin.provider, host.as_deref(), status);
        Ok(result)
    }
}

/// A response's status as its class, `2xx` to `5xx`, for metrics: a
/// provider's servers cannot make more series than these.
fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_labelled_by_class() {
        let classes: Vec<&str> = [100, 204, 302, 404, 429, 503, 599, 600, 999].map(status_class).to_vec();
        assert_eq!(classes, ["1xx", "2xx", "3xx", "4xx", "4xx", "5xx", "5xx", "other", "other"]);
    }
}
