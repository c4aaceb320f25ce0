//! CPU shared fairly between providers: each provider's guest code, all its
//! calls together, gets its share of a core (`Limits::cpu_millicores`)
//! beyond a short burst. The
//! guest is found running at each epoch tick it computes through (or
//! resumes after a host call that outlasted a tick); past a grace of a few
//! ticks per call, it runs on through the next tick only with a token of
//! the provider's bucket, and a call that finds the bucket empty pauses
//! until it takes one. The grace keeps the many short calls of a busy
//! provider, whose host calls outlast ticks, from being charged as
//! computation. Calls run
//! on the controllers'
//! threads, so without it a provider spinning in many calls at once would
//! starve the other providers' calls and the controllers until its
//! deadlines stop it; a provider that computes briefly between host calls
//! never waits.

use std::num::NonZeroU32;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// Epoch ticks in a second of one core.
const TICKS_PER_CORE_SECOND: u32 = 100;
/// Ticks at which one call is found running before they count against its
/// provider's share: about 50 ms of computation.
const GRACE_TICKS: u32 = 5;
/// Ticks a provider may compute through at once after a quiet spell, at
/// least: about 50 ms, far more than a provider spends between its host
/// calls.
const MIN_BURST_TICKS: u32 = 5;

/// One provider's CPU bucket, shared by its calls.
pub(crate) struct ComputeShare {
    bucket: DefaultDirectRateLimiter,
}

impl ComputeShare {
    /// A share of `millicores` thousandths of a core, with a burst of a
    /// tenth of a second of it (at least [`MIN_BURST_TICKS`]).
    pub(crate) fn new(millicores: NonZeroU32) -> Self {
        let per_second = (millicores.get() / (1000 / TICKS_PER_CORE_SECOND)).max(1);
        let burst = (per_second / 10).max(MIN_BURST_TICKS);
        let quota = Quota::per_second(NonZeroU32::new(per_second).unwrap_or(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
        ComputeShare { bucket: RateLimiter::direct(quota) }
    }

    /// Counts a tick at which a call's guest code was running (`ticks`
    /// counts the call's), past its grace taking a token for the next;
    /// `false` when the provider is past its share and the call must wait
    /// its [`ComputeShare::turn`].
    pub(crate) fn tick(&self, ticks: &mut u32) -> bool {
        *ticks = ticks.saturating_add(1);
        *ticks <= GRACE_TICKS || self.bucket.check().is_ok()
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
    async fn a_provider_computes_a_burst_then_its_share_across_its_calls() {
        let quarter = NonZeroU32::new(250).unwrap();
        let share = ComputeShare::new(quarter);
        let mut call = 0;
        for _ in 0..GRACE_TICKS + MIN_BURST_TICKS {
            assert!(share.tick(&mut call), "within the call's grace and the provider's burst");
        }
        assert!(!share.tick(&mut call), "past both");
        let mut another_call = 0;
        assert!(share.tick(&mut another_call), "another call has its grace");
        let other = ComputeShare::new(quarter);
        let mut other_call = GRACE_TICKS;
        assert!(other.tick(&mut other_call), "another provider has its own share");
        let started = Instant::now();
        for _ in 0..5 {
            share.turn().await;
        }
        // Five more ticks at 25 a second.
        assert!(started.elapsed() >= Duration::from_millis(150), "{:?}", started.elapsed());
    }
}
