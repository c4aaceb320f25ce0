//! Provider calls as the controllers make them, recorded: each call's time
//! and error, a `retry` honoured after its delay.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasm_ccm_cloud::{Cloud, Function, ProviderError};

/// Attempts of one call while the provider answers `retry`.
const ATTEMPTS: usize = 5;
/// The longest `retry` delay waited for; a longer one is cut to this.
const LONGEST_WAIT: Duration = Duration::from_secs(10);

/// One attempt of a call.
#[derive(Debug, Clone)]
pub struct Call {
    /// The function called.
    pub function: Function,
    /// How long it took.
    pub time: Duration,
    /// Its error, if it failed.
    pub error: Option<ProviderError>,
}

/// Calls to one loaded provider; clones of a log share it.
#[derive(Clone)]
pub struct Calls<C> {
    provider: C,
    log: Arc<Mutex<Vec<Call>>>,
}

impl<C: Cloud> Calls<C> {
    /// Calls to `provider`, recorded in a new log.
    pub fn new(provider: C) -> Self {
        Calls { provider, log: Arc::default() }
    }

    /// Calls to `provider`, recorded in this one's log.
    pub fn sharing_log(&self, provider: C) -> Self {
        Calls { provider, log: self.log.clone() }
    }

    /// Every attempt so far.
    pub fn log(&self) -> Vec<Call> {
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Makes the call `function`, again after the delay of each `retry`
    /// answer, and records every attempt.
    ///
    /// # Errors
    /// The last attempt's error.
    pub async fn run<T>(
        &self,
        function: Function,
        call: impl AsyncFn(&C) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        let mut attempt = 1;
        loop {
            let started = Instant::now();
            let result = call(&self.provider).await;
            let error = result.as_ref().err().cloned();
            self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Call {
                function,
                time: started.elapsed(),
                error: error.clone(),
            });
            match error {
                Some(ProviderError::Retry { delay, .. }) if !delay.is_zero() && attempt < ATTEMPTS => {
                    tokio::time::sleep(delay.min(LONGEST_WAIT)).await;
                    attempt += 1;
                }
                _ => return result,
            }
        }
    }
}
