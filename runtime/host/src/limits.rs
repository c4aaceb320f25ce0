//! What one provider may use: time per call, memory per instance, calls at
//! once and per second, HTTP requests per second, HTTP body sizes.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wasmtime::ResourceLimiter;

/// A rate limit: `per_second` on average, and up to `burst` at once after
/// a quiet spell (a token bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Tokens added per second.
    pub per_second: NonZeroU32,
    /// The bucket's size.
    pub burst: NonZeroU32,
}

/// The most linear memory an instance can have: a 32-bit memory's 4 GiB.
pub const MAX_LINEAR_MEMORY: u64 = 4 << 30;

/// A provider's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// How long one call may take, host calls included.
    pub deadline: Duration,
    /// The most linear memory one instance may have, in bytes.
    pub memory: u64,
    /// Calls running at once; more wait their turn.
    pub concurrency: usize,
    /// Instances kept from one call to the next, each with what its calls
    /// left in its memory (caches, clients, an in-memory cloud), for a
    /// provider written for a long-lived process; a call waits for one
    /// that is free. 0: every call runs on a fresh instance.
    pub kept_instances: usize,
    /// The largest HTTP request body a provider may send, in bytes.
    pub http_request_body: usize,
    /// The largest HTTP response body a provider may receive, in bytes.
    pub http_response_body: usize,
    /// Calls started per second; more wait their turn, before they take a
    /// place among the `concurrency` calls at once. `None`: no limit.
    pub calls: Option<Rate>,
    /// Outbound HTTP requests per second, to keep within the cloud API's
    /// quota; a request over it waits, within its call's deadline. `None`:
    /// no limit.
    pub http_requests: Option<Rate>,
    /// The CPU its guest code may use, all calls together, in thousandths
    /// of a core; past it, calls pause until it allows them on.
    pub cpu_millicores: NonZeroU32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_secs(30),
            memory: 64 << 20,
            concurrency: 64,
            kept_instances: 0,
            http_request_body: 1 << 20,
            http_response_body: 16 << 20,
            calls: None,
            http_requests: None,
            cpu_millicores: NonZeroU32::MIN.saturating_add(999),
        }
    }
}

/// Elements a table may have: far above what a Rust provider needs, and
/// above the 26,535 of a Go provider built on the real k8s.io/cloud-provider
/// (`providers/upstream-fake-go`). The pools and instances allocated on demand
/// ([`Allocation::OnDemand`](crate::Allocation::OnDemand)) are held to the
/// same bounds, since tables and instances take the host's memory, which
/// the memory limit does not count.
pub(crate) const MAX_TABLE_ELEMENTS: usize = 32_768;
/// Tables an instance may have: a Rust provider has a couple.
pub(crate) const MAX_TABLES: usize = 8;
/// Core instances a component instance may have: a Rust provider has a
/// handful (the program, the WASI adapter, shims).
pub(crate) const MAX_CORE_INSTANCES: usize = 16;
/// Linear memories an instance may have: a Rust provider has one.
pub(crate) const MAX_MEMORIES: usize = 2;
/// Resources (streams, pollables) an instance may hold at once in the
/// host's table: a provider needs a handful.
pub(crate) const MAX_RESOURCES: usize = 1024;

/// Caps the memory of an instance, all its linear memories together, and
/// their number, and remembers whether the cap was hit, so that the trap
/// that usually follows can be reported as what it is.
///
/// What it grants is added to a count shared with other instances, and
/// taken back when the limiter, and so its store, is dropped, however the
/// instance ended.
#[derive(Debug)]
pub struct MemoryLimiter {
    limit: usize,
    used: usize,
    hit: bool,
    in_use: Arc<AtomicU64>,
}

impl MemoryLimiter {
    /// A limiter allowing `limit` bytes of linear memory in all, adding
    /// what it grants to `in_use`.
    pub fn new(limit: u64, in_use: Arc<AtomicU64>) -> Self {
        MemoryLimiter { limit: usize::try_from(limit).unwrap_or(usize::MAX), used: 0, hit: false, in_use }
    }

    /// Whether the instance tried to grow past its limit.
    pub fn hit(&self) -> bool {
        self.hit
    }

    /// Forgets that the limit was hit, for the next call on the same
    /// instance: a guest that survived a refused growth did not trap.
    pub fn clear_hit(&mut self) {
        self.hit = false;
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let used = (self.used - current.min(self.used)).saturating_add(desired);
        let allowed = used <= self.limit && maximum.is_none_or(|maximum| desired <= maximum);
        self.hit |= !allowed;
        if allowed {
            // Adding before taking back keeps the shared count from dipping
            // below what the other instances hold.
            self.in_use.fetch_add(used as u64, Ordering::Relaxed);
            self.in_use.fetch_sub(self.used as u64, Ordering::Relaxed);
            self.used = used;
        }
        Ok(allowed)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|maximum| desired <= maximum))
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn instances(&self) -> usize {
        MAX_CORE_INSTANCES
    }
}

impl Drop for MemoryLimiter {
    fn drop(&mut self) {
        self.in_use.fetch_sub(self.used as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_growth_past_the_limit_and_remembers_it() {
        let mut limiter = MemoryLimiter::new(1 << 20, Arc::default());
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        assert!(!limiter.hit());
        assert!(!limiter.memory_growing(1 << 20, (1 << 20) + 65536, None).unwrap());
        assert!(limiter.hit());
    }

    #[test]
    fn counts_every_memory_of_the_instance_against_one_limit() {
        let mut limiter = MemoryLimiter::new(64 << 20, Arc::default());
        assert!(limiter.memory_growing(0, 40 << 20, None).unwrap(), "the first memory");
        assert!(!limiter.memory_growing(0, 40 << 20, None).unwrap(), "a second memory past the total");
        assert!(limiter.hit());
        assert!(limiter.memory_growing(0, 24 << 20, None).unwrap(), "within what is left");
        assert!(limiter.memory_growing(40 << 20, 40 << 20, None).unwrap(), "a grow by nothing");
    }

    #[test]
    fn an_instance_with_more_memories_than_providers_need_is_refused() {
        let engine = wasmtime::Engine::default();
        let memories = |count: usize| format!("(module {})", "(memory 1)".repeat(count));
        let instantiate = |count: usize| {
            let module = wasmtime::Module::new(&engine, memories(count)).unwrap();
            let mut store = wasmtime::Store::new(&engine, MemoryLimiter::new(64 << 20, Arc::default()));
            store.limiter(|limiter| limiter);
            wasmtime::Instance::new(&mut store, &module, &[]).map(drop)
        };
        assert!(instantiate(MAX_MEMORIES).is_ok());
        let refused = instantiate(MAX_MEMORIES + 2).unwrap_err();
        assert!(format!("{refused:#}").contains("memory"), "{refused:#}");
    }

    /// Outside a pool, as the instance that runs `initialize` is, tables
    /// and instances are the host's memory: they are held to the pool's
    /// bounds.
    #[test]
    fn tables_and_instances_past_the_pool_s_bounds_are_refused_outside_it() {
        let engine = wasmtime::Engine::default();
        let store = || {
            let mut store = wasmtime::Store::new(&engine, MemoryLimiter::new(64 << 20, Arc::default()));
            store.limiter(|limiter| limiter);
            store
        };
        let instantiate = |store: &mut wasmtime::Store<MemoryLimiter>, text: &str| {
            let module = wasmtime::Module::new(&engine, text).unwrap();
            wasmtime::Instance::new(store, &module, &[]).map(drop)
        };
        let tables =
            |count: usize, elements: usize| format!("(module {})", format!("(table {elements} funcref)").repeat(count));
        assert!(instantiate(&mut store(), &tables(MAX_TABLES, MAX_TABLE_ELEMENTS)).is_ok());
        let refused = instantiate(&mut store(), &tables(MAX_TABLES + 1, 1)).unwrap_err();
        assert!(format!("{refused:#}").contains("table"), "{refused:#}");
        assert!(instantiate(&mut store(), &tables(1, MAX_TABLE_ELEMENTS + 1)).is_err(), "a table too large");

        let mut instances = store();
        for _ in 0..MAX_CORE_INSTANCES {
            instantiate(&mut instances, "(module)").unwrap();
        }
        let refused = instantiate(&mut instances, "(module)").unwrap_err();
        assert!(format!("{refused:#}").contains("instance"), "{refused:#}");
    }

    #[test]
    fn counts_what_it_grants_in_the_shared_count_until_dropped() {
        let in_use = Arc::new(AtomicU64::new(0));
        let mut first = MemoryLimiter::new(64 << 20, in_use.clone());
        let mut second = MemoryLimiter::new(1 << 20, in_use.clone());
        assert!(first.memory_growing(0, 1 << 20, None).unwrap());
        assert!(first.memory_growing(1 << 20, 3 << 20, None).unwrap());
        assert!(second.memory_growing(0, 1 << 20, None).unwrap());
        assert!(!second.memory_growing(1 << 20, 2 << 20, None).unwrap(), "refused growth is not counted");
        assert_eq!(in_use.load(Ordering::Relaxed), 4 << 20);
        drop(first);
        assert_eq!(in_use.load(Ordering::Relaxed), 1 << 20);
        drop(second);
        assert_eq!(in_use.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn respects_the_memory_s_own_maximum() {
        let mut limiter = MemoryLimiter::new(1 << 30, Arc::default());
        assert!(!limiter.memory_growing(0, 2 << 20, Some(1 << 20)).unwrap());
    }
}
