//! Upstream's client-side rate limit (`--kube-api-qps`, `--kube-api-burst`)
//! as a layer of kube's HTTP stack: a request waits until the limiter lets
//! it through.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tower::{Layer, Service};

/// Holds requests until the rate limiter lets them through.
#[derive(Clone)]
pub(super) struct RateLimitLayer {
    limiter: Arc<DefaultDirectRateLimiter>,
}

impl RateLimitLayer {
    /// A limiter of its own allowing `quota`.
    pub(super) fn new(quota: Quota) -> Self {
        RateLimitLayer { limiter: Arc::new(RateLimiter::direct(quota)) }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited { inner, limiter: self.limiter.clone(), permit: None, permitted: false }
    }
}

type Wait = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A service whose readiness waits for the rate limiter.
pub(super) struct RateLimited<S> {
    inner: S,
    limiter: Arc<DefaultDirectRateLimiter>,
    permit: Option<Wait>,
    permitted: bool,
}

impl<S: Service<R>, R> Service<R> for RateLimited<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.permitted {
            let limiter = self.limiter.clone();
            let wait = self.permit.get_or_insert_with(|| Box::pin(async move { limiter.until_ready().await }));
            ready!(wait.as_mut().poll(cx));
            self.permit = None;
            self.permitted = true;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.permitted = false;
        self.inner.call(request)
    }
}
