//! How a call gets to run: it waits for the call rate, then for a
//! concurrency permit, counted as waiting meanwhile and as in flight after.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::call::throttle::Throttle;
use crate::call::usage::{Calls, Counted};
use crate::limits::Limits;
use crate::metrics::ProviderMetrics;
use wasm_ccm_cloud::ProviderError;

/// The call rate and the calls at once of one setting of a provider's
/// limits.
pub(crate) struct Admission {
    concurrency: usize,
    rate: Option<Throttle>,
    permits: Arc<Semaphore>,
}

/// A call let in: it holds a concurrency permit and counts as in flight
/// until dropped.
pub(crate) struct Admitted<'a> {
    _permit: OwnedSemaphorePermit,
    _in_flight: Counted<'a>,
}

impl Admission {
    /// A full bucket and all permits free for `limits` of `provider`.
    pub(crate) fn new(provider: &str, limits: &Limits, metrics: &ProviderMetrics) -> Self {
        Admission {
            concurrency: limits.concurrency,
            rate: limits.calls.map(|rate| Throttle::new(rate, metrics.call_waits(provider))),
            permits: Arc::new(Semaphore::new(limits.concurrency.max(1))),
        }
    }

    /// Whether it enforces what `limits` asks for.
    pub(crate) fn fits(&self, limits: &Limits) -> bool {
        self.concurrency == limits.concurrency && self.rate.as_ref().map(Throttle::rate) == limits.calls
    }

    /// Lets a call in once the rate and a permit allow; it holds no permit
    /// while it waits for the rate.
    ///
    /// # Errors
    /// When the permits are gone.
    pub(crate) async fn enter<'a>(&self, calls: &'a Calls) -> Result<Admitted<'a>, ProviderError> {
        let waiting = Counted::new(&calls.waiting);
        if let Some(rate) = &self.rate {
            rate.take().await;
        }
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ProviderError::Host("the provider handle is closed".into()))?;
        drop(waiting);
        Ok(Admitted { _permit: permit, _in_flight: Counted::new(&calls.in_flight) })
    }
}
