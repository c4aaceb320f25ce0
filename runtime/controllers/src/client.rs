//! The Kubernetes client the controllers use: from a kubeconfig or the
//! in-cluster configuration, with a client-side rate limit (upstream's
//! `--kube-api-qps` and `--kube-api-burst`).

use std::future::Future;
use std::num::NonZeroU32;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use kube::Client;
use kube::client::ClientBuilder;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use tower::{Layer, Service};

use crate::reachability::ReachabilityLayer;

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig could not be read.
    #[error("cannot read the kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// No configuration was found.
    #[error("cannot find a Kubernetes configuration: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The client could not be built.
    #[error("cannot build the Kubernetes client: {0}")]
    Build(#[from] kube::Error),
    /// The rate limit is not positive.
    #[error("--kube-api-qps and --kube-api-burst must be at least 1")]
    RateLimit,
}

/// A client for the cluster of `kubeconfig`, or, without one, of kube's
/// defaults (`KUBECONFIG`, `~/.kube/config`, then the in-cluster service
/// account), sending at most `qps` requests per second with bursts of
/// `burst`.
///
/// # Errors
/// When no configuration is found or the limits are zero.
pub async fn client(kubeconfig: Option<&Path>, qps: u32, burst: u32) -> Result<Client, ClientError> {
    let config = match kubeconfig {
        Some(path) => {
            Config::from_custom_kubeconfig(Kubeconfig::read_from(path)?, &KubeConfigOptions::default()).await?
        }
        None => Config::infer().await?,
    };
    let quota = Quota::per_second(NonZeroU32::new(qps).ok_or(ClientError::RateLimit)?)
        .allow_burst(NonZeroU32::new(burst).ok_or(ClientError::RateLimit)?);
    let limit = RateLimitLayer { limiter: Arc::new(RateLimiter::direct(quota)) };
    Ok(ClientBuilder::try_from(config)?.with_layer(&ReachabilityLayer::default()).with_layer(&limit).build())
}

/// Holds requests until the rate limiter lets them through.
#[derive(Clone)]
struct RateLimitLayer {
    limiter: Arc<DefaultDirectRateLimiter>,
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited { inner, limiter: self.limiter.clone(), permit: None, permitted: false }
    }
}

type Wait = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A service whose readiness waits for the rate limiter.
struct RateLimited<S> {
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
