//! What a provider uses now: calls running and waiting, and the linear
//! memory of its live instances.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

/// What a provider uses at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Calls running, each holding a concurrency permit.
    pub calls_in_flight: usize,
    /// Calls waiting for the call rate or for a concurrency permit.
    pub calls_waiting: usize,
    /// Bytes of linear memory of the live instances, those of replaced
    /// versions still finishing calls included.
    pub memory_bytes: u64,
}

/// Calls waiting and in flight, counted by the [`Counted`] guards they hold.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    pub(crate) waiting: AtomicUsize,
    pub(crate) in_flight: AtomicUsize,
}

impl Calls {
    /// What it counts now, with `memory_bytes` in use.
    pub(crate) fn usage(&self, memory_bytes: u64) -> Usage {
        Usage {
            calls_in_flight: self.in_flight.load(Ordering::Relaxed),
            calls_waiting: self.waiting.load(Ordering::Relaxed),
            memory_bytes,
        }
    }
}

/// One more in a count while it lives, however its holder ends.
#[derive(Debug)]
pub(crate) struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    pub(crate) fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Counted(count)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
