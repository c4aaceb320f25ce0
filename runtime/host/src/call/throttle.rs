//! A token bucket that makes whatever is over its rate wait its turn, and
//! counts the waits.

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::time::Instant;

use crate::limits::Rate;
use crate::metrics::Waits;

/// Lets through a [`Rate`]; the rest waits.
pub(crate) struct Throttle {
    rate: Rate,
    bucket: DefaultDirectRateLimiter,
    waits: Waits,
}

/// A wait in progress; it is recorded when it ends, taken or abandoned.
struct Waiting<'a> {
    started: Instant,
    waits: &'a Waits,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.waits.record(self.started.elapsed());
    }
}

impl Throttle {
    /// A full bucket of `rate`, recording waits in `waits`.
    pub(crate) fn new(rate: Rate, waits: Waits) -> Self {
        let quota = Quota::per_second(rate.per_second).allow_burst(rate.burst);
        Throttle { rate, bucket: RateLimiter::direct(quota), waits }
    }

    /// The rate it lets through.
    pub(crate) fn rate(&self) -> Rate {
        self.rate
    }

    /// Takes a token, waiting for one when the bucket is empty. Dropping
    /// the future takes none.
    pub(crate) async fn take(&self) {
        if self.bucket.check().is_ok() {
            return;
        }
        let _waiting = Waiting { started: Instant::now(), waits: &self.waits };
        self.bucket.until_ready().await;
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;
    use std::time::Duration;

    use super::*;
    use crate::metrics::ProviderMetrics;

    fn rate(per_second: u32, burst: u32) -> Rate {
        Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() }
    }

    #[tokio::test]
    async fn lets_a_burst_through_then_paces_the_rest() {
        let throttle = Throttle::new(rate(20, 3), ProviderMetrics::default().call_waits("test"));
        let started = Instant::now();
        for _ in 0..3 {
            throttle.take().await;
        }
        assert!(started.elapsed() < Duration::from_millis(40), "{:?}", started.elapsed());
        for _ in 0..4 {
            throttle.take().await;
        }
        // Four more tokens at one per 50 ms.
        assert!(started.elapsed() >= Duration::from_millis(190), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn an_abandoned_wait_takes_no_token() {
        let throttle = Throttle::new(rate(2, 1), ProviderMetrics::default().call_waits("test"));
        throttle.take().await;
        let abandoned = tokio::time::timeout(Duration::from_millis(100), throttle.take()).await;
        assert!(abandoned.is_err());
        // The token that refills at 500 ms goes to the next taker, not at 1 s.
        let started = Instant::now();
        throttle.take().await;
        assert!(started.elapsed() < Duration::from_millis(800), "{:?}", started.elapsed());
    }
}
