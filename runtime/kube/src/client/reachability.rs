//! Whether the API server answers. An outage is logged once when requests
//! stop reaching it and once when it answers again, however many requests
//! fail meanwhile; the code that retries those requests logs their transport
//! errors at debug level only.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tower::{Layer, Service};

/// Whether `err` is a transport failure (nothing answered, or the
/// connection broke) rather than an answer of the API server: the outage is
/// already logged once by the client.
pub fn is_transport_error(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Service(_) | kube::Error::HyperError(_) | kube::Error::ReadEvents(_))
}

/// Observes every request's outcome and logs the changes between reachable
/// and unreachable.
#[derive(Clone, Default)]
pub(crate) struct ReachabilityLayer {
    unreachable_since: Arc<Mutex<Option<Instant>>>,
}

impl ReachabilityLayer {
    fn observe<E: std::fmt::Display>(&self, outcome: Result<(), &E>) {
        let mut since = self.unreachable_since.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match (outcome, since.is_some()) {
            (Err(err), false) => {
                tracing::warn!("cannot reach the API server, retrying until it answers: {err}");
                *since = Some(Instant::now());
            }
            (Ok(()), true) => {
                let outage = since.take().map(|since| since.elapsed()).unwrap_or_default();
                tracing::info!("the API server answers again, after {:.1} s", outage.as_secs_f64());
            }
            _ => {}
        }
    }
}

impl<S> Layer<S> for ReachabilityLayer {
    type Service = Reachability<S>;

    fn layer(&self, inner: S) -> Reachability<S> {
        Reachability { inner, layer: self.clone() }
    }
}

/// A service whose responses feed a [`ReachabilityLayer`].
#[derive(Clone)]
pub(crate) struct Reachability<S> {
    inner: S,
    layer: ReachabilityLayer,
}

impl<S, R> Service<R> for Reachability<S>
where
    S: Service<R>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let response = self.inner.call(request);
        let layer = self.layer.clone();
        Box::pin(async move {
            let result = response.await;
            layer.observe(result.as_ref().map(drop));
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_remembered_until_a_request_succeeds() {
        let layer = ReachabilityLayer::default();
        let refused = "connection refused";
        layer.observe(Err(&refused));
        layer.observe(Err(&refused));
        assert!(layer.unreachable_since.lock().unwrap().is_some());
        layer.observe::<&str>(Ok(()));
        assert!(layer.unreachable_since.lock().unwrap().is_none());
    }
}
