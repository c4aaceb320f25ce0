//! Node changes that come close together, synced as one: a burst of them
//! (nodes joining at once, a zone coming back) ends when no change came for
//! [`QUIET`], or [`LONGEST`] after its first change, whichever is sooner.
//! Each load balancer is then updated once for the whole burst, and a lone
//! change waits only the quiet period, where a fixed window made every
//! change wait its full length.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How long without a change ends a burst.
pub(super) const QUIET: Duration = Duration::from_millis(20);

/// How long a burst may go on, so that a steady stream of changes still
/// reaches the load balancers.
pub(super) const LONGEST: Duration = Duration::from_millis(100);

/// The burst of node changes under way, if any.
#[derive(Debug, Default)]
pub(super) struct Burst {
    window: Mutex<Option<Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    first: Instant,
    last: Instant,
}

impl Burst {
    /// Takes note of a change now.
    pub(super) fn change(&self) {
        let now = Instant::now();
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let first = window.map_or(now, |window| window.first);
        *window = Some(Window { first, last: now });
    }

    /// Ends the burst when it is over: `None` to sync now, or how long it
    /// may still go on.
    pub(super) fn end(&self) -> Option<Duration> {
        let now = Instant::now();
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let Window { first, last } = (*window)?;
        let over = (last + QUIET).min(first + LONGEST);
        if now >= over {
            *window = None;
            None
        } else {
            Some(over - now)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_lone_change_waits_only_the_quiet_period() {
        let burst = Burst::default();
        assert_eq!(burst.end(), None, "no change, nothing to wait for");
        burst.change();
        assert_eq!(burst.end(), Some(QUIET));
        tokio::time::sleep(QUIET).await;
        assert_eq!(burst.end(), None, "over once quiet");
        assert_eq!(burst.end(), None, "and ended");
    }

    #[tokio::test(start_paused = true)]
    async fn changes_close_together_are_one_burst() {
        let burst = Burst::default();
        let step = QUIET / 2;
        for _ in 0..3 {
            burst.change();
            tokio::time::sleep(step).await;
        }
        assert_eq!(burst.end(), Some(QUIET - step), "the quiet period counts from the last change");
        tokio::time::sleep(QUIET - step).await;
        assert_eq!(burst.end(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_steady_stream_of_changes_ends_its_burst_at_the_longest() {
        let burst = Burst::default();
        let step = QUIET / 2;
        burst.change();
        let start = Instant::now();
        loop {
            tokio::time::sleep(step).await;
            if burst.end().is_none() {
                break;
            }
            burst.change();
        }
        assert_eq!(start.elapsed(), LONGEST, "the burst ends at the longest, though changes go on");
    }
}
