//! CPU shared fairly between providers: each provider's guest code, all its
//! calls together, gets a quarter of one core beyond a short burst. The
//! guest is found running at each epoch tick it computes through; it runs
//! on through the next tick only with a token of the provider's bucket, and
//! a call that finds the bucket empty pauses until it takes one. Calls run
//! on the controllers'
//! threads, so without it a provider spinning in many calls at once would
//! starve the other providers' calls and the controllers until its
//! deadlines stop it; a provider that computes briefly between host calls
//! never waits.

use std::num::NonZeroU32;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// Ticks of guest computation a provider may have per second: a quarter
/// of one core at 100 ticks a second.
const TICKS_PER_SECOND: NonZeroU32 = NonZeroU32::new(25).expect("non-zero");
/// Ticks a provider may compute through at once after a quiet spell: about
/// 50 ms, far more than a provider spends between its host calls.
const BURST_TICKS: NonZeroU32 = NonZeroU32::new(5).expect("non-zero");

/// One provider's CPU bucket, shared by its calls.
pub(crate) struct ComputeShare {
    bucket: DefaultDirectRateLimiter,
}

impl Default for ComputeShare {
    fn default() -> Self {
        let quota = Quota::per_second(TICKS_PER_SECOND).allow_burst(BURST_TICKS);
        ComputeShare { bucket: RateLimiter::direct(quota) }
    }
}

impl ComputeShare {
    /// Takes a token for the next tick of a call whose guest code was
    /// running at this one; `false` when the provider is past its share
    /// and the call must wait its [`ComputeShare::turn`].
    pub(crate) fn tick(&self) -> bool {
        self.bucket.check().is_ok()
    }

    /// Waits for and takes a token for the next tick.
    pub(crate) async fn turn(&self) {
        self.bucket.until_ready().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[tokio::test]
    async fn a_provider_computes_a_burst_then_a_quarter_of_a_core_across_its_calls() {
        let share = ComputeShare::default();
        for _ in 0..BURST_TICKS.get() {
            assert!(share.tick(), "within the burst");
        }
        assert!(!share.tick(), "past the burst");
        let other = ComputeShare::default();
        assert!(other.tick(), "another provider has its own share");
        let started = Instant::now();
        for _ in 0..5 {
            share.turn().await;
        }
        // Five more ticks at 25 a second.
        assert!(started.elapsed() >= Duration::from_millis(150), "{:?}", started.elapsed());
    }
}
