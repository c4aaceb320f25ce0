//! The service controller: a load balancer in the cloud for every Service of
//! type LoadBalancer, its nodes kept in step with the cluster's, its
//! ingress in the Service's status, and, unlike upstream, drift in the
//! cloud repaired by ensuring every load balancer again each resync period.

pub mod addresses;
mod burst;
pub mod claim;
pub mod ingress;
mod key;
pub(crate) mod lanes;
mod memory;
pub(crate) mod node_changes;
mod node_sync;
pub mod ownership;
pub mod rules;
mod sync;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::Cloud;

use self::burst::{Burst, QUIET};
use self::claim::{Claim, Decision, annotation};
use self::key::ServiceKey;
use self::memory::Memory;
use self::node_sync::NodeSync;
use self::rules::update_event;
use self::sync::ServiceSync;
use crate::framework::context::Context;
use crate::framework::runner::{All, Runner, Stopped, stopping_all_on_failure};
use crate::framework::workqueue::WorkQueue;
use crate::providers::policy::{LoadBalancerPolicy, SharedPolicy};
use wasm_ccm_kube::informer::Change;

/// The service controller: the Service sync and the node sync, and what
/// feeds them.
pub struct ServiceController<C: Cloud> {
    triggers: ServiceTriggers,
    sync: Runner<ServiceSync<C>>,
    node_sync: Runner<NodeSync<C>>,
    resync_period: Duration,
}

/// What queues work for the service controller; clones share it.
#[derive(Clone)]
pub struct ServiceTriggers {
    claim: Claim,
    policy: SharedPolicy,
    memory: Arc<Memory>,
    services: Store<Service>,
    queue: WorkQueue<ServiceKey>,
    node_queue: WorkQueue<All>,
    node_changes: Arc<Burst>,
}

impl<C: Cloud> ServiceController<C> {
    /// A controller over the Services of `services` that `claim` gives
    /// the provider of `ctx` under `policy`, and the nodes of `ctx`; must
    /// be made inside a tokio runtime.
    pub fn new(ctx: Context<C>, services: Store<Service>, claim: Claim, policy: LoadBalancerPolicy) -> Self {
        let memory = Arc::new(Memory::default());
        let node_changes = Arc::new(Burst::default());
        let policy = SharedPolicy::new(policy);
        let workers = ctx.settings.concurrent_service_syncs;
        let sync = ServiceSync::new(ctx.clone(), services.clone(), memory.clone(), claim.clone(), policy.clone());
        let sync = Runner::new(sync, workers, ctx.metrics.clone());
        let node_sync = Runner::new(
            NodeSync::new(
                ctx.clone(),
                services.clone(),
                memory.clone(),
                sync.queue(),
                claim.clone(),
                node_changes.clone(),
            ),
            1,
            ctx.metrics.clone(),
        );
        let triggers = ServiceTriggers {
            claim,
            policy,
            memory,
            services,
            queue: sync.queue(),
            node_queue: node_sync.queue(),
            node_changes,
        };
        ServiceController { triggers, sync, node_sync, resync_period: ctx.settings.load_balancer_resync_period }
    }

    /// What queues its work.
    pub fn triggers(&self) -> ServiceTriggers {
        self.triggers.clone()
    }

    /// Runs the Service sync, the node sync and the drift repair until
    /// `stop`; then lets reconciles in flight finish.
    ///
    /// # Errors
    /// When either sync stopped on its own.
    pub async fn run(self, stop: CancellationToken) -> Result<(), Stopped> {
        let working = stop.child_token();
        let period = self.resync_period;
        let sync = async {
            if period.is_zero() {
                return self.sync.run(working.clone()).await;
            }
            let triggers = self.triggers.clone();
            let tick = (period / 20).clamp(Duration::from_millis(100), Duration::from_secs(30));
            self.sync.run_sweeping(tick, move || triggers.drifted(period), working.clone()).await
        };
        let (sync, node_sync) = tokio::join!(
            stopping_all_on_failure(sync, &working),
            stopping_all_on_failure(self.node_sync.run(working.clone()), &working),
        );
        sync.and(node_sync)
    }
}

impl ServiceTriggers {
    /// Takes note of a change to a Service, queueing it when it needs a
    /// sync, as upstream's `needsUpdate` and `needsCleanup` decide; a
    /// Service that vanished while its load balancer may exist is queued
    /// too, for the load balancer to be deleted.
    pub fn observe(&self, change: Change<Service>) {
        match change {
            Change::Applied(service) => {
                let key = ObjectRef::from_obj(&*service);
                let observed = self.memory.observe(&key, &service);
                let decision = self.claim.decide(&service);
                // Another provider letting the Service go changes only
                // what this one does with it.
                let turned = observed.previous.as_ref().is_some_and(|previous| self.claim.decide(previous) != decision);
                // Logged, not an event: upstream removed these Normal
                // events in 1.32.
                if let Some(previous) = observed.previous.filter(|_| observed.changed)
                    && let Some((reason, note)) =
                        update_event(&previous, &service, self.claim.wants(&previous), decision == Decision::Ensure)
                {
                    tracing::info!(service = %key, change = reason, "the Service changed: {note}");
                }
                // The annotation is written back when it names another
                // provider: it is not part of what needs a sync.
                let mislabelled =
                    decision == Decision::Ensure && annotation(&service) != Some(&**self.claim.provider());
                if ((observed.changed || turned) && (decision != Decision::Ignore || observed.held))
                    || decision == Decision::Delete
                    || mislabelled
                {
                    self.queue.add(key);
                }
            }
            Change::Deleted(service) => self.vanished(ObjectRef::from_obj(&*service)),
            Change::Resynced => {
                for key in self.memory.keys() {
                    if self.services.get(&key).is_none() {
                        self.vanished(key);
                    }
                }
            }
        }
    }

    /// Queues `service` if it is this provider's business: after the
    /// providers or what they serve changed, which changes no Service.
    pub fn reconsider(&self, service: &Service) {
        if self.claim.concerns(service) {
            self.queue.add(ObjectRef::from_obj(service));
        }
    }

    fn vanished(&self, key: ServiceKey) {
        if self.memory.may_have_load_balancer(&key) {
            self.queue.add(key);
        } else {
            self.memory.forget(&key);
            self.queue.forget(&key);
        }
    }

    /// Takes note that the nodes changed in a way that concerns load
    /// balancers: those whose node set differs will be updated once the
    /// burst of changes this one belongs to is over.
    pub fn nodes_changed(&self) {
        self.node_changes.change();
        self.node_queue.add_after(All, QUIET);
    }

    /// Replaces the operator's policy for the provider's load balancers.
    pub(crate) fn set_policy(&self, policy: LoadBalancerPolicy) {
        self.policy.set(policy);
    }

    /// The load balancers not ensured for a resync period, each spread
    /// over the period by its Service's key so that they do not all come
    /// at once, marked as the resync's in memory; none while the provider's
    /// policy turns resyncs off. A sweep rather than a requeue after each
    /// ensure: the sync must tell the resync's ensure, which writes events
    /// only when it finds something changed, from every other trigger's.
    fn drifted(&self, period: Duration) -> Vec<ServiceKey> {
        if !self.policy.read(|policy| policy.resync) {
            return Vec::new();
        }
        let now = Instant::now();
        let due = self
            .memory
            .ensured_at()
            .into_iter()
            .filter(|(key, ensured)| now >= *ensured + period + spread(key, period));
        due.map(|(key, _)| {
            tracing::debug!(service = %key, "re-ensuring to repair drift");
            self.memory.resync(&key);
            key
        })
        .collect()
    }
}

/// A key's place in a fifth of `period`, stable across runs.
fn spread(key: &ServiceKey, period: Duration) -> Duration {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    let fifth = period / 5;
    Duration::from_millis(hasher.finish() % u64::try_from(fifth.as_millis()).unwrap_or(u64::MAX).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{ServiceFixture, TestCloud, TestEnv};

    #[tokio::test]
    async fn a_relevant_change_is_a_sync_and_no_event() {
        let mut env = TestEnv::new(TestCloud::default()).await;
        let controller =
            ServiceController::new(env.context(), env.services(), env.claim(), LoadBalancerPolicy::default());
        let triggers = controller.triggers();
        let service = Service::test("web");
        triggers.observe(Change::Applied(Arc::new(service.clone())));
        assert_eq!(env.events(), [], "a Service seen first is no change");

        let mut moved = service.clone();
        moved.spec.as_mut().unwrap().load_balancer_ip = Some("192.0.2.9".into());
        triggers.observe(Change::Applied(Arc::new(moved.clone())));
        assert_eq!(env.events(), [], "upstream 1.33 logs the change and records no event");
        assert_eq!(controller.sync.queue().len(), 1, "the Service is queued");

        triggers.observe(Change::Applied(Arc::new(moved)));
        assert_eq!(env.events(), [], "the same copy again changes nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn a_provider_whose_policy_turns_resyncs_off_is_not_ensured_again() {
        let env = TestEnv::new(TestCloud::default()).await;
        let policy = LoadBalancerPolicy { resync: false, ..LoadBalancerPolicy::default() };
        let controller = ServiceController::new(env.context(), env.services(), env.claim(), policy);
        let triggers = controller.triggers();
        let key = ObjectRef::from_obj(&Service::test("web"));
        triggers.memory.ensured(&key, Arc::default());
        let period = Duration::from_secs(1);
        tokio::time::sleep(period * 3).await;
        assert_eq!(triggers.drifted(period), [], "no resync while the policy says so");
        triggers.set_policy(LoadBalancerPolicy::default());
        assert_eq!(
            triggers.drifted(period),
            std::slice::from_ref(&key),
            "resynced once the operator turned resyncs back on"
        );
        assert!(triggers.memory.take_resync(&key), "as the resync's");
    }
}
