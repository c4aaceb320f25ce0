//! The `http` import: outbound requests, checked against the provider's
//! allow-list and bounded by the call's deadline.

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

/// The `http` import of one call.
pub(crate) struct HttpImport {
    pub(crate) outbound: Arc<Outbound>,
    pub(crate) credentials: Arc<Credentials>,
    pub(crate) deadline: Instant,
    pub(crate) origin: Origin,
}

impl http::Host for HttpImport {
    async fn send(&mut self, request: Request) -> wasmtime::Result<Result<Response, HttpError>> {
        let span = tracing::debug_span!(
            "http.send",
            provider = &*self.origin.provider,
            call = self.origin.call,
            method = ?request.method,
            url = %request.url,
            status = tracing::field::Empty,
        );
        let result = self.outbound.send(request, &self.credentials, self.deadline).instrument(span.clone()).await;
        match &result {
            Ok(response) => {
                span.record("status", response.status);
            }
            Err(HttpError::Denied(why)) => {
                tracing::warn!(parent: &span, provider = &*self.origin.provider, "refused a provider's HTTP request: {why}");
            }
            Err(err) => tracing::debug!(parent: &span, "HTTP request failed: {err:?}"),
        }
        Ok(result)
    }
}
