//! Instances a provider keeps from one call to the next, when its limits
//! allow some ([`Limits::kept_instances`](crate::Limits::kept_instances)):
//! for a provider written for a long-lived process, whose caches, clients
//! or in-memory cloud live in its memory.
//!
//! Each kept instance belongs to one loaded version of one provider and is
//! dropped with it, so a reload starts afresh and no two providers share
//! one. A call that traps, runs out its deadline or leaves host resources
//! behind drops its instance too: the next call starts a new one, as a
//! crashed process would restart.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Semaphore, SemaphorePermit};
use wasmtime::Store;
use wasmtime::component::Instance;

use crate::provider::{CallState, Exports};

/// An instance with the store it lives in.
pub(crate) struct KeptInstance {
    pub(crate) store: Store<CallState>,
    pub(crate) instance: Instance,
    pub(crate) exports: Exports,
}

/// A provider's kept instances: at most as many as it was given, each
/// serving one call at a time.
pub(crate) struct KeptInstances {
    /// Those no call is using.
    free: Mutex<Vec<KeptInstance>>,
    /// One permit per instance: a call holding one uses a free instance or
    /// starts one.
    places: Semaphore,
    /// Whether a call has left host resources behind, said once.
    said_held: AtomicBool,
}

impl KeptInstances {
    /// Room for `count` instances; `None` for none.
    pub(crate) fn new(count: usize) -> Option<Self> {
        (count > 0).then(|| KeptInstances {
            free: Mutex::default(),
            places: Semaphore::new(count),
            said_held: AtomicBool::new(false),
        })
    }

    /// A place for one call, waiting while every instance is in use, with
    /// the free instance it finds there, if any.
    pub(crate) async fn place(&self) -> Place<'_> {
        // The semaphore is never closed.
        let permit = self.places.acquire().await.ok();
        let instance = self.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop();
        Place { kept: self, _permit: permit, instance }
    }

    /// Instances kept and free.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }
}

/// One call's place among the kept instances.
pub(crate) struct Place<'a> {
    kept: &'a KeptInstances,
    _permit: Option<SemaphorePermit<'a>>,
    /// The instance kept there, for the call to take.
    pub(crate) instance: Option<KeptInstance>,
}

impl Place<'_> {
    /// Keeps `instance` for the next call, after a call that ended well,
    /// unless it holds host resources the call left behind (then it is
    /// dropped, which drops them). `provider` names it in the one line
    /// that says so.
    pub(crate) fn keep(self, mut instance: KeptInstance, provider: &str) {
        if !instance.store.data_mut().end_call() {
            if !self.kept.said_held.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    provider,
                    "the provider holds host resources after a call; its instances are not kept past such a call"
                );
            }
            return;
        }
        self.kept.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(instance);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_waits_while_every_place_is_taken() {
        assert!(KeptInstances::new(0).is_none(), "none kept: every call is fresh");
        let kept = KeptInstances::new(1).unwrap();
        let first = kept.place().await;
        assert!(first.instance.is_none(), "nothing kept yet");
        let second = tokio::time::timeout(std::time::Duration::from_millis(50), kept.place()).await;
        assert!(second.is_err(), "the one place is taken");
        drop(first);
        assert!(kept.place().await.instance.is_none(), "a call that kept nothing leaves nothing");
        assert_eq!(kept.free(), 0);
    }
}
