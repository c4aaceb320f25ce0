//! What wasm-ccm's benchmarks share: timing statistics and process memory.

use std::time::Duration;

/// Durations of repeated runs.
pub struct Samples(Vec<Duration>);

impl Samples {
    /// Collects `samples`.
    pub fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        Samples(samples)
    }

    /// The `q`-quantile, `q` in `[0, 1]`.
    pub fn quantile(&self, q: f64) -> Duration {
        let last = self.0.len().saturating_sub(1);
        let index = ((last as f64) * q).round() as usize;
        self.0.get(index).copied().unwrap_or_default()
    }

    /// The median.
    pub fn median(&self) -> Duration {
        self.quantile(0.5)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }
}

/// Microseconds, for tables.
pub fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

/// The process's resident memory, in bytes, from `/proc/self/statm`.
pub fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|pages| pages.parse().ok()).unwrap_or(0);
    pages * 4096
}
