//! CPU shared fairly between providers: a call whose guest code keeps
//! running past a grace period is compute-heavy, and a provider's
//! compute-heavy calls together get a quarter of one core, pausing at each
//! epoch tick. Calls run on the controllers' threads, so without it a
//! provider spinning in many calls at once would starve the other
//! providers' calls and the controllers until its deadlines stop it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::engine::EPOCH_TICK;

/// Epoch ticks a call's guest code may be found running before the call is
/// compute-heavy: about 50 ms of computation, far more than a provider
/// spends between its host calls.
const GRACE_TICKS: u32 = 5;
/// A provider's compute-heavy calls together run one tick in this many.
const SHARE: u32 = 4;

/// One provider's compute-heavy calls in flight; clones share the count.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeavyCalls(Arc<AtomicU32>);

/// The guest time of one call, in epoch ticks at which it was running.
#[derive(Debug)]
pub(crate) struct CallCompute {
    heavy: HeavyCalls,
    ticks: u32,
}

impl CallCompute {
    /// A call of the provider whose heavy calls `heavy` counts.
    pub(crate) fn new(heavy: HeavyCalls) -> Self {
        CallCompute { heavy, ticks: 0 }
    }

    /// Counts a tick at which the guest was running, and says how long it
    /// pauses before it runs on: not at all within the grace period, then
    /// long enough that the provider's heavy calls together run one tick in
    /// [`SHARE`].
    pub(crate) fn tick(&mut self) -> Option<Duration> {
        self.ticks = self.ticks.saturating_add(1);
        if self.ticks < GRACE_TICKS {
            return None;
        }
        if self.ticks == GRACE_TICKS {
            self.heavy.0.fetch_add(1, Ordering::Relaxed);
        }
        let heavy = self.heavy.0.load(Ordering::Relaxed).max(1);
        Some(EPOCH_TICK * heavy.saturating_mul(SHARE).saturating_sub(1))
    }
}

impl Drop for CallCompute {
    fn drop(&mut self) {
        if self.ticks >= GRACE_TICKS {
            self.heavy.0.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_calls_of_a_provider_share_a_quarter_of_a_core() {
        let heavy = HeavyCalls::default();
        let mut first = CallCompute::new(heavy.clone());
        for _ in 1..GRACE_TICKS {
            assert_eq!(first.tick(), None, "within the grace period");
        }
        assert_eq!(first.tick(), Some(EPOCH_TICK * 3), "alone: one tick in four");
        let mut second = CallCompute::new(heavy.clone());
        (1..GRACE_TICKS).for_each(|_| assert_eq!(second.tick(), None));
        assert_eq!(second.tick(), Some(EPOCH_TICK * 7), "two: one tick in eight each");
        assert_eq!(first.tick(), Some(EPOCH_TICK * 7));
        drop(second);
        assert_eq!(first.tick(), Some(EPOCH_TICK * 3));
        drop(first);
        assert_eq!(heavy.0.load(Ordering::Relaxed), 0);
    }
}
