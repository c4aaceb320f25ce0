//! What the controllers ask of the cloud, upstream's `cloudprovider.Interface`
//! over Kubernetes objects: a trait, so that the controllers run against the
//! sandboxed provider ([`ProviderHandle`]) and, in their unit tests, against
//! an in-memory cloud.

use std::future::Future;

use k8s_openapi::api::core::v1::{LoadBalancerStatus, Node, NodeAddress, Service};
use wasm_ccm_host::types::{InstanceMetadata, Parts, Route, Zone};
use wasm_ccm_host::{ProviderError, ProviderHandle};

/// A cloud provider. The cluster's name is the provider's own to pass on.
pub trait Cloud: Clone + Send + Sync + 'static {
    /// `ProviderName()`: the scheme of its provider IDs.
    fn provider_name(&self) -> String;

    /// The parts it supports, its `(X, bool)` answers.
    fn parts(&self) -> Parts;

    /// `GetLoadBalancer`: the status, or `None` when there is none.
    fn get_load_balancer(
        &self,
        service: &Service,
    ) -> impl Future<Output = Result<Option<LoadBalancerStatus>, ProviderError>> + Send;

    /// `EnsureLoadBalancer` targeting `nodes`.
    fn ensure_load_balancer(
        &self,
        service: &Service,
        nodes: &[Node],
    ) -> impl Future<Output = Result<LoadBalancerStatus, ProviderError>> + Send;

    /// `UpdateLoadBalancer`: target exactly `nodes`.
    fn update_load_balancer(
        &self,
        service: &Service,
        nodes: &[Node],
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// `EnsureLoadBalancerDeleted`.
    fn ensure_load_balancer_deleted(&self, service: &Service)
    -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// InstancesV2 `InstanceExists`.
    fn instance_exists(&self, node: &Node) -> impl Future<Output = Result<bool, ProviderError>> + Send;

    /// InstancesV2 `InstanceShutdown`.
    fn instance_shutdown(&self, node: &Node) -> impl Future<Output = Result<bool, ProviderError>> + Send;

    /// InstancesV2 `InstanceMetadata`.
    fn instance_metadata(&self, node: &Node) -> impl Future<Output = Result<InstanceMetadata, ProviderError>> + Send;

    /// Instances `NodeAddresses`.
    fn node_addresses(&self, node_name: &str) -> impl Future<Output = Result<Vec<NodeAddress>, ProviderError>> + Send;

    /// Instances `NodeAddressesByProviderID`.
    fn node_addresses_by_provider_id(
        &self,
        provider_id: &str,
    ) -> impl Future<Output = Result<Vec<NodeAddress>, ProviderError>> + Send;

    /// Instances `InstanceID`.
    fn instance_id(&self, node_name: &str) -> impl Future<Output = Result<String, ProviderError>> + Send;

    /// Instances `InstanceType`.
    fn instance_type(&self, node_name: &str) -> impl Future<Output = Result<String, ProviderError>> + Send;

    /// Instances `InstanceTypeByProviderID`.
    fn instance_type_by_provider_id(
        &self,
        provider_id: &str,
    ) -> impl Future<Output = Result<String, ProviderError>> + Send;

    /// Instances `InstanceExistsByProviderID`.
    fn instance_exists_by_provider_id(
        &self,
        provider_id: &str,
    ) -> impl Future<Output = Result<bool, ProviderError>> + Send;

    /// Instances `InstanceShutdownByProviderID`.
    fn instance_shutdown_by_provider_id(
        &self,
        provider_id: &str,
    ) -> impl Future<Output = Result<bool, ProviderError>> + Send;

    /// Zones `GetZoneByProviderID`.
    fn zone_by_provider_id(&self, provider_id: &str) -> impl Future<Output = Result<Zone, ProviderError>> + Send;

    /// Zones `GetZoneByNodeName`.
    fn zone_by_node_name(&self, node_name: &str) -> impl Future<Output = Result<Zone, ProviderError>> + Send;

    /// Routes `ListRoutes` of the cluster.
    fn list_routes(&self) -> impl Future<Output = Result<Vec<Route>, ProviderError>> + Send;

    /// Routes `CreateRoute`; `name_hint` is the target node's UID.
    fn create_route(&self, name_hint: &str, route: &Route) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Routes `DeleteRoute`.
    fn delete_route(&self, route: &Route) -> impl Future<Output = Result<(), ProviderError>> + Send;
}

impl Cloud for ProviderHandle {
    fn provider_name(&self) -> String {
        self.info().name
    }

    fn parts(&self) -> Parts {
        self.info().parts
    }

    async fn get_load_balancer(&self, service: &Service) -> Result<Option<LoadBalancerStatus>, ProviderError> {
        ProviderHandle::get_load_balancer(self, service).await
    }

    async fn ensure_load_balancer(
        &self,
        service: &Service,
        nodes: &[Node],
    ) -> Result<LoadBalancerStatus, ProviderError> {
        ProviderHandle::ensure_load_balancer(self, service, nodes).await
    }

    async fn update_load_balancer(&self, service: &Service, nodes: &[Node]) -> Result<(), ProviderError> {
        ProviderHandle::update_load_balancer(self, service, nodes).await
    }

    async fn ensure_load_balancer_deleted(&self, service: &Service) -> Result<(), ProviderError> {
        ProviderHandle::ensure_load_balancer_deleted(self, service).await
    }

    async fn instance_exists(&self, node: &Node) -> Result<bool, ProviderError> {
        ProviderHandle::instance_exists(self, node).await
    }

    async fn instance_shutdown(&self, node: &Node) -> Result<bool, ProviderError> {
        ProviderHandle::instance_shutdown(self, node).await
    }

    async fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, ProviderError> {
        ProviderHandle::instance_metadata(self, node).await
    }

    async fn node_addresses(&self, node_name: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        ProviderHandle::node_addresses(self, node_name).await
    }

    async fn node_addresses_by_provider_id(&self, provider_id: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        ProviderHandle::node_addresses_by_provider_id(self, provider_id).await
    }

    async fn instance_id(&self, node_name: &str) -> Result<String, ProviderError> {
        ProviderHandle::instance_id(self, node_name).await
    }

    async fn instance_type(&self, node_name: &str) -> Result<String, ProviderError> {
        ProviderHandle::instance_type(self, node_name).await
    }

    async fn instance_type_by_provider_id(&self, provider_id: &str) -> Result<String, ProviderError> {
        ProviderHandle::instance_type_by_provider_id(self, provider_id).await
    }

    async fn instance_exists_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        ProviderHandle::instance_exists_by_provider_id(self, provider_id).await
    }

    async fn instance_shutdown_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        ProviderHandle::instance_shutdown_by_provider_id(self, provider_id).await
    }

    async fn zone_by_provider_id(&self, provider_id: &str) -> Result<Zone, ProviderError> {
        ProviderHandle::get_zone_by_provider_id(self, provider_id).await
    }

    async fn zone_by_node_name(&self, node_name: &str) -> Result<Zone, ProviderError> {
        ProviderHandle::get_zone_by_node_name(self, node_name).await
    }

    async fn list_routes(&self) -> Result<Vec<Route>, ProviderError> {
        ProviderHandle::list_routes(self).await
    }

    async fn create_route(&self, name_hint: &str, route: &Route) -> Result<(), ProviderError> {
        ProviderHandle::create_route(self, name_hint, route).await
    }

    async fn delete_route(&self, route: &Route) -> Result<(), ProviderError> {
        ProviderHandle::delete_route(self, route).await
    }
}
