//! One Service's sync, as upstream's `syncService`: ensure its load balancer
//! and publish the ingress, or delete it and let the Service go; and delete
//! the load balancer of a Service that vanished, or came back with another
//! UID, from the copy last seen.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{LoadBalancerStatus, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::Store;
use serde_json::json;
use wasm_ccm_cloud::{Cloud, NodeSet, ProviderError};
use wasm_ccm_kube::writes;

use super::addresses::Reservation;
use super::claim::{Claim, Decision, annotation};
use super::key::ServiceKey;
use super::memory::Memory;
use super::rules::{has_finalizer, same_ingress};
use super::{ingress, ownership};
use crate::framework::context::Context;
use crate::framework::error::{Error, RefusedIngress};
use crate::framework::runner::{Action, Reconcile, Retry};
use crate::framework::workqueue::Backoff;
use crate::providers::policy::SharedPolicy;

/// Syncs one Service at a time per key.
pub(super) struct ServiceSync<C> {
    ctx: Context<C>,
    services: Store<Service>,
    memory: Arc<Memory>,
    claim: Claim,
    policy: SharedPolicy,
}

impl<C: Cloud> Reconcile for ServiceSync<C> {
    type Key = ServiceKey;

    const NAME: &'static str = "service";
    const QUEUE: &'static str = "service";
    fn retry(&self, key: &ServiceKey) -> Retry {
        let cleaning_up = self.services.get(key).is_some_and(|service| match self.claim.decide(&service) {
            Decision::Delete => true,
            Decision::Ignore => self.memory.may_have_load_balancer(key),
            Decision::Ensure | Decision::Keep => false,
        });
        Retry::Backoff(if cleaning_up { Backoff::SERVICE_CLEANUP } else { Backoff::SERVICE })
    }

    async fn reconcile(&self, key: &ServiceKey) -> Result<Action, Error> {
        self.sync(key).await.map(|()| Action::AwaitChange)
    }
}

impl<C: Cloud> ServiceSync<C> {
    /// Upstream's `syncService`: the load balancer ensured, kept or deleted
    /// as the claim decides, with a Warning event when that fails.
    async fn sync(&self, key: &ServiceKey) -> Result<(), Error> {
        let _lock = self.memory.lock_service(key).await;
        let Some(service) = self.services.get(key) else {
            return self.vanished(key).await;
        };
        let decision = self.claim.decide(&service);
        // The new copy is recorded only once the old one's load balancer is
        // gone, so that a failed delete is retried rather than leaked; what
        // this provider holds is then known of the new copy alone.
        if let Some(last) = self.memory.held(key).filter(|last| last.metadata.uid != service.metadata.uid) {
            tracing::info!(service = %key, "the Service came back with another UID: deleting the old one's load balancer");
            self.delete_for_gone(&last).await?;
            self.memory.deleted(key);
        }
        let held = self.memory.may_have_load_balancer(key);
        self.memory.reconciling(key, service.clone(), decision != Decision::Ignore || held);
        let result = match decision {
            Decision::Ensure => self.ensure(key, &service).await,
            Decision::Delete => self.delete(key, &service).await,
            Decision::Keep => {
                self.keep(&service);
                Ok(())
            }
            // Upstream's delete path for a Service that no longer wants
            // the load balancer this provider gave it.
            Decision::Ignore if held => self.delete(key, &service).await,
            Decision::Ignore => {
                self.memory.deleted(key);
                Ok(())
            }
        };
        if let Err(err) = &result {
            let note = format!("Error syncing load balancer: {err}");
            self.ctx.events.warning(service.object_ref(&()), "SyncLoadBalancerFailed", note);
        }
        result
    }

    pub(super) fn new(
        ctx: Context<C>,
        services: Store<Service>,
        memory: Arc<Memory>,
        claim: Claim,
        policy: SharedPolicy,
    ) -> Self {
        ServiceSync { ctx, services, memory, claim, policy }
    }

    fn api(&self, service: &Service) -> Api<Service> {
        Api::namespaced(self.ctx.client.clone(), service.metadata.namespace.as_deref().unwrap_or("default"))
    }

    /// The Service left the cache: its load balancer goes, from the copy
    /// last reconciled, as upstream's `processServiceDeletion`.
    async fn vanished(&self, key: &ServiceKey) -> Result<(), Error> {
        if let Some(last) = self.memory.held(key) {
            tracing::info!(service = %key, "the Service is gone: deleting its load balancer");
            self.delete_for_gone(&last).await?;
        }
        self.memory.forget(key);
        Ok(())
    }

    /// Upstream's `processLoadBalancerDelete`.
    async fn delete_for_gone(&self, service: &Service) -> Result<(), Error> {
        let reference = service.object_ref(&());
        self.ctx.events.normal(reference.clone(), "DeletingLoadBalancer", "Deleting load balancer");
        if let Err(err) = self.ctx.cloud.ensure_load_balancer_deleted(service).await {
            let note = format!("Error deleting load balancer: {err}");
            self.ctx.events.warning(reference, "DeleteLoadBalancerFailed", note);
            return Err(Error::cloud("failed to delete load balancer")(err));
        }
        self.ctx.events.normal(reference, "DeletedLoadBalancer", "Deleted load balancer");
        Ok(())
    }

    /// Upstream's `ensureLoadBalancer`, once the provider is recorded as the
    /// load balancer's owner with the finalizer. A resync with no change of the
    /// Service writes events only when it finds the load balancer's status
    /// changed, so that a cluster's resyncs do not flood its events.
    async fn ensure(&self, key: &ServiceKey, service: &Arc<Service>) -> Result<(), Error> {
        let reference = service.object_ref(&());
        let quiet = self.memory.take_resync(key);
        if !quiet {
            self.ctx.events.normal(reference.clone(), "EnsuringLoadBalancer", "Ensuring load balancer");
        }
        let provider = Some(&**self.claim.provider());
        let owned =
            has_finalizer(service) && ownership::recorded(service) == provider && annotation(service) == provider;
        let service = if owned { service.clone() } else { Arc::new(self.add_finalizer(service).await?) };
        let nodes = self.ctx.nodes.eligible();
        if nodes.is_empty() && !quiet {
            let note = "There are no available nodes for LoadBalancer";
            self.ctx.events.warning(reference.clone(), "UnAvailableLoadBalancer", note);
        }
        let set = NodeSet::new(nodes.clone(), self.memory.given(key));
        let status = match self.ctx.cloud.ensure_load_balancer(&service, &set).await {
            Ok(status) => status,
            Err(ProviderError::ImplementedElsewhere) => {
                tracing::debug!("the load balancer is implemented elsewhere; nothing to do");
                return Ok(());
            }
            Err(err) => return Err(Error::cloud("failed to ensure load balancer")(err)),
        };
        let reservation = match self.reserve(key, &service, &status) {
            Ok(reservation) => reservation,
            Err(refused) => {
                // Published by two Services, the address stays with the one
                // that claimed first: this one lets it go.
                if refused.kept_by_another && ingress::publishes(&service, &refused.address) {
                    tracing::warn!(service = %key, address = refused.address, "another Service keeps the address; unpublishing it");
                    self.patch_status(key, &service, LoadBalancerStatus::default()).await?;
                }
                return Err(refused.into());
            }
        };
        let current = current_status(&service);
        if quiet && (same_ingress(&current, &status) || self.memory.written(key, &status, &service)) {
            tracing::debug!(service = %key, "the resync found the load balancer as it should be");
        } else {
            self.ctx.events.normal(reference, "EnsuredLoadBalancer", "Ensured load balancer");
        }
        self.memory.ensured(key, nodes);
        self.patch_status(key, &service, status).await?;
        reservation.written();
        Ok(())
    }

    /// Reserves the addresses of the provider's answer `status` for
    /// `service` until it is published, unless it may not be published.
    fn reserve(
        &self,
        key: &ServiceKey,
        service: &Service,
        status: &LoadBalancerStatus,
    ) -> Result<Reservation, RefusedIngress> {
        let pod_networks = self.ctx.nodes.pod_networks();
        let networks = ingress::ClusterNetworks { settings: &self.ctx.settings, pod_networks: &pod_networks };
        let refused = self
            .policy
            .read(|policy| ingress::refused(status, &policy.ingress_ranges, policy.most_ingress(service), networks));
        if let Some(refused) = refused {
            return Err(refused);
        }
        let answer = ingress::Answer::new(status);
        let addresses: Vec<IpAddr> = answer.addresses().collect();
        let ours = |other: &Service| self.claim.owns(other);
        let taken = |holders: HashSet<ServiceKey>| {
            let mut others = holders.into_iter().filter_map(|key| self.services.get(&key));
            others.find_map(|other| answer.taken_by(service, &other, ours))
        };
        self.claim.roster().addresses().reserve(key, self.claim.provider(), &addresses, taken)
    }

    /// Deletes the load balancer, then lets the Service go with its
    /// ownership record, as upstream's cleanup. A provider without
    /// `GetLoadBalancer` gets the delete call anyway, and one whose load balancers are implemented elsewhere has
    /// none to delete: upstream fails on both.
    async fn delete(&self, key: &ServiceKey, service: &Service) -> Result<(), Error> {
        let reference = service.object_ref(&());
        let exists = match self.ctx.cloud.get_load_balancer(service).await {
            Ok(status) => status.is_some(),
            Err(ProviderError::NotImplemented) => true,
            Err(ProviderError::ImplementedElsewhere) => false,
            Err(err) => return Err(Error::cloud("failed to check if load balancer exists before cleanup")(err)),
        };
        if exists {
            self.ctx.events.normal(reference.clone(), "DeletingLoadBalancer", "Deleting load balancer");
            match self.ctx.cloud.ensure_load_balancer_deleted(service).await {
                Ok(()) | Err(ProviderError::ImplementedElsewhere) => {}
                Err(err) => return Err(Error::cloud("failed to delete load balancer")(err)),
            }
        }
        self.remove_finalizer(service).await?;
        self.ctx.events.normal(reference, "DeletedLoadBalancer", "Deleted load balancer");
        self.memory.deleted(key);
        // A Service being deleted goes with its finalizer: no status to clear.
        if service.metadata.deletion_timestamp.is_none() {
            self.patch_status(key, service, LoadBalancerStatus::default()).await?;
        }
        Ok(())
    }

    /// The load balancer stays, as no provider serves the Service's class,
    /// or its namespace: upstream would delete it.
    fn keep(&self, service: &Service) {
        let provider = self.claim.provider();
        let (reason, note) = match self.claim.roster().class_provider(service) {
            Some((serving, _)) => {
                let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
                let note = format!(
                    "Provider {serving} does not serve namespace {namespace}: the load balancer of provider \
                     {provider} is kept, not updated, until the Service is deleted or its namespace is served"
                );
                ("LoadBalancerNamespaceNotServed", note)
            }
            None => {
                let class =
                    service.spec.as_ref().and_then(|spec| spec.load_balancer_class.as_deref()).unwrap_or("(none)");
                let note = format!(
                    "No provider serves load balancer class {class}: the load balancer of provider {provider} is \
                     kept until one does"
                );
                ("LoadBalancerClassNotServed", note)
            }
        };
        self.ctx.events.warning(service.object_ref(&()), reason, note);
    }

    /// Adds the finalizer and records this provider as the load balancer's
    /// owner, with the annotation that says so for people, in one patch of
    /// the status subresource, as upstream adds its finalizer. The patch is
    /// answered with the whole Service, given to the provider: a metadata
    /// answer saves the API server nothing measurable here
    /// (`--bench status_writes`).
    async fn add_finalizer(&self, service: &Service) -> Result<Service, Error> {
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let patch = of_uid(ownership::claim_patch(self.claim.provider(), now), service);
        self.api(service)
            .patch_status(&name(service), &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map_err(Error::api("failed to add load balancer cleanup finalizer"))
    }

    /// Removes the finalizer, the ownership record and the annotation, in
    /// one patch of the status subresource.
    async fn remove_finalizer(&self, service: &Service) -> Result<(), Error> {
        if !has_finalizer(service) && annotation(service).is_none() && ownership::recorded(service).is_none() {
            return Ok(());
        }
        let patch = Patch::Strategic(of_uid(ownership::release_patch(service), service));
        let removed = self.api(service).patch_status(&name(service), &PatchParams::default(), &patch).await;
        match removed.map_err(Error::api("failed to remove load balancer cleanup finalizer")) {
            Err(err) if !err.is_not_found() => Err(err),
            _ => Ok(()),
        }
    }

    /// Writes `desired` into the Service's status unless it is there, as
    /// the API server keeps it.
    async fn patch_status(
        &self,
        key: &ServiceKey,
        service: &Service,
        desired: LoadBalancerStatus,
    ) -> Result<(), Error> {
        let current = current_status(service);
        if same_ingress(&current, &desired) || self.memory.written(key, &desired, service) {
            return Ok(());
        }
        let ingress = desired.ingress.as_ref().filter(|ingress| !ingress.is_empty());
        // A strategic merge patch, as upstream's: the ingress list has no
        // merge key, so it is replaced as a merge patch would, and the API
        // server applies it with less work (docs/bench-log).
        let patch = Patch::Strategic(of_uid(json!({"status": {"loadBalancer": {"ingress": ingress}}}), service));
        // Answered with the metadata alone: the cache's copy of the
        // version it gives holds the status as the API server kept it.
        let patched = writes::patch_status(&self.api(service), &name(service), &PatchParams::default(), &patch).await;
        match patched.map_err(Error::api("failed to update load balancer status")) {
            Ok(answer) => {
                self.memory.wrote(key, desired, answer.metadata.resource_version);
                Ok(())
            }
            // The Service can disappear right after its finalizer goes.
            Err(err) if err.is_not_found() => Ok(()),
            Err(err) => Err(err),
        }
    }
}

/// The load balancer status `service` publishes.
fn current_status(service: &Service) -> LoadBalancerStatus {
    service.status.as_ref().and_then(|status| status.load_balancer.clone()).unwrap_or_default()
}

fn name(service: &Service) -> String {
    service.metadata.name.clone().unwrap_or_default()
}

/// `patch` with the UID of the copy it was decided on, which the API server
/// checks: a Service deleted and made again under the same name meanwhile
/// is not written to by a decision about the one before.
fn of_uid(mut patch: serde_json::Value, service: &Service) -> serde_json::Value {
    if let (Some(uid), Some(object)) = (&service.metadata.uid, patch.as_object_mut()) {
        let metadata = object.entry("metadata").or_insert_with(|| json!({}));
        if let Some(metadata) = metadata.as_object_mut() {
            metadata.insert("uid".to_owned(), json!(uid));
        }
    }
    patch
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{LoadBalancerIngress, Node, ServiceStatus};
    use kube::runtime::reflector::ObjectRef;

    use wasm_ccm_cloud::Function;

    use super::*;
    use crate::fixtures::{NodeFixture, OwnedFixture, ServiceFixture, TestCloud, TestEnv};
    use crate::providers::ingress_ranges::IngressRanges;
    use crate::providers::policy::LoadBalancerPolicy;
    use crate::providers::serves::Serves;
    use crate::service::rules::PROVIDER_ANNOTATION;

    fn ingress(service: &Service) -> Option<String> {
        let status = service.status.as_ref()?.load_balancer.as_ref()?;
        status.ingress.as_ref()?.first()?.ip.clone()
    }

    async fn env() -> TestEnv {
        let mut env = TestEnv::new(TestCloud::default()).await;
        env.add_node(Node::test("node-a")).await;
        env
    }

    fn sync(env: &TestEnv, memory: &Arc<Memory>) -> ServiceSync<TestCloud> {
        ServiceSync::new(env.context(), env.services(), memory.clone(), env.claim(), SharedPolicy::default())
    }

    #[tokio::test]
    async fn ensures_a_load_balancer_behind_a_finalizer_and_publishes_its_ingress() {
        let mut env = env().await;
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &Arc::default()).reconcile(&key).await.unwrap();
        let service = env.service("web").await;
        assert!(has_finalizer(&service));
        assert!(ingress(&service).is_some_and(|ip| ip.starts_with("192.0.2.")), "{service:?}");
        assert_eq!(env.cloud.load_balancer("default/web"), Some(vec!["node-a".to_owned()]));
        assert_eq!(env.event_reasons(), ["EnsuringLoadBalancer", "EnsuredLoadBalancer"]);
        assert_eq!(env.cloud.take_calls(), ["ensure default/web"], "one cloud call");
    }

    #[tokio::test]
    async fn no_nodes_is_a_warning_and_still_an_ensure() {
        let mut env = TestEnv::new(TestCloud::default()).await;
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &Arc::default()).reconcile(&key).await.unwrap();
        assert_eq!(env.event_reasons(), ["EnsuringLoadBalancer", "UnAvailableLoadBalancer", "EnsuredLoadBalancer"]);
        assert_eq!(env.cloud.load_balancer("default/web"), Some(Vec::new()));
    }

    #[tokio::test]
    async fn a_cloud_failure_is_a_warning_event_with_upstream_s_words() {
        let mut env = env().await;
        env.cloud.fail(Function::EnsureLoadBalancer, ProviderError::Cloud("quota exhausted".into()));
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        let err = sync(&env, &Arc::default()).reconcile(&key).await.unwrap_err();
        assert_eq!(err.to_string(), "failed to ensure load balancer: quota exhausted");
        assert_eq!(err.kind(), "cloud");
        let failed = env.events().pop().unwrap();
        assert_eq!(failed.1, "SyncLoadBalancerFailed");
        assert_eq!(failed.3, "Error syncing load balancer: failed to ensure load balancer: quota exhausted");
    }

    #[tokio::test]
    async fn implemented_elsewhere_is_no_error_and_no_status() {
        let mut env = env().await;
        env.cloud.fail(Function::EnsureLoadBalancer, ProviderError::ImplementedElsewhere);
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &Arc::default()).reconcile(&key).await.unwrap();
        assert_eq!(ingress(&env.service("web").await), None);
    }

    #[tokio::test]
    async fn a_type_change_deletes_the_load_balancer_and_lets_the_service_go() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let mut service = env.service("web").await;
        service.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        api.replace("web", &Default::default(), &service).await.unwrap();
        env.service("web").await;
        env.events();
        env.cloud.take_calls();
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let service = env.service("web").await;
        assert!(!has_finalizer(&service));
        assert_eq!(ingress(&service), None, "the status is cleared");
        assert_eq!(env.cloud.load_balancer("default/web"), None);
        assert_eq!(env.cloud.take_calls(), ["get default/web", "ensure-deleted default/web"]);
        assert_eq!(env.event_reasons(), ["DeletingLoadBalancer", "DeletedLoadBalancer"]);
    }

    #[tokio::test]
    async fn a_deleted_service_loses_its_load_balancer_then_its_finalizer() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web").with_finalizer()).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        api.delete("web", &Default::default()).await.unwrap();
        let deleting = env.service("web").await;
        assert!(deleting.metadata.deletion_timestamp.is_some(), "held by the finalizer");
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.load_balancer("default/web"), None);
        assert!(api.get_opt("web").await.unwrap().is_none(), "gone once the finalizer went");
    }

    /// Upstream's delete path runs for any Service that no longer wants the
    /// load balancer it had, finalizer or not.
    #[tokio::test]
    async fn a_service_waiting_for_cleanup_is_retried_at_least_every_30_s() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web").with_finalizer()).await);
        let controller = sync(&env, &memory);
        controller.reconcile(&key).await.unwrap();
        assert_eq!(controller.retry(&key), Retry::Backoff(Backoff::SERVICE), "ensuring: upstream's backoff");
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        api.delete("web", &Default::default()).await.unwrap();
        env.cloud.fail(Function::EnsureLoadBalancerDeleted, ProviderError::Cloud("still in use".into()));
        env.service("web").await;
        controller.reconcile(&key).await.unwrap_err();
        assert_eq!(controller.retry(&key), Retry::Backoff(Backoff::SERVICE_CLEANUP), "cleaning up");
        assert_eq!(Backoff::SERVICE_CLEANUP.delay(10), Duration::from_secs(30));
    }

    #[tokio::test]
    async fn a_type_change_without_the_finalizer_still_clears_the_status() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let mut service = env.service("web").await;
        assert!(ingress(&service).is_some());
        service.metadata.finalizers = None;
        service.metadata.annotations = None;
        service.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        api.replace("web", &Default::default(), &service).await.unwrap();
        env.service("web").await;
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(ingress(&env.service("web").await), None);
        assert_eq!(env.cloud.load_balancer("default/web"), None);
    }

    #[tokio::test]
    async fn the_load_balancer_is_annotated_with_its_provider_and_released_with_the_finalizer() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let service = env.service("web").await;
        let annotations = service.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get(PROVIDER_ANNOTATION).map(String::as_str), Some("test"));
        let mut cluster_ip = service;
        cluster_ip.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        api.replace("web", &Default::default(), &cluster_ip).await.unwrap();
        env.service("web").await;
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let released = env.service("web").await;
        assert!(!has_finalizer(&released));
        assert_eq!(annotation(&released), None, "the annotation goes with the finalizer");
    }

    #[tokio::test]
    async fn a_service_of_a_class_nobody_serves_keeps_its_load_balancer_with_a_warning() {
        let mut env = env().await;
        let memory = Arc::default();
        let mut service = Service::test("web").with_class("example.com/gone").with_finalizer();
        service.metadata.annotations = Some([(PROVIDER_ANNOTATION.to_owned(), "test".to_owned())].into());
        let created = env.add_service(service).await;
        let key = ObjectRef::from_obj(&created);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.events(), [], "not recorded as ensured here: not this controller's");
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        let record = Patch::Strategic(ownership::claim_patch("test", Time(k8s_openapi::jiff::Timestamp::now())));
        api.patch_status("web", &PatchParams::default(), &record).await.unwrap();
        env.service("web").await;
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.take_calls(), Vec::<String>::new(), "no cloud call");
        assert!(has_finalizer(&env.service("web").await), "the finalizer stays");
        let (type_, reason, _, note) = env.events().pop().unwrap();
        assert_eq!((type_, reason.as_str()), (wasm_ccm_kube::events::EventType::Warning, "LoadBalancerClassNotServed"));
        assert!(note.contains("example.com/gone") && note.contains("provider test"), "{note}");
    }

    /// The provider Service `web`'s status records, read back from the API
    /// server.
    async fn recorded(env: &TestEnv) -> Option<String> {
        let service = Api::<Service>::namespaced(env.client.clone(), "default").get("web").await.unwrap();
        ownership::recorded(&service).map(str::to_owned)
    }

    #[tokio::test]
    async fn the_owner_is_recorded_before_the_first_ensure_and_released_after_the_delete() {
        let mut env = env().await;
        let memory = Arc::default();
        env.cloud.fail(Function::EnsureLoadBalancer, ProviderError::Cloud("down".into()));
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap_err();
        assert_eq!(recorded(&env).await.as_deref(), Some("test"), "a failed ensure leaves the record");
        env.cloud.heal(Function::EnsureLoadBalancer);
        env.service("web").await;
        sync(&env, &memory).reconcile(&key).await.unwrap();

        let mut cluster_ip = env.service("web").await;
        cluster_ip.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        api.replace("web", &Default::default(), &cluster_ip).await.unwrap();
        env.service("web").await;
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.load_balancer("default/web"), None);
        assert_eq!(recorded(&env).await, None, "released with the finalizer");
    }

    /// The provider's first ensure is given the Service with the finalizer
    /// and the record, as the API server keeps them.
    #[tokio::test]
    async fn the_first_ensure_is_given_the_service_as_the_claim_left_it() {
        let mut env = env().await;
        env.cloud.fail(Function::EnsureLoadBalancer, ProviderError::Cloud("down".into()));
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &Arc::default()).reconcile(&key).await.unwrap_err();
        let given = env.cloud.ensured_with("default/web").expect("an ensure");
        let stored = Api::<Service>::namespaced(env.client.clone(), "default").get("web").await.unwrap();
        assert_eq!(given.metadata, stored.metadata, "the metadata the claim left");
        assert_eq!(given.spec, stored.spec);
        assert_eq!(ownership::recorded(&given), Some("test"));
        let conditions = |service: &Service| service.status.as_ref().and_then(|status| status.conditions.clone());
        assert_eq!(conditions(&given), conditions(&stored), "the record as the API server keeps it");
    }

    /// The Service's owner can write its metadata and spec, not its status:
    /// the record is out of reach, whatever the request carries.
    #[tokio::test]
    async fn a_tenant_cannot_write_the_record() {
        let mut env = env().await;
        let forged = Service::test("web").recorded_as("other");
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        api.create(&Default::default(), &forged).await.unwrap();
        assert_eq!(recorded(&env).await, None, "status is cleared on create");
        let key = ObjectRef::from_obj(&env.service("web").await);
        sync(&env, &Arc::default()).reconcile(&key).await.unwrap();
        let record = serde_json::to_value(Service::default().recorded_as("other").status).unwrap();
        api.patch("web", &PatchParams::default(), &Patch::Merge(json!({"status": record}))).await.unwrap();
        assert_eq!(recorded(&env).await.as_deref(), Some("test"), "status is kept on update");
    }

    /// The Service's owner names another provider in the annotation, then
    /// deletes the Service: the other provider does nothing, the recorded
    /// one deletes its load balancer and lets the Service go.
    #[tokio::test]
    async fn a_flipped_annotation_leaves_the_delete_to_the_recorded_provider() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let api = Api::<Service>::namespaced(env.client.clone(), "default");
        let flip = serde_json::json!({"metadata": {"annotations": {PROVIDER_ANNOTATION: "other"}}});
        api.patch("web", &PatchParams::default(), &Patch::Merge(flip)).await.unwrap();
        api.delete("web", &Default::default()).await.unwrap();
        let flipped = env.service("web").await;
        assert!(flipped.metadata.deletion_timestamp.is_some());

        let roster = env.claim().roster().clone();
        roster.set([(Arc::from("test"), Serves::everything()), (Arc::from("other"), Serves::everything())].into());
        let other_cloud = TestCloud::default();
        let other = ServiceSync::new(
            Context { cloud: other_cloud.clone(), ..env.context() },
            env.services(),
            Arc::default(),
            Claim::new(Arc::from("other"), roster.clone()),
            SharedPolicy::default(),
        );
        other.reconcile(&key).await.unwrap();
        assert_eq!(other_cloud.take_calls(), Vec::<String>::new(), "the named provider is not asked");
        assert!(api.get_opt("web").await.unwrap().is_some(), "nor does it let the Service go");

        env.cloud.take_calls();
        let claim = Claim::new(Arc::from("test"), roster);
        let owner = ServiceSync::new(env.context(), env.services(), memory, claim, SharedPolicy::default());
        owner.reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.take_calls(), ["get default/web", "ensure-deleted default/web"]);
        assert!(api.get_opt("web").await.unwrap().is_none(), "the recorded provider let it go");
    }

    #[tokio::test]
    async fn a_vanished_service_s_load_balancer_is_deleted_from_its_last_copy() {
        let mut env = env().await;
        let memory = Arc::default();
        let created = env.add_service(Service::test("web")).await;
        let key = ObjectRef::from_obj(&created);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert!(env.cloud.load_balancer("default/web").is_some());
        // Its finalizer removed by hand, then deleted: gone from the cache.
        env.uncache_service(created);
        env.events();
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.load_balancer("default/web"), None, "the load balancer is gone");
        assert_eq!(env.event_reasons(), ["DeletingLoadBalancer", "DeletedLoadBalancer"]);
        assert!(!memory.may_have_load_balancer(&key), "and the Service forgotten");
    }

    #[tokio::test]
    async fn a_failed_delete_of_a_vanished_service_is_retried() {
        let mut env = env().await;
        let memory = Arc::default();
        let created = env.add_service(Service::test("web")).await;
        let key = ObjectRef::from_obj(&created);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        env.uncache_service(created);
        env.cloud.fail(Function::EnsureLoadBalancerDeleted, ProviderError::Cloud("busy".into()));
        env.events();
        let err = sync(&env, &memory).reconcile(&key).await.unwrap_err();
        assert_eq!(err.to_string(), "failed to delete load balancer: busy");
        assert_eq!(env.event_reasons(), ["DeletingLoadBalancer", "DeleteLoadBalancerFailed"]);
        assert!(memory.may_have_load_balancer(&key), "remembered for the retry");
        env.cloud.heal(Function::EnsureLoadBalancerDeleted);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.load_balancer("default/web"), None);
    }

    #[tokio::test]
    async fn a_service_back_with_another_uid_loses_the_old_load_balancer_first() {
        let mut env = env().await;
        let memory = Arc::default();
        let created = env.add_service(Service::test("web")).await;
        let key = ObjectRef::from_obj(&created);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let mut again = env.service("web").await;
        again.metadata.uid = Some("another-uid".into());
        env.cache_service(again);
        env.cloud.take_calls();
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.take_calls(), ["ensure-deleted default/web", "ensure default/web"]);
    }

    /// A tenant deletes a Service of class a and makes it again as class b,
    /// which another provider serves, before provider a's lane syncs: the
    /// lane deletes the old load balancer and leaves the new Service alone.
    #[tokio::test]
    async fn a_service_made_again_for_another_provider_is_left_to_it() {
        let mut env = env().await;
        let memory: Arc<Memory> = Arc::default();
        let serving = |class: &str| Serves {
            load_balancer_classes: [class.to_owned()].into(),
            default_load_balancer: false,
            namespaces: None,
            nodes: false,
            routes: false,
        };
        let roster = env.claim().roster().clone();
        roster
            .set([(Arc::from("test"), serving("a.example/lb")), (Arc::from("other"), serving("b.example/lb"))].into());
        let claim = Claim::new(Arc::from("test"), roster);
        let lane = ServiceSync::new(env.context(), env.services(), memory, claim, SharedPolicy::default());
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web").with_class("a.example/lb")).await);
        lane.reconcile(&key).await.unwrap();
        assert!(env.cloud.load_balancer("default/web").is_some());

        // Made again: a new UID, the other class, none of the old one's
        // finalizer, record, annotation or status.
        let mut again = Service::test("web").with_class("b.example/lb");
        again.metadata.uid = Some("another-uid".into());
        again.metadata.resource_version = env.service("web").await.metadata.resource_version;
        env.cache_service(again);
        env.cloud.take_calls();
        env.api.reset_requests();
        lane.reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.take_calls(), ["ensure-deleted default/web"], "the old one's load balancer only");
        assert_eq!(env.api.requests().get("patch", "services/status"), 0, "nothing written to the new Service");
    }

    #[tokio::test]
    async fn a_status_patch_decided_on_another_uid_is_refused() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        let mut stale = env.service("web").await;
        stale.metadata.uid = Some("a-uid-gone".into());
        env.cache_service(stale);
        let err = sync(&env, &memory).reconcile(&key).await.unwrap_err();
        assert!(err.to_string().contains("Precondition failed: UID"), "{err}");
        assert!(!has_finalizer(&env.service("web").await), "the Service of the other UID is not claimed");
    }

    #[tokio::test]
    async fn a_failed_delete_of_the_old_uid_s_load_balancer_is_retried_not_leaked() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        let mut again = env.service("web").await;
        again.metadata.uid = Some("another-uid".into());
        env.cache_service(again);
        env.cloud.take_calls();
        env.cloud.fail(Function::EnsureLoadBalancerDeleted, ProviderError::Cloud("busy".into()));
        assert!(sync(&env, &memory).reconcile(&key).await.is_err());
        env.cloud.heal(Function::EnsureLoadBalancerDeleted);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(
            env.cloud.take_calls(),
            ["ensure-deleted default/web", "ensure-deleted default/web", "ensure default/web"],
            "the old load balancer's delete is retried before the new one is ensured"
        );
    }

    #[tokio::test]
    async fn a_service_whose_status_is_current_is_not_written() {
        let mut env = env().await;
        let memory = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        env.service("web").await;
        env.api.reset_requests();
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.api.requests().total(), 0, "the finalizer and the ingress are there: no request");
    }

    #[tokio::test]
    async fn an_ingress_in_the_cluster_s_pod_networks_is_refused_and_not_published() {
        let mut env = env().await;
        // The test cloud answers 192.0.2.<n>.
        env.settings.cluster_cidrs = vec!["192.0.2.0/24".parse().unwrap()];
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        let err = sync(&env, &Arc::default()).reconcile(&key).await.unwrap_err();
        assert!(matches!(err, Error::RefusedIngress(_)), "{err:?}");
        assert!(err.to_string().ends_with("which is in the cluster's pod networks; nothing was published"), "{err}");
        assert_eq!(ingress(&env.service("web").await), None, "nothing published");
        let (_, reason, _, note) = env.events().pop().unwrap();
        assert_eq!(reason, "SyncLoadBalancerFailed");
        assert!(note.starts_with("Error syncing load balancer: the provider answered 192.0.2."), "{note}");
    }

    #[tokio::test]
    async fn an_answer_outside_the_provider_s_ingress_ranges_is_refused_until_the_ranges_change() {
        let mut env = env().await;
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        let ranges = |entries: &[&str]| LoadBalancerPolicy {
            ingress_ranges: IngressRanges::new(entries).unwrap(),
            ..LoadBalancerPolicy::default()
        };
        let policy = SharedPolicy::new(ranges(&["198.51.100.0/24", "*.lb.example.com"]));
        let sync = ServiceSync::new(env.context(), env.services(), Arc::default(), env.claim(), policy.clone());
        let err = sync.reconcile(&key).await.unwrap_err();
        assert!(err.to_string().ends_with("which is outside the provider's ingress ranges; nothing was published"));
        assert_eq!(ingress(&env.service("web").await), None, "nothing published");
        policy.set(ranges(&["192.0.2.0/24"]));
        sync.reconcile(&key).await.unwrap();
        assert!(ingress(&env.service("web").await).is_some(), "published once the operator widened the ranges");
    }

    #[tokio::test]
    async fn an_address_another_service_publishes_is_refused() {
        let mut env = env().await;
        // Another implementation's load balancer, published on every
        // address the test cloud answers.
        let mut theirs = Service::test("theirs").with_class("example.com/other");
        let every = (0..=255).map(|n| LoadBalancerIngress { ip: Some(format!("192.0.2.{n}")), ..Default::default() });
        let load_balancer = LoadBalancerStatus { ingress: Some(every.collect()) };
        theirs.status = Some(ServiceStatus { load_balancer: Some(load_balancer), ..ServiceStatus::default() });
        env.add_service(theirs).await;
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        let err = sync(&env, &Arc::default()).reconcile(&key).await.unwrap_err();
        let message = err.to_string();
        assert!(message.contains("which is the load balancer ingress of Service default/theirs"), "{message}");
        assert_eq!(ingress(&env.service("web").await), None, "nothing published");
    }

    /// `web`, and `theirs` of provider vendor-b claimed at `theirs_claimed`,
    /// both publishing every address the test cloud answers, as two
    /// providers left them before a restart; `web` then synced, and claimed
    /// now.
    async fn publishing_one_address_twice(
        theirs_claimed: k8s_openapi::jiff::Timestamp,
    ) -> (TestEnv, Result<(), Error>) {
        let mut env = env().await;
        let every = (0..=255).map(|n| LoadBalancerIngress { ip: Some(format!("192.0.2.{n}")), ..Default::default() });
        let published = ServiceStatus {
            load_balancer: Some(LoadBalancerStatus { ingress: Some(every.collect()) }),
            ..ServiceStatus::default()
        };
        let mut theirs = Service::test("theirs").with_class("example.com/b");
        theirs.status = Some(published.clone());
        env.add_service(theirs.claimed_by("vendor-b", theirs_claimed)).await;
        let mut web = Service::test("web");
        web.status = Some(published);
        let key = ObjectRef::from_obj(&env.add_service(web).await);
        let result = sync(&env, &Arc::default()).reconcile(&key).await.map(drop);
        (env, result)
    }

    #[tokio::test]
    async fn of_two_services_publishing_one_address_the_first_to_claim_keeps_it() {
        let (mut env, result) = publishing_one_address_twice(k8s_openapi::jiff::Timestamp::UNIX_EPOCH).await;
        let message = result.unwrap_err().to_string();
        assert!(message.contains("which is the load balancer ingress of Service default/theirs"), "{message}");
        assert_eq!(ingress(&env.service("web").await), None, "the later claim lets the address go");

        let later = "2100-01-01T00:00:00Z".parse().unwrap();
        let (mut env, result) = publishing_one_address_twice(later).await;
        result.expect("the earlier claim keeps the address");
        let published = env.service("web").await.status.unwrap().load_balancer.unwrap().ingress.unwrap();
        assert_eq!(published.len(), 1, "the provider's answer alone: {published:?}");
    }

    #[tokio::test]
    async fn a_resync_that_finds_the_load_balancer_as_it_should_be_writes_no_event() {
        let mut env = env().await;
        let memory: Arc<Memory> = Arc::default();
        let key = ObjectRef::from_obj(&env.add_service(Service::test("web")).await);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        env.service("web").await;
        env.event_reasons();
        env.cloud.take_calls();

        memory.resync(&key);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.cloud.take_calls(), ["ensure default/web"], "the resync ensures");
        assert_eq!(env.event_reasons(), Vec::<String>::new(), "and finds nothing to report");

        // Nor a warning when the cluster has no nodes.
        env.uncache_node(Node::test("node-a"));
        memory.resync(&key);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.event_reasons(), Vec::<String>::new());

        // A sync for a change of the Service reports as before.
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.event_reasons(), ["EnsuringLoadBalancer", "UnAvailableLoadBalancer", "EnsuredLoadBalancer"]);
    }

    #[tokio::test]
    async fn a_change_of_the_service_after_the_resync_queued_it_is_reported() {
        let mut env = env().await;
        let memory: Arc<Memory> = Arc::default();
        let service = env.add_service(Service::test("web")).await;
        let key = ObjectRef::from_obj(&service);
        memory.observe(&key, &Arc::new(service.clone()));
        sync(&env, &memory).reconcile(&key).await.unwrap();
        env.event_reasons();
        memory.resync(&key);
        let mut moved = service;
        moved.spec.as_mut().unwrap().load_balancer_ip = Some("192.0.2.9".into());
        assert!(memory.observe(&key, &Arc::new(moved)).changed);
        sync(&env, &memory).reconcile(&key).await.unwrap();
        assert_eq!(env.event_reasons(), ["EnsuringLoadBalancer", "EnsuredLoadBalancer"]);
    }
}
