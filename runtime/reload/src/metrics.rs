//! Metrics of provider reloads: outcomes, rejections by stage, durations,
//! and the version loaded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of a reload attempt.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    provider: String,
    outcome: String,
}

/// Labels of a rejection.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabels {
    provider: String,
    stage: String,
}

/// Labels of the version loaded.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    provider: String,
    digest: String,
    source: String,
    config_digest: String,
}

/// Labels naming a provider.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabels {
    provider: String,
}

struct Families {
    reloads: Family<OutcomeLabels, Counter>,
    rejections: Family<StageLabels, Counter>,
    durations: Family<ProviderLabels, Histogram>,
    loaded: Family<VersionLabels, Gauge>,
    loaded_at: Family<ProviderLabels, Gauge>,
    current: Mutex<HashMap<String, VersionLabels>>,
}

/// Reload metrics; clones share them.
#[derive(Clone)]
pub struct ReloadMetrics {
    families: Arc<Families>,
}

impl Default for ReloadMetrics {
    fn default() -> Self {
        ReloadMetrics {
            families: Arc::new(Families {
                reloads: Family::default(),
                rejections: Family::default(),
                durations: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.01, 2.0, 12))),
                loaded: Family::default(),
                loaded_at: Family::default(),
                current: Mutex::default(),
            }),
        }
    }
}

impl ReloadMetrics {
    /// Registers every metric in `registry`, under `provider_`:
    /// `provider_reloads_total{provider,outcome}` (`reloaded`, `rejected`,
    /// `unavailable`), `provider_rejections_total{provider,stage}`,
    /// `provider_reload_duration_seconds{provider}`,
    /// `provider_loaded_info{provider,digest,source,config_digest}` (1 for
    /// the version serving) and
    /// `provider_loaded_timestamp_seconds{provider}`.
    pub fn register(&self, registry: &mut Registry) {
        let families = &self.families;
        let provider = registry.sub_registry_with_prefix("provider");
        provider.register(
            "reloads",
            "Provider versions offered after the first, by outcome: reloaded, rejected, or unavailable (the source could not be read)",
            families.reloads.clone(),
        );
        provider.register(
            "rejections",
            "Provider versions rejected, by the stage that failed: verify, compile, world, initialize, smoke",
            families.rejections.clone(),
        );
        provider.register(
            "reload_duration_seconds",
            "Seconds from a version's arrival to its swap (compile, world check, smoke test)",
            families.durations.clone(),
        );
        provider.register(
            "loaded_info",
            "The provider version serving: 1 for its component digest, source and configuration digest",
            families.loaded.clone(),
        );
        provider.register(
            "loaded_timestamp_seconds",
            "When the provider version serving was loaded, in seconds since the Unix epoch",
            families.loaded_at.clone(),
        );
    }

    /// Records a version loaded (the first, or a swap) and makes it the one
    /// serving.
    pub(crate) fn loaded(&self, provider: &str, digest: &str, source: &str, config_digest: &str, unix_seconds: i64) {
        let labels = VersionLabels {
            provider: provider.to_owned(),
            digest: digest.to_owned(),
            source: source.to_owned(),
            config_digest: config_digest.to_owned(),
        };
        let mut current = self.families.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(previous) = current.insert(provider.to_owned(), labels.clone()) {
            self.families.loaded.remove(&previous);
        }
        self.families.loaded.get_or_create(&labels).set(1);
        self.families.loaded_at.get_or_create(&ProviderLabels { provider: provider.to_owned() }).set(unix_seconds);
    }

    /// Records a swap and how long it took from the version's arrival.
    pub(crate) fn reloaded(&self, provider: &str, seconds: f64) {
        self.outcome(provider, "reloaded");
        self.families.durations.get_or_create(&ProviderLabels { provider: provider.to_owned() }).observe(seconds);
    }

    /// Records a rejection at `stage`.
    pub(crate) fn rejected(&self, provider: &str, stage: &str) {
        self.outcome(provider, "rejected");
        let labels = StageLabels { provider: provider.to_owned(), stage: stage.to_owned() };
        self.families.rejections.get_or_create(&labels).inc();
    }

    /// Records a source that could not be read.
    pub(crate) fn unavailable(&self, provider: &str) {
        self.outcome(provider, "unavailable");
    }

    fn outcome(&self, provider: &str, outcome: &str) {
        let labels = OutcomeLabels { provider: provider.to_owned(), outcome: outcome.to_owned() };
        self.families.reloads.get_or_create(&labels).inc();
    }
}
