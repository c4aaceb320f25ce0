//! What one provider may use: time per call, memory per instance, calls at
//! once, HTTP body sizes.

use std::time::Duration;

use wasmtime::ResourceLimiter;

/// A provider's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// How long one call may take, host calls included.
    pub deadline: Duration,
    /// The most linear memory one instance may have, in bytes.
    pub memory: u64,
    /// Calls running at once; more wait their turn.
    pub concurrency: usize,
    /// The largest HTTP request body a provider may send, in bytes.
    pub http_request_body: usize,
    /// The largest HTTP response body a provider may receive, in bytes.
    pub http_response_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_secs(30),
            memory: 64 << 20,
            concurrency: 64,
            http_request_body: 1 << 20,
            http_response_body: 16 << 20,
        }
    }
}

/// Table elements an instance may have: far above what a Rust provider needs.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Caps an instance's memory and remembers whether the cap was hit, so that
/// the trap that usually follows can be reported as what it is.
#[derive(Debug)]
pub struct MemoryLimiter {
    limit: usize,
    hit: bool,
}

impl MemoryLimiter {
    /// A limiter allowing `limit` bytes of linear memory.
    pub fn new(limit: u64) -> Self {
        MemoryLimiter { limit: usize::try_from(limit).unwrap_or(usize::MAX), hit: false }
    }

    /// Whether the instance tried to grow past its limit.
    pub fn hit(&self) -> bool {
        self.hit
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = desired <= self.limit && maximum.is_none_or(|maximum| desired <= maximum);
        self.hit |= !allowed;
        Ok(allowed)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|maximum| desired <= maximum))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_growth_past_the_limit_and_remembers_it() {
        let mut limiter = MemoryLimiter::new(1 << 20);
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        assert!(!limiter.hit());
        assert!(!limiter.memory_growing(1 << 20, (1 << 20) + 65536, None).unwrap());
        assert!(limiter.hit());
    }

    #[test]
    fn respects_the_memory_s_own_maximum() {
        let mut limiter = MemoryLimiter::new(1 << 30);
        assert!(!limiter.memory_growing(0, 2 << 20, Some(1 << 20)).unwrap());
    }
}
