//! One Service's sync, as upstream's `syncLoadBalancerIfNeeded`: ensure its
//! load balancer and publish the ingress, or delete it and let the Service
//! go.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{LoadBalancerStatus, Service};
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tokio::time::Instant;
use wasm_ccm_host::ProviderError;

use super::rules::{LOAD_BALANCER_FINALIZER, has_finalizer, needs_cleanup, same_ingress, wants_load_balancer};
use super::{ServiceKey, Shared};
use crate::reachability::is_transport_error;

/// Why a sync failed.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The provider failed.
    #[error("failed to {action} load balancer: {source}")]
    Provider {
        /// What was being done.
        action: &'static str,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
    /// The API server refused a write.
    #[error("failed to {action}: {source}")]
    Api {
        /// What was being written.
        action: &'static str,
        /// The API server's error.
        #[source]
        source: kube::Error,
    },
}

impl SyncError {
    /// The delay a provider asked for with a retry error.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            SyncError::Provider { source: ProviderError::Retry { delay, .. }, .. } => Some(*delay),
            _ => None,
        }
    }

    /// Whether the API server could not be reached.
    pub fn is_transport(&self) -> bool {
        matches!(self, SyncError::Api { source, .. } if is_transport_error(source))
    }
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

impl Shared {
    fn api(&self, service: &Service) -> Api<Service> {
        Api::namespaced(self.client.clone(), service.metadata.namespace.as_deref().unwrap_or("default"))
    }

    /// Syncs the Service `key`, recording a warning event when it fails.
    pub(super) async fn sync(&self, key: &ServiceKey) -> Result<(), SyncError> {
        let _lock = self.locks.lock(key).await;
        let Some(service) = self.services.get(key) else {
            return Ok(());
        };
        let result = if needs_cleanup(&service) {
            self.delete(&service).await
        } else if wants_load_balancer(&service) {
            self.ensure(service.clone()).await
        } else {
            Ok(())
        };
        if let Err(err) = &result {
            self.events.warning(
                service.object_ref(&()),
                "SyncLoadBalancerFailed",
                format!("Error syncing load balancer: {err}"),
            );
        }
        result
    }

    async fn ensure(&self, service: Arc<Service>) -> Result<(), SyncError> {
        let reference = service.object_ref(&());
        self.events.normal(reference.clone(), "EnsuringLoadBalancer", "Ensuring load balancer");
        let service = if has_finalizer(&service) { service } else { Arc::new(self.add_finalizer(&service).await?) };
        let nodes = self.nodes.eligible();
        if nodes.nodes.is_empty() {
            self.events.warning(
                reference.clone(),
                "UnAvailableLoadBalancer",
                "There are no available nodes for LoadBalancer",
            );
        }
        let status = match self.provider.ensure_load_balancer(&service, &nodes.nodes).await {
            Ok(status) => status,
            Err(ProviderError::ImplementedElsewhere) => {
                tracing::debug!("the load balancer is implemented elsewhere; nothing to do");
                return Ok(());
            }
            Err(source) => return Err(SyncError::Provider { action: "ensure", source }),
        };
        self.metrics.load_balancer_synced();
        self.events.normal(reference.clone(), "EnsuredLoadBalancer", "Ensured load balancer");
        {
            let mut state = self.state(&ObjectRef::from_obj(&*service));
            state.nodes = Some(Arc::new(nodes.fingerprint.clone()));
            state.ensured = Some(Instant::now());
        }
        if self.nodes.eligible().fingerprint != nodes.fingerprint {
            self.node_changes.notify_one();
        }
        let current = service.status.as_ref().and_then(|status| status.load_balancer.as_ref());
        if !same_ingress(current, &status) {
            self.patch_status(&service, &status).await?;
        }
        Ok(())
    }

    async fn delete(&self, service: &Service) -> Result<(), SyncError> {
        let reference = service.object_ref(&());
        let exists = match self.provider.get_load_balancer(service).await {
            Ok(status) => status.is_some(),
            // Without GetLoadBalancer, deleting is the only way to be sure.
            Err(ProviderError::NotImplemented) => true,
            Err(ProviderError::ImplementedElsewhere) => false,
            Err(source) => return Err(SyncError::Provider { action: "check", source }),
        };
        if exists {
            self.events.normal(reference.clone(), "DeletingLoadBalancer", "Deleting load balancer");
            match self.provider.ensure_load_balancer_deleted(service).await {
                Ok(()) | Err(ProviderError::ImplementedElsewhere) => {}
                Err(source) => return Err(SyncError::Provider { action: "delete", source }),
            }
        }
        self.remove_finalizer(service).await?;
        self.events.normal(reference, "DeletedLoadBalancer", "Deleted load balancer");
        let had_ingress = service
            .status
            .as_ref()
            .and_then(|status| status.load_balancer.as_ref())
            .is_some_and(|balancer| balancer.ingress.as_ref().is_some_and(|ingress| !ingress.is_empty()));
        if had_ingress && service.metadata.deletion_timestamp.is_none() {
            self.patch_status(service, &LoadBalancerStatus::default()).await?;
        }
        let mut state = self.state(&ObjectRef::from_obj(service));
        state.nodes = None;
        state.ensured = None;
        Ok(())
    }

    async fn add_finalizer(&self, service: &Service) -> Result<Service, SyncError> {
        let patch = json!({"metadata": {"finalizers": [LOAD_BALANCER_FINALIZER]}});
        self.api(service)
            .patch(&name(service), &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map_err(|source| SyncError::Api { action: "add the load-balancer finalizer", source })
    }

    async fn remove_finalizer(&self, service: &Service) -> Result<(), SyncError> {
        if !has_finalizer(service) {
            return Ok(());
        }
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [LOAD_BALANCER_FINALIZER]}});
        match self.api(service).patch(&name(service), &PatchParams::default(), &Patch::Strategic(patch)).await {
            Ok(_) => Ok(()),
            Err(source) if is_not_found(&source) => Ok(()),
            Err(source) => Err(SyncError::Api { action: "remove the load-balancer finalizer", source }),
        }
    }

    async fn patch_status(&self, service: &Service, status: &LoadBalancerStatus) -> Result<(), SyncError> {
        let ingress = status.ingress.as_ref().filter(|ingress| !ingress.is_empty());
        let patch = json!({"status": {"loadBalancer": {"ingress": ingress}}});
        match self.api(service).patch_status(&name(service), &PatchParams::default(), &Patch::Merge(patch)).await {
            Ok(_) => Ok(()),
            // The Service can disappear right after its finalizer goes.
            Err(source) if is_not_found(&source) => Ok(()),
            Err(source) => Err(SyncError::Api { action: "update the load-balancer status", source }),
        }
    }
}

fn name(service: &Service) -> String {
    service.metadata.name.clone().unwrap_or_default()
}
