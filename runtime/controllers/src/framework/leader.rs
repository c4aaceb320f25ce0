//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
//! semantics, so that one replica of several runs the controllers:
//!
//! - a candidate takes the lease when its holder has not renewed it for the
//!   lease duration, measured on the candidate's own clock from when it last
//!   saw the lease change (so clock skew between replicas does not matter);
//! - every write carries the resource version it read, so two candidates
//!   cannot both win;
//! - the leader renews every retry period, and gives up leading when it has
//!   not managed to for the renew deadline: its work is stopped before the
//!   lease can expire for the others;
//! - on a graceful stop the leader finishes its work, then releases the
//!   lease, so that another replica takes over at once;
//! - becoming the leader and ceasing to be are `LeaderElection` events on
//!   the Lease, as client-go records them.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::metrics::Metrics;
use wasm_ccm_kube::events::Events;
use wasm_ccm_kube::is_transport_error;

/// The component the Lease's events come from, as upstream's.
const EVENT_COMPONENT: &str = "cloud-controller-manager";

/// Upstream's `--leader-elect-*` settings.
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This replica's identity in the Lease.
    pub identity: String,
    /// How long a lease holds after its last renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader to renew.
    pub retry_period: Duration,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            namespace: "kube-system".to_owned(),
            name: "cloud-controller-manager".to_owned(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl LeaderElectionConfig {
    /// Checks that the durations can work: the renew deadline must be
    /// shorter than the lease duration, and the retry period shorter than
    /// the deadline.
    ///
    /// # Errors
    /// When they cannot.
    pub fn check(&self) -> Result<(), LeaderError> {
        if self.renew_deadline >= self.lease_duration {
            return Err(LeaderError::Invalid("--leader-elect-renew-deadline must be shorter than the lease duration"));
        }
        if self.retry_period >= self.renew_deadline {
            return Err(LeaderError::Invalid("--leader-elect-retry-period must be shorter than the renew deadline"));
        }
        Ok(())
    }
}

/// `<host name>_<random>`, as client-go builds identities.
pub fn default_identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "wasm-ccm".to_owned());
    format!("{host}_{:016x}", RandomState::new().build_hasher().finish())
}

/// Why leading ended badly.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The lease could not be renewed within the renew deadline.
    #[error("lost the lease {0}: it could not be renewed within the renew deadline")]
    Lost(String),
    /// The settings cannot work.
    #[error("invalid leader election settings: {0}")]
    Invalid(&'static str),
}

/// What was last seen of the lease, and when.
struct Observed {
    spec: LeaseSpec,
    at: Instant,
}

/// Elects a leader among replicas sharing a Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    observed: Mutex<Option<Observed>>,
    /// The Lease's UID, once this replica wrote it.
    uid: Mutex<Option<String>>,
    metrics: Metrics,
    events: Events,
}

fn seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs()).unwrap_or(i32::MAX).max(1)
}

impl LeaderElector {
    /// An elector for `config`'s Lease.
    ///
    /// # Errors
    /// When the durations cannot work, see [`LeaderElectionConfig::check`].
    pub fn new(client: Client, config: LeaderElectionConfig, metrics: Metrics) -> Result<Self, LeaderError> {
        config.check()?;
        Ok(LeaderElector {
            api: Api::namespaced(client.clone(), &config.namespace),
            config,
            observed: Mutex::new(None),
            uid: Mutex::new(None),
            metrics,
            events: Events::new(client, EVENT_COMPONENT),
        })
    }

    /// The Lease, as `namespace/name`.
    pub fn lease(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// Runs `work` while this replica leads, once it has acquired the lease.
    ///
    /// When `stop` is cancelled, `work`'s token is cancelled and the lease is
    /// kept renewed until `work` returns or `grace` passes (then `work` is
    /// dropped), and the lease is released. When the lease cannot be renewed
    /// within the renew deadline, `work` gets until the lease could expire
    /// for others, less a retry period, to stop, and leading ends with
    /// [`LeaderError::Lost`].
    ///
    /// # Errors
    /// When leadership is lost.
    pub async fn lead<F, Fut>(&self, stop: CancellationToken, grace: Duration, work: F) -> Result<(), LeaderError>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        if !self.acquire(&stop).await {
            return Ok(());
        }
        tracing::info!(lease = %self.lease(), identity = %self.config.identity, "became the leader");
        self.record_event("became leader");
        self.metrics.leader(&self.config.name, true);
        let working = CancellationToken::new();
        let mut work = tokio::spawn(work(working.clone()));
        let mut renewed = Instant::now();
        let mut failing = false;
        let mut ticks = tokio::time::interval(self.config.retry_period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stopping_until: Option<Instant> = None;
        let outcome = loop {
            let give_up = stopping_until.unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
            tokio::select! {
                () = stop.cancelled(), if stopping_until.is_none() => {
                    tracing::info!("stopping: letting the controllers finish before releasing the lease");
                    working.cancel();
                    stopping_until = Some(Instant::now() + grace);
                }
                _ = &mut work => break Ok(()),
                () = tokio::time::sleep_until(give_up) => {
                    tracing::warn!("the controllers did not stop within {grace:?}; stopping them now");
                    work.abort();
                    break Ok(());
                }
                _ = ticks.tick() => {
                    let renewal = tokio::time::timeout(self.config.retry_period, self.try_acquire_or_renew()).await;
                    // A run of failures is logged when it starts and when it
                    // ends; an unreachable API server is the client's to log.
                    let (message, quiet) = match renewal {
                        Ok(Ok(true)) => {
                            if std::mem::take(&mut failing) {
                                tracing::info!(lease = %self.lease(), "renewed the lease again");
                            }
                            renewed = Instant::now();
                            continue;
                        }
                        Ok(Ok(false)) => ("another replica holds the lease".to_owned(), failing),
                        Ok(Err(err)) => (format!("cannot renew the lease: {err}"), failing || is_transport_error(&err)),
                        Err(_) => ("renewing the lease timed out".to_owned(), failing),
                    };
                    failing = true;
                    if quiet {
                        tracing::debug!(lease = %self.lease(), "{message}");
                    } else {
                        tracing::warn!(lease = %self.lease(), "{message}; retrying");
                    }
                    if renewed.elapsed() > self.config.renew_deadline {
                        working.cancel();
                        let left = self.config.lease_duration.saturating_sub(renewed.elapsed() + self.config.retry_period);
                        if tokio::time::timeout(left, &mut work).await.is_err() {
                            work.abort();
                        }
                        break Err(LeaderError::Lost(self.lease()));
                    }
                }
            }
        };
        self.metrics.leader(&self.config.name, false);
        self.record_event("stopped leading");
        if outcome.is_ok() {
            self.release().await;
        }
        outcome
    }

    /// Tries every retry period until this replica holds the lease; `false`
    /// when `stop` came first.
    async fn acquire(&self, stop: &CancellationToken) -> bool {
        tracing::info!(lease = %self.lease(), identity = %self.config.identity, "waiting to become the leader");
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => return true,
                Ok(false) => {}
                Err(err) if is_transport_error(&err) => {
                    tracing::debug!(lease = %self.lease(), "cannot read or take the lease: {err}");
                }
                Err(err) => tracing::warn!(lease = %self.lease(), "cannot read or take the lease: {err}"),
            }
            tokio::select! {
                () = stop.cancelled() => return false,
                () = tokio::time::sleep(self.config.retry_period) => {}
            }
        }
    }

    /// One attempt, as client-go's `tryAcquireOrRenew`: `true` when this
    /// replica holds the lease afterwards.
    async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let identity = self.config.identity.clone();
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta { name: Some(self.config.name.clone()), ..Default::default() },
                spec: Some(LeaseSpec {
                    holder_identity: Some(identity),
                    lease_duration_seconds: Some(seconds(self.config.lease_duration)),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.written(&created);
                    self.observe(created.spec.unwrap_or_default());
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(err) => Err(err),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let observed_at = self.observe(spec.clone());
        let duration = Duration::from_secs(u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0));
        let ours = holder == identity;
        if !holder.is_empty() && !ours && observed_at.elapsed() < duration {
            return Ok(false);
        }
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(identity),
            lease_duration_seconds: Some(seconds(self.config.lease_duration)),
            acquire_time: if ours { spec.acquire_time.clone() } else { Some(now.clone()) },
            renew_time: Some(now),
            lease_transitions: Some(spec.lease_transitions.unwrap_or(0) + i32::from(!ours)),
            ..spec
        });
        match self.api.replace(&self.config.name, &PostParams::default(), &lease).await {
            Ok(updated) => {
                self.written(&updated);
                self.observe(updated.spec.unwrap_or_default());
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Takes note of the Lease as this replica wrote it.
    fn written(&self, lease: &Lease) {
        *self.uid.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = lease.metadata.uid.clone();
    }

    /// A `LeaderElection` event on the Lease: `<identity> <what>`.
    fn record_event(&self, what: &str) {
        let reference = ObjectReference {
            api_version: Some("coordination.k8s.io/v1".to_owned()),
            kind: Some("Lease".to_owned()),
            namespace: Some(self.config.namespace.clone()),
            name: Some(self.config.name.clone()),
            uid: self.uid.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone(),
            ..ObjectReference::default()
        };
        self.events.normal(reference, "LeaderElection", format!("{} {what}", self.config.identity));
    }

    /// Records the lease's spec; returns when it was first seen as it is.
    fn observe(&self, spec: LeaseSpec) -> Instant {
        let mut observed = self.observed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match observed.as_ref() {
            Some(seen) if seen.spec == spec => seen.at,
            _ => {
                let at = Instant::now();
                *observed = Some(Observed { spec, at });
                at
            }
        }
    }

    /// Gives the lease up, so that another replica takes it at once.
    async fn release(&self) {
        let result = async {
            let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
                return Ok(());
            };
            let spec = lease.spec.clone().unwrap_or_default();
            if spec.holder_identity.as_deref() != Some(&self.config.identity) {
                return Ok(());
            }
            let now = MicroTime(Timestamp::now());
            lease.spec = Some(LeaseSpec {
                holder_identity: Some(String::new()),
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                ..spec
            });
            self.api.replace(&self.config.name, &PostParams::default(), &lease).await.map(drop)
        }
        .await;
        match result {
            Ok(()) => tracing::info!(lease = %self.lease(), "released the lease"),
            Err(err) => tracing::warn!(lease = %self.lease(), "cannot release the lease: {err}"),
        }
    }
}
