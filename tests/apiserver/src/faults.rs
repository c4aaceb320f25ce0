//! Injected failures: failed requests, added latency, dropped watches and expired resource versions.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::{ApiError, injected_message};
use crate::store::Store;

/// Failures to inject into a running [`crate::ApiServer`], obtained from [`crate::ApiServer::faults`].
#[derive(Debug)]
pub struct Faults {
    store: Arc<Store>,
    failures: Mutex<(usize, u16)>,
    latency: Mutex<Duration>,
}

impl Faults {
    pub(crate) fn new(store: Arc<Store>) -> Self {
        Self { store, failures: Mutex::new((0, 0)), latency: Mutex::new(Duration::ZERO) }
    }

    /// Ends every open watch stream now; clients see the stream end and watch again.
    pub fn drop_watches(&self) {
        self.store.drop_watches();
    }

    /// Answers the next `requests` requests with `status` and a metav1 `Status` body.
    ///
    /// 429 answers carry `Retry-After: 1`. Watch streams already open are not affected; new watch
    /// requests count as requests.
    pub fn fail_next(&self, requests: usize, status: u16) {
        *self.failures.lock().unwrap_or_else(PoisonError::into_inner) = (requests, status);
    }

    /// Waits `latency` before answering every request; [`Duration::ZERO`] turns the delay off.
    pub fn set_latency(&self, latency: Duration) {
        *self.latency.lock().unwrap_or_else(PoisonError::into_inner) = latency;
    }

    /// Compacts the history at the current resourceVersion and ends every watch, so resuming a watch
    /// or a paginated list from any older resourceVersion gets 410 Gone.
    pub fn expire_resource_versions(&self) {
        self.store.expire();
    }

    /// The failure to answer the current request with, if one is pending.
    pub(crate) fn take_failure(&self) -> Option<ApiError> {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let (remaining, code) = &mut *failures;
        if *remaining == 0 {
            return None;
        }
        *remaining -= 1;
        Some(ApiError::Injected { code: *code, message: injected_message(*code) })
    }

    /// The latency to add to the current request.
    pub(crate) fn latency(&self) -> Duration {
        *self.latency.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_taken_one_request_at_a_time() {
        let faults = Faults::new(Arc::new(Store::new(10)));
        assert!(faults.take_failure().is_none());
        faults.fail_next(2, 500);
        assert_eq!(faults.take_failure().map(|e| e.code()), Some(500));
        assert_eq!(faults.take_failure().map(|e| e.reason()), Some("InternalError"));
        assert!(faults.take_failure().is_none());
    }
}
