//! How long the lifecycle waits before asking the cloud again after the
//! cloud refused a whole pass: throttled, down, or out of its deadline.

use std::time::Duration;

/// The longest the lifecycle waits between passes that ask the cloud.
pub(super) const MAX_PASS_BACKOFF: Duration = Duration::from_secs(120);

/// The wait before the next pass that asks the cloud after passes it
/// refused: twice the wait before, from twice the monitor period up to
/// [`MAX_PASS_BACKOFF`], or the delay the provider asked for when that is
/// longer (the host cuts that to `MAX_RETRY_DELAY`). A pass the cloud
/// answered starts over.
#[derive(Debug)]
pub(super) struct PassBackoff {
    period: Duration,
    refused: u32,
}

impl PassBackoff {
    pub(super) fn new(period: Duration) -> Self {
        PassBackoff { period, refused: 0 }
    }

    /// Starts over: the cloud answered a pass.
    pub(super) fn answered(&mut self) {
        self.refused = 0;
    }

    /// The wait after a pass the cloud refused; `asked` is the delay the
    /// provider asked for, if it did.
    pub(super) fn refused(&mut self, asked: Option<Duration>) -> Duration {
        self.refused = self.refused.saturating_add(1);
        let doubled = self.period.saturating_mul(1 << self.refused.min(16)).min(MAX_PASS_BACKOFF.max(self.period));
        asked.map_or(doubled, |asked| asked.max(doubled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_the_period_up_to_the_cap_and_resets_on_an_answer() {
        let mut backoff = PassBackoff::new(Duration::from_secs(5));
        let waits: Vec<u64> = (0..7).map(|_| backoff.refused(None).as_secs()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 120, 120, 120]);
        backoff.answered();
        assert_eq!(backoff.refused(None), Duration::from_secs(10));
    }

    #[test]
    fn waits_as_long_as_the_provider_asks() {
        let mut backoff = PassBackoff::new(Duration::from_secs(5));
        assert_eq!(backoff.refused(Some(Duration::from_secs(300))), Duration::from_secs(300));
        assert_eq!(backoff.refused(Some(Duration::from_secs(1))), Duration::from_secs(20));
    }

    #[test]
    fn a_period_longer_than_the_cap_is_kept() {
        let mut backoff = PassBackoff::new(Duration::from_secs(600));
        assert_eq!(backoff.refused(None), Duration::from_secs(600));
    }
}
