//! The controllers' Prometheus metrics, under upstream's names where
//! upstream has them.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of a work queue's metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// The queue's name.
    pub name: String,
    /// The provider its keys are reconciled with.
    pub provider: String,
}

/// Labels of a metric of one provider's work.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderLabels {
    /// The provider.
    pub provider: String,
}

/// Labels of `running_managed_controllers`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller's name.
    pub name: String,
    /// Who manages it.
    pub manager: String,
}

/// Labels of `reconcile_errors_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The controller.
    pub controller: String,
    /// The error's kind: the provider's (`cloud`, `deadline`...), `api` or
    /// `unreachable`.
    pub kind: String,
    /// The provider the controller reconciled with.
    pub provider: String,
}

/// Labels of `route_controller_route_sync_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteSyncLabels {
    /// `changed` when a route was created or deleted, `error` when the
    /// reconcile failed, else `noop`.
    pub outcome: String,
    /// What started it: `periodic` or `node_change`.
    pub trigger: String,
    /// The provider the routes were reconciled with.
    pub provider: String,
}

/// Labels of `cloud_node_lifecycle_passes_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PassLabels {
    /// `answered` when the cloud answered the pass's questions, `refused`
    /// when it refused them all, `waited` when the pass did not ask it, as
    /// it was being waited for after a refusal.
    pub outcome: String,
    /// The provider asked.
    pub provider: String,
}

/// Labels of `leader_election_master_status`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeaseLabels {
    /// The Lease's name.
    pub name: String,
}

/// Work queue latencies: 1 ms to 33 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Upstream's node sync and host update buckets: 1 s to about 4.5 h.
fn node_sync_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 2.0, 15))
}

/// Upstream's node initialisation buckets: 1 s to about 17 min.
fn node_delay_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 6))
}

struct Families {
    loadbalancer_sync: Family<ProviderLabels, Counter>,
    nodesync_latency: Family<ProviderLabels, Histogram>,
    nodesync_errors: Family<ProviderLabels, Counter>,
    update_host_latency: Family<ProviderLabels, Histogram>,
    taint_removal_delay: Family<ProviderLabels, Histogram>,
    initial_node_sync_delay: Family<ProviderLabels, Histogram>,
    running_controllers: Family<ControllerLabels, Gauge>,
    route_syncs: Family<RouteSyncLabels, Counter>,
    lifecycle_passes: Family<PassLabels, Counter>,
    node_status_passes: Family<ProviderLabels, Counter>,
    reconcile_errors: Family<ErrorLabels, Counter>,
    leader: Family<LeaseLabels, Gauge>,
    queue_depth: Family<QueueLabels, Gauge>,
    queue_adds: Family<QueueLabels, Counter>,
    queue_duration: Family<QueueLabels, Histogram>,
    work_duration: Family<QueueLabels, Histogram>,
    queue_retries: Family<QueueLabels, Counter>,
    unfinished_work: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    longest_running: Family<QueueLabels, Gauge<f64, AtomicU64>>,
}

/// The controllers' metrics; clones share them. Each clone records its
/// work as one provider's: see [`Metrics::for_provider`].
#[derive(Clone)]
pub struct Metrics {
    families: Arc<Families>,
    provider: Arc<str>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            families: Arc::new(Families {
                loadbalancer_sync: Family::default(),
                nodesync_latency: Family::new_with_constructor(node_sync_histogram),
                nodesync_errors: Family::default(),
                update_host_latency: Family::new_with_constructor(node_sync_histogram),
                taint_removal_delay: Family::new_with_constructor(node_delay_histogram),
                initial_node_sync_delay: Family::new_with_constructor(node_delay_histogram),
                running_controllers: Family::default(),
                route_syncs: Family::default(),
                lifecycle_passes: Family::default(),
                node_status_passes: Family::default(),
                reconcile_errors: Family::default(),
                leader: Family::default(),
                queue_depth: Family::default(),
                queue_adds: Family::default(),
                queue_duration: Family::new_with_constructor(latency_histogram),
                work_duration: Family::new_with_constructor(latency_histogram),
                queue_retries: Family::default(),
                unfinished_work: Family::default(),
                longest_running: Family::default(),
            }),
            provider: Arc::from(""),
        }
    }
}

/// One work queue's metrics.
#[derive(Clone)]
pub struct QueueMetrics {
    /// Keys waiting.
    pub depth: Gauge,
    /// Keys added.
    pub adds: Counter,
    /// Seconds keys waited before a worker took them.
    pub queue_duration: Histogram,
    /// Seconds a worker spent on a key.
    pub work_duration: Histogram,
    /// Keys requeued after a failure.
    pub retries: Counter,
    /// Seconds the keys being processed have been so, summed.
    pub unfinished_work: Gauge<f64, AtomicU64>,
    /// Seconds the longest-running key has been processed.
    pub longest_running: Gauge<f64, AtomicU64>,
}

impl Metrics {
    /// Registers every metric in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        let families = &self.families;
        let service = registry.sub_registry_with_prefix("service_controller");
        service.register(
            "loadbalancer_sync",
            "Times a load balancer's hosts were updated, as an effect of node changes",
            families.loadbalancer_sync.clone(),
        );
        service.register(
            "nodesync_latency_seconds",
            "Seconds a node sync took to update every load balancer",
            families.nodesync_latency.clone(),
        );
        service.register(
            "nodesync_error",
            "Node syncs that failed to update a load balancer",
            families.nodesync_errors.clone(),
        );
        service.register(
            "update_loadbalancer_host_latency_seconds",
            "Seconds one load balancer took to update its hosts",
            families.update_host_latency.clone(),
        );
        let node = registry.sub_registry_with_prefix("node_controller");
        node.register(
            "cloud_provider_taint_removal_delay_seconds",
            "Seconds from a node's creation to the removal of its cloud provider taint",
            families.taint_removal_delay.clone(),
        );
        node.register(
            "initial_node_sync_delay_seconds",
            "Seconds from a node's creation to its first sync",
            families.initial_node_sync_delay.clone(),
        );
        registry.sub_registry_with_prefix("route_controller").register(
            "route_sync",
            "Route reconciles with the cloud provider, by trigger and outcome",
            families.route_syncs.clone(),
        );
        registry.sub_registry_with_prefix("cloud_node_lifecycle").register(
            "passes",
            "Passes of the node lifecycle over the nodes, by how the cloud took their questions",
            families.lifecycle_passes.clone(),
        );
        registry.sub_registry_with_prefix("cloud_node_status").register(
            "passes",
            "Passes of the node status refresh over the initialised nodes",
            families.node_status_passes.clone(),
        );
        registry.register(
            "running_managed_controllers",
            "Controllers running, by name and manager",
            families.running_controllers.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Reconciles that failed, by controller and kind of error",
            families.reconcile_errors.clone(),
        );
        registry.register(
            "leader_election_master_status",
            "Whether this replica leads (1) or not (0), by lease",
            families.leader.clone(),
        );
        let queue = registry.sub_registry_with_prefix("workqueue");
        queue.register("depth", "Keys waiting in a work queue", families.queue_depth.clone());
        queue.register("adds", "Keys added to a work queue", families.queue_adds.clone());
        queue.register(
            "queue_duration_seconds",
            "Seconds a key waited in a work queue before a worker took it",
            families.queue_duration.clone(),
        );
        queue.register("work_duration_seconds", "Seconds a worker spent on a key", families.work_duration.clone());
        queue.register("retries", "Keys requeued after a failure", families.queue_retries.clone());
        queue.register(
            "unfinished_work_seconds",
            "Seconds the keys being processed have been so, summed: large values mean stuck workers",
            families.unfinished_work.clone(),
        );
        queue.register(
            "longest_running_processor_seconds",
            "Seconds the longest-running key of a work queue has been processed",
            families.longest_running.clone(),
        );
    }

    /// The same metrics, recording work done with the provider `name`;
    /// its counters show from now on, at zero until they count.
    pub fn for_provider(&self, name: &str) -> Metrics {
        let metrics = Metrics { families: self.families.clone(), provider: Arc::from(name) };
        let _ = metrics.families.loadbalancer_sync.get_or_create(&metrics.provider());
        let _ = metrics.families.nodesync_errors.get_or_create(&metrics.provider());
        metrics
    }

    fn provider(&self) -> ProviderLabels {
        ProviderLabels { provider: self.provider.to_string() }
    }

    /// The metrics of the work queue `name`.
    pub fn queue(&self, name: &str) -> QueueMetrics {
        let labels = QueueLabels { name: name.to_owned(), provider: self.provider.to_string() };
        let families = &self.families;
        QueueMetrics {
            depth: families.queue_depth.get_or_create(&labels).clone(),
            adds: families.queue_adds.get_or_create(&labels).clone(),
            queue_duration: families.queue_duration.get_or_create(&labels).clone(),
            work_duration: families.work_duration.get_or_create(&labels).clone(),
            retries: families.queue_retries.get_or_create(&labels).clone(),
            unfinished_work: families.unfinished_work.get_or_create(&labels).clone(),
            longest_running: families.longest_running.get_or_create(&labels).clone(),
        }
    }

    /// Counts a load balancer configured.
    pub fn load_balancer_synced(&self) {
        self.families.loadbalancer_sync.get_or_create(&self.provider()).inc();
    }

    /// Records a node sync that took `seconds`, and whether it failed.
    pub fn node_sync(&self, seconds: f64, failed: bool) {
        self.families.nodesync_latency.get_or_create(&self.provider()).observe(seconds);
        if failed {
            self.families.nodesync_errors.get_or_create(&self.provider()).inc();
        }
    }

    /// Records one load balancer's host update taking `seconds`.
    pub fn host_update(&self, seconds: f64) {
        self.families.update_host_latency.get_or_create(&self.provider()).observe(seconds);
    }

    /// Records a node's first sync `seconds` after its creation.
    pub fn initial_node_sync(&self, seconds: f64) {
        self.families.initial_node_sync_delay.get_or_create(&self.provider()).observe(seconds);
    }

    /// Records a cloud taint removed `seconds` after the node's creation.
    pub fn taint_removed(&self, seconds: f64) {
        self.families.taint_removal_delay.get_or_create(&self.provider()).observe(seconds);
    }

    /// Counts a pass of the node lifecycle with `outcome`: `answered`,
    /// `refused` or `waited`.
    pub fn lifecycle_pass(&self, outcome: &str) {
        let labels = PassLabels { outcome: outcome.to_owned(), provider: self.provider.to_string() };
        self.families.lifecycle_passes.get_or_create(&labels).inc();
    }

    /// Counts a pass of the node status refresh.
    pub fn node_status_pass(&self) {
        self.families.node_status_passes.get_or_create(&self.provider()).inc();
    }

    /// Counts a failed reconcile of `controller`.
    pub fn reconcile_error(&self, controller: &str, kind: &str) {
        let labels = ErrorLabels {
            controller: controller.to_owned(),
            kind: kind.to_owned(),
            provider: self.provider.to_string(),
        };
        self.families.reconcile_errors.get_or_create(&labels).inc();
    }

    /// Counts a route reconcile started by `trigger`: failed, or whether it
    /// created or deleted a route.
    pub fn route_sync(&self, trigger: &str, failed: bool, changed: bool) {
        let outcome = match (failed, changed) {
            (true, _) => "error",
            (false, true) => "changed",
            (false, false) => "noop",
        };
        let labels = RouteSyncLabels {
            outcome: outcome.to_owned(),
            trigger: trigger.to_owned(),
            provider: self.provider.to_string(),
        };
        self.families.route_syncs.get_or_create(&labels).inc();
    }

    /// Marks this replica the leader of the lease `name`, or not.
    pub fn leader(&self, name: &str, leading: bool) {
        self.families.leader.get_or_create(&LeaseLabels { name: name.to_owned() }).set(i64::from(leading));
    }

    /// Marks the controller `name` running or stopped.
    pub fn controller_running(&self, name: &str, running: bool) {
        let labels = ControllerLabels { name: name.to_owned(), manager: "cloud-controller-manager".to_owned() };
        self.families.running_controllers.get_or_create(&labels).set(i64::from(running));
    }
}

#[cfg(test)]
impl Metrics {
    /// Every metric in Prometheus' text format.
    pub(crate) fn text(&self) -> String {
        let mut registry = Registry::default();
        self.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("metrics encode");
        text
    }
}
