//! Metrics of provider calls and of the sandbox around them.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use wasm_ccm_cloud::ProviderError;

/// Labels of a provider call.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    provider: String,
    function: String,
    outcome: String,
}

/// Labels of a sandbox event.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabels {
    provider: String,
}

/// Labels of a trap.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TrapLabels {
    provider: String,
    kind: String,
}

/// Labels of a compilation.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CompileLabels {
    provider: String,
    cache: String,
}

/// Labels of an outbound HTTP request.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    provider: String,
    host: String,
    status: String,
}

fn call_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

/// Waits at one rate limit, of every provider.
#[derive(Default)]
struct WaitFamilies {
    count: Family<ProviderLabels, Counter>,
    seconds: Family<ProviderLabels, Counter<f64, AtomicU64>>,
}

impl WaitFamilies {
    /// Registers `<name>` counting waits and `<name>_seconds` summing them.
    fn register(&self, registry: &mut Registry, name: &str, count_help: &str, seconds_help: &str) {
        registry.register(name, count_help, self.count.clone());
        registry.register(format!("{name}_seconds"), seconds_help, self.seconds.clone());
    }

    fn of(&self, provider: &str) -> Waits {
        let labels = ProviderLabels { provider: provider.to_owned() };
        Waits { count: self.count.get_or_create(&labels).clone(), seconds: self.seconds.get_or_create(&labels).clone() }
    }
}

/// One provider's counters of waits at one rate limit.
#[derive(Clone)]
pub(crate) struct Waits {
    count: Counter,
    seconds: Counter<f64, AtomicU64>,
}

impl Waits {
    /// Records a wait.
    pub(crate) fn record(&self, waited: Duration) {
        self.count.inc();
        self.seconds.inc_by(waited.as_secs_f64());
    }
}

/// Distinct hosts labelled per provider; more are counted as `other`, so
/// that a provider cannot grow the metrics without bound.
const MAX_HOSTS: usize = 256;

struct Families {
    hosts: Mutex<HashMap<String, HashSet<String>>>,
    calls: Family<CallLabels, Histogram>,
    traps: Family<TrapLabels, Counter>,
    deadlines: Family<ProviderLabels, Counter>,
    memory_limits: Family<ProviderLabels, Counter>,
    http: Family<HttpLabels, Counter>,
    compilations: Family<CompileLabels, Counter>,
    call_waits: WaitFamilies,
    http_waits: WaitFamilies,
}

/// Provider metrics, shared by every provider of an engine; clones share
/// them.
#[derive(Clone)]
pub struct ProviderMetrics {
    families: Arc<Families>,
}

impl Default for ProviderMetrics {
    fn default() -> Self {
        ProviderMetrics {
            families: Arc::new(Families {
                hosts: Mutex::default(),
                calls: Family::new_with_constructor(call_histogram),
                traps: Family::default(),
                deadlines: Family::default(),
                memory_limits: Family::default(),
                http: Family::default(),
                compilations: Family::default(),
                call_waits: WaitFamilies::default(),
                http_waits: WaitFamilies::default(),
            }),
        }
    }
}

impl ProviderMetrics {
    /// Registers every metric in `registry`, under `provider_`.
    pub fn register(&self, registry: &mut Registry) {
        let families = &self.families;
        let provider = registry.sub_registry_with_prefix("provider");
        provider.register(
            "call_duration_seconds",
            "Seconds provider calls took, by provider, function and outcome",
            families.calls.clone(),
        );
        provider.register("traps", "Provider calls ended by a trap or a panic", families.traps.clone());
        provider.register("deadline_exceeded", "Provider calls stopped at their deadline", families.deadlines.clone());
        provider.register(
            "memory_limit_exceeded",
            "Provider calls that tried to grow past their memory limit",
            families.memory_limits.clone(),
        );
        provider.register(
            "http_requests",
            "Outbound HTTP requests of providers, by host and status (or refusal)",
            families.http.clone(),
        );
        provider.register(
            "loads",
            "Provider loads, by whether the compile cache had their code: hit, miss, rejected (an entry that \
             did not verify) or disabled",
            families.compilations.clone(),
        );
        families.call_waits.register(
            provider,
            "call_throttled",
            "Provider calls that waited for the provider's call rate",
            "Seconds provider calls waited for the provider's call rate",
        );
        families.http_waits.register(
            provider,
            "http_throttled",
            "Outbound HTTP requests of providers that waited for the provider's request rate",
            "Seconds outbound HTTP requests of providers waited for the provider's request rate",
        );
    }

    /// The counters of `provider`'s calls waiting for its call rate.
    pub(crate) fn call_waits(&self, provider: &str) -> Waits {
        self.families.call_waits.of(provider)
    }

    /// The counters of `provider`'s HTTP requests waiting for its request
    /// rate.
    pub(crate) fn http_waits(&self, provider: &str) -> Waits {
        self.families.http_waits.of(provider)
    }

    /// Records where a load's compiled code came from (`cache`, a
    /// [`CacheOutcome`](crate::CacheOutcome)'s name), and makes the
    /// provider's deadline and memory counters exist at 0, so that an
    /// alert on their `increase()` sees the first one.
    pub(crate) fn compile(&self, provider: &str, cache: &str) {
        let labels = CompileLabels { provider: provider.to_owned(), cache: cache.to_owned() };
        self.families.compilations.get_or_create(&labels).inc();
        let provider = ProviderLabels { provider: provider.to_owned() };
        for family in [&self.families.deadlines, &self.families.memory_limits] {
            drop(family.get_or_create(&provider));
        }
    }

    /// Records a call and, when the sandbox stopped it, why.
    pub(crate) fn call(&self, provider: &str, function: &str, seconds: f64, result: Result<(), &ProviderError>) {
        let outcome = result.err().map_or("ok", ProviderError::kind);
        let labels =
            CallLabels { provider: provider.to_owned(), function: function.to_owned(), outcome: outcome.to_owned() };
        self.families.calls.get_or_create(&labels).observe(seconds);
        let provider = ProviderLabels { provider: provider.to_owned() };
        match result {
            Err(ProviderError::Trap { .. } | ProviderError::Panic { .. }) => {
                let labels = TrapLabels { provider: provider.provider, kind: outcome.to_owned() };
                self.families.traps.get_or_create(&labels).inc();
            }
            Err(ProviderError::DeadlineExceeded { .. }) => {
                self.families.deadlines.get_or_create(&provider).inc();
            }
            Err(ProviderError::MemoryLimit { .. }) => {
                self.families.memory_limits.get_or_create(&provider).inc();
            }
            _ => {}
        }
    }

    fn bounded_host<'a>(&self, provider: &str, host: &'a str) -> &'a str {
        let mut hosts = self.families.hosts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let seen = hosts.entry(provider.to_owned()).or_default();
        if seen.contains(host) || (seen.len() < MAX_HOSTS && seen.insert(host.to_owned())) { host } else { "other" }
    }

    /// Records an outbound request and its status class (`2xx`), or why it
    /// got none (`denied`, `timeout`, `error`). The host is that of a
    /// request the allow-list allowed (`None`: `-`); refused requests are
    /// not labelled with the host the provider asked for.
    pub(crate) fn http(&self, provider: &str, host: Option<&str>, status: &str) {
        let host = match host {
            Some(host) if status != "denied" => self.bounded_host(provider, host),
            _ => "-",
        };
        let labels = HttpLabels { provider: provider.to_owned(), host: host.to_owned(), status: status.to_owned() };
        self.families.http.get_or_create(&labels).inc();
    }
}
