//! What the service controller remembers of each Service between syncs, as
//! upstream's service cache and last synced nodes: the copy last
//! reconciled, the nodes its load balancer was given, when it was ensured,
//! and the status last written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::{LoadBalancerStatus, Service};
use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;
use wasm_ccm_cloud::NodeSnapshot;

use super::key::ServiceKey;
use super::rules::sync_digest;
use crate::framework::locks::KeyLocks;

/// One Service's memory.
#[derive(Debug, Default)]
struct Remembered {
    /// The digest of its relevant fields last seen, and the copy seen.
    digest: Option<u64>,
    seen: Option<Arc<Service>>,
    /// The copy last reconciled, whose load balancer is deleted should the
    /// Service vanish or come back with another UID.
    last: Option<Arc<Service>>,
    /// Whether the provider may have a load balancer for that copy.
    held: bool,
    /// The nodes its load balancer was last given.
    nodes: Option<Arc<NodeSnapshot>>,
    /// When its load balancer was last ensured.
    ensured: Option<Instant>,
    /// The status last written, and what the API server made of it.
    written: Option<Written>,
    /// Queued by the resync, with no change since.
    resync: bool,
}

/// A status written into a Service, and how to tell what the API server
/// kept of it: the copy the write left, known by its resource version, holds
/// it.
#[derive(Debug)]
struct Written {
    sent: LoadBalancerStatus,
    version: Option<String>,
    /// What the API server kept, once a copy of that version was seen.
    kept: Option<LoadBalancerStatus>,
}

/// What a copy seen in the cache tells of the Service.
pub(super) struct Observed {
    /// Its relevant fields changed since the copy seen before.
    pub changed: bool,
    /// The provider may have a load balancer for the copy last reconciled.
    pub held: bool,
    /// The copy seen before.
    pub previous: Option<Arc<Service>>,
}

/// Every Service's memory, and a lock per Service so that its sync and a
/// node sync never act on it at once.
#[derive(Default)]
pub(super) struct Memory {
    services: Mutex<HashMap<ServiceKey, Remembered>>,
    locks: KeyLocks<ServiceKey>,
}

impl Memory {
    fn lock(&self) -> MutexGuard<'_, HashMap<ServiceKey, Remembered>> {
        self.services.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn with<T>(&self, key: &ServiceKey, update: impl FnOnce(&mut Remembered) -> T) -> T {
        update(self.lock().entry(key.clone()).or_default())
    }

    /// Records a copy of a Service seen in the cache.
    pub(super) fn observe(&self, key: &ServiceKey, service: &Arc<Service>) -> Observed {
        let digest = sync_digest(service);
        self.with(key, |remembered| {
            let changed = remembered.digest.replace(digest) != Some(digest);
            remembered.resync &= !changed;
            Observed { changed, held: remembered.held, previous: remembered.seen.replace(service.clone()) }
        })
    }

    /// Records that the resync queued a Service.
    pub(super) fn resync(&self, key: &ServiceKey) {
        self.with(key, |remembered| remembered.resync = true);
    }

    /// Whether the sync about to run is the resync's alone, with no change
    /// of the Service since it was queued; takes the mark.
    pub(super) fn take_resync(&self, key: &ServiceKey) -> bool {
        self.with(key, |remembered| std::mem::take(&mut remembered.resync))
    }

    /// Every Service remembered.
    pub(super) fn keys(&self) -> Vec<ServiceKey> {
        self.lock().keys().cloned().collect()
    }

    /// Whether the provider may have a load balancer for the copy last
    /// reconciled.
    pub(super) fn may_have_load_balancer(&self, key: &ServiceKey) -> bool {
        self.lock().get(key).is_some_and(|remembered| remembered.held)
    }

    /// Waits for and takes a Service's lock.
    pub(super) async fn lock_service(&self, key: &ServiceKey) -> OwnedMutexGuard<()> {
        self.locks.lock(key).await
    }

    /// Forgets a Service.
    pub(super) fn forget(&self, key: &ServiceKey) {
        self.lock().remove(key);
        self.locks.remove(key);
    }

    /// Records the copy being reconciled, and whether the provider will
    /// hold a load balancer for it.
    pub(super) fn reconciling(&self, key: &ServiceKey, service: Arc<Service>, holds: bool) {
        self.with(key, |remembered| {
            remembered.held = holds;
            remembered.last = Some(service);
        });
    }

    /// The copy last reconciled, if the provider may hold a load balancer
    /// for it.
    pub(super) fn held(&self, key: &ServiceKey) -> Option<Arc<Service>> {
        self.lock().get(key).filter(|remembered| remembered.held).and_then(|remembered| remembered.last.clone())
    }

    /// The nodes the load balancer was last given, when known.
    pub(super) fn given(&self, key: &ServiceKey) -> Option<Arc<NodeSnapshot>> {
        self.lock().get(key).and_then(|remembered| remembered.nodes.clone())
    }

    /// Records a load balancer ensured with `nodes`.
    pub(super) fn ensured(&self, key: &ServiceKey, nodes: Arc<NodeSnapshot>) {
        self.with(key, |remembered| {
            remembered.nodes = Some(nodes);
            remembered.ensured = Some(Instant::now());
        });
    }

    /// Records a load balancer given `nodes` by a node sync.
    pub(super) fn hosts_updated(&self, key: &ServiceKey, nodes: Arc<NodeSnapshot>) {
        self.with(key, |remembered| remembered.nodes = Some(nodes));
    }

    /// Records a load balancer deleted: nothing is left to repair, update
    /// or delete.
    pub(super) fn deleted(&self, key: &ServiceKey) {
        self.with(key, |remembered| {
            *remembered =
                Remembered { digest: remembered.digest, seen: remembered.seen.take(), ..Remembered::default() };
        });
    }

    /// The Services whose load balancers were ensured, with when.
    pub(super) fn ensured_at(&self) -> Vec<(ServiceKey, Instant)> {
        let services = self.lock();
        services.iter().filter_map(|(key, remembered)| Some((key.clone(), remembered.ensured?))).collect()
    }

    /// The Services whose load balancers were last given other nodes than
    /// `nodes`.
    pub(super) fn stale(&self, nodes: &NodeSnapshot) -> Vec<ServiceKey> {
        let services = self.lock();
        let stale = services
            .iter()
            .filter(|(_, remembered)| remembered.nodes.as_deref().is_some_and(|last| !last.same_targets(nodes)));
        stale.map(|(key, _)| key.clone()).collect()
    }

    /// Whether `service`'s status, as the API server has it, is what
    /// writing `desired` gave last time: then it needs no writing, even when
    /// the server dropped a field it does not know (`ipMode` before 1.29).
    /// The copy the write left tells what the server kept; later copies are
    /// compared with that.
    pub(super) fn written(&self, key: &ServiceKey, desired: &LoadBalancerStatus, service: &Service) -> bool {
        let current = service.status.as_ref().and_then(|status| status.load_balancer.clone()).unwrap_or_default();
        let mut services = self.lock();
        let Some(written) = services.get_mut(key).and_then(|remembered| remembered.written.as_mut()) else {
            return false;
        };
        if written.sent != *desired {
            return false;
        }
        if written.version.is_some() && service.metadata.resource_version == written.version {
            written.kept = Some(current.clone());
        }
        written.kept.as_ref() == Some(&current)
    }

    /// Records that writing `desired` left the Service at `version`.
    pub(super) fn wrote(&self, key: &ServiceKey, desired: LoadBalancerStatus, version: Option<String>) {
        self.with(key, |remembered| remembered.written = Some(Written { sent: desired, version, kept: None }));
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{LoadBalancerIngress, ServiceStatus};
    use kube::runtime::reflector::ObjectRef;

    use super::*;
    use crate::fixtures::ServiceFixture;

    fn status(ip: &str, mode: Option<&str>) -> LoadBalancerStatus {
        let ingress = LoadBalancerIngress { ip: Some(ip.into()), ip_mode: mode.map(Into::into), ..Default::default() };
        LoadBalancerStatus { ingress: Some(vec![ingress]) }
    }

    fn copy(version: &str, status: LoadBalancerStatus) -> Service {
        let mut service = Service::test("web");
        service.metadata.resource_version = Some(version.into());
        service.status = Some(ServiceStatus { load_balancer: Some(status), ..Default::default() });
        service
    }

    #[test]
    fn a_written_status_is_known_by_the_copy_the_write_left_then_by_what_the_server_kept() {
        let memory = Memory::default();
        let key = ObjectRef::from_obj(&Service::test("web"));
        let desired = status("203.0.113.1", Some("VIP"));
        // The server keeps no `ipMode`.
        let kept = status("203.0.113.1", None);
        memory.wrote(&key, desired.clone(), Some("7".into()));
        assert!(!memory.written(&key, &desired, &copy("6", LoadBalancerStatus::default())), "a copy from before");
        assert!(memory.written(&key, &desired, &copy("7", kept.clone())), "the copy the write left");
        assert!(memory.written(&key, &desired, &copy("8", kept.clone())), "a later copy with what was kept");
        assert!(!memory.written(&key, &desired, &copy("9", status("198.51.100.1", None))), "someone else's status");
        assert!(!memory.written(&key, &status("203.0.113.2", None), &copy("7", kept)), "another status desired");
    }
}
