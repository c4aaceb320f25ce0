//! The service controller: a load balancer in the cloud for every Service of
//! type LoadBalancer, its nodes kept in step with the cluster's, and its
//! ingress in the Service's status.

mod node_sync;
pub mod rules;
mod sync;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::Client;
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wasm_ccm_host::ProviderHandle;

use crate::events::Events;
use crate::informer::Change;
use crate::locks::KeyLocks;
use crate::metrics::Metrics;
use crate::nodes::{Fingerprint, NodeCache};
use crate::workqueue::{Backoff, WorkQueue};

use self::rules::{has_finalizer, needs_cleanup, sync_digest, wants_load_balancer};

/// A Service's key.
pub type ServiceKey = ObjectRef<Service>;

/// What the controller remembers of a Service.
#[derive(Debug, Default)]
struct ServiceState {
    /// The digest of its relevant fields last seen.
    digest: Option<u64>,
    /// The nodes its load balancer was last given.
    nodes: Option<Arc<Fingerprint>>,
    /// When its load balancer was last ensured.
    ensured: Option<Instant>,
}

/// The service controller; clones share it.
#[derive(Clone)]
pub struct ServiceController {
    shared: Arc<Shared>,
}

struct Shared {
    client: Client,
    provider: ProviderHandle,
    services: Store<Service>,
    nodes: NodeCache,
    events: Events,
    metrics: Metrics,
    queue: WorkQueue<ServiceKey>,
    states: Mutex<HashMap<ServiceKey, ServiceState>>,
    locks: KeyLocks<ServiceKey>,
    node_changes: Notify,
    workers: usize,
    resync_period: Duration,
}

impl ServiceController {
    /// A controller over the Services of `services` and the nodes of `nodes`.
    pub fn new(
        client: Client,
        provider: ProviderHandle,
        services: Store<Service>,
        nodes: NodeCache,
        events: Events,
        metrics: Metrics,
        settings: &crate::Settings,
    ) -> Self {
        let queue = WorkQueue::new(Backoff::SERVICE, metrics.queue("service"));
        ServiceController {
            shared: Arc::new(Shared {
                client,
                provider,
                services,
                nodes,
                events,
                metrics,
                queue,
                states: Mutex::default(),
                locks: KeyLocks::default(),
                node_changes: Notify::new(),
                workers: settings.concurrent_service_syncs.max(1),
                resync_period: settings.load_balancer_resync_period,
            }),
        }
    }

    /// Takes note of a change to a Service, queueing it when it needs a sync:
    /// when it is new, when a relevant field changed, or when it needs
    /// cleanup.
    pub fn observe(&self, change: Change<Service>) {
        let shared = &self.shared;
        match change {
            Change::Applied(service) => {
                let key = ObjectRef::from_obj(&*service);
                let digest = sync_digest(&service);
                let changed = shared.state(&key).digest.replace(digest) != Some(digest);
                let ours = wants_load_balancer(&service) || has_finalizer(&service);
                if (changed && ours) || needs_cleanup(&service) {
                    shared.queue.add(key);
                }
            }
            Change::Deleted(service) => shared.forget(&ObjectRef::from_obj(&*service)),
            Change::Resynced => {
                let gone: Vec<ServiceKey> =
                    shared.lock_states().keys().filter(|key| shared.services.get(key).is_none()).cloned().collect();
                for key in gone {
                    shared.forget(&key);
                }
            }
        }
    }

    /// Takes note that the nodes changed: load balancers whose node set
    /// differs will be updated.
    pub fn nodes_changed(&self) {
        self.shared.node_changes.notify_one();
    }

    /// Runs the workers, the node sync and the drift repair until `stop`;
    /// then lets syncs in flight finish.
    pub async fn run(self, stop: CancellationToken) {
        let shared = &self.shared;
        let workers = (0..shared.workers).map(|worker| {
            let shared = shared.clone();
            tokio::spawn(shared.work().instrument(tracing::info_span!("service-worker", worker)))
        });
        let workers: Vec<_> = workers.collect();
        let background = async {
            tokio::join!(shared.clone().sync_nodes_on_change(stop.clone()), shared.clone().repair_drift(stop.clone()));
        };
        tokio::select! {
            () = stop.cancelled() => {}
            () = background => {}
        }
        shared.queue.shut_down();
        for worker in workers {
            let _ = worker.await;
        }
    }
}

impl Shared {
    fn lock_states(&self) -> MutexGuard<'_, HashMap<ServiceKey, ServiceState>> {
        self.states.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn state(&self, key: &ServiceKey) -> StateGuard<'_> {
        let mut states = self.lock_states();
        states.entry(key.clone()).or_default();
        StateGuard { states, key: key.clone() }
    }

    fn forget(&self, key: &ServiceKey) {
        self.lock_states().remove(key);
        self.locks.remove(key);
        self.queue.forget(key);
    }

    async fn work(self: Arc<Self>) {
        while let Some(key) = self.queue.next().await {
            let result = self.sync(&key).instrument(tracing::info_span!("sync", service = %key)).await;
            match result {
                Ok(()) => self.queue.forget(&key),
                Err(err) => match err.retry_after() {
                    Some(delay) => {
                        tracing::info!(service = %key, "provider asked to retry in {delay:?}: {err}");
                        self.queue.add_after(key.clone(), delay);
                    }
                    None => {
                        let delay = self.queue.add_rate_limited(key.clone());
                        if err.is_transport() {
                            tracing::debug!(service = %key, "sync failed, retrying in {delay:?}: {err}");
                        } else {
                            tracing::warn!(service = %key, "sync failed, retrying in {delay:?}: {err}");
                        }
                    }
                },
            }
            self.queue.done(&key);
        }
    }

    /// Queues every load balancer not ensured for a resync period, spread
    /// over the period by each Service's key so that they do not all come at
    /// once.
    async fn repair_drift(self: Arc<Self>, stop: CancellationToken) {
        if self.resync_period.is_zero() {
            return;
        }
        let tick = (self.resync_period / 20).clamp(Duration::from_millis(100), Duration::from_secs(30));
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(tick) => {}
            }
            let now = Instant::now();
            let due: Vec<ServiceKey> = self
                .lock_states()
                .iter()
                .filter(|(key, state)| {
                    state
                        .ensured
                        .is_some_and(|ensured| now >= ensured + self.resync_period + spread(key, self.resync_period))
                })
                .map(|(key, _)| key.clone())
                .collect();
            for key in due {
                tracing::debug!(service = %key, "re-ensuring to repair drift");
                self.queue.add(key);
            }
        }
    }
}

/// A key's place in a fifth of `period`, stable across runs.
fn spread(key: &ServiceKey, period: Duration) -> Duration {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    let fifth = period / 5;
    Duration::from_millis(hasher.finish() % u64::try_from(fifth.as_millis()).unwrap_or(u64::MAX).max(1))
}

/// A Service's state, locked.
struct StateGuard<'a> {
    states: MutexGuard<'a, HashMap<ServiceKey, ServiceState>>,
    key: ServiceKey,
}

impl std::ops::Deref for StateGuard<'_> {
    type Target = ServiceState;

    fn deref(&self) -> &ServiceState {
        &self.states[&self.key]
    }
}

impl std::ops::DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut ServiceState {
        self.states.get_mut(&self.key).expect("the state is created before the guard")
    }
}
