//! [`Cloud`]: upstream's `cloudprovider.Interface` over Kubernetes objects,
//! as the controllers call it. The sandboxed WebAssembly provider
//! implements it in the host, and [`TestCloud`](crate::testing::TestCloud)
//! in memory for tests.

use std::future::Future;

use k8s_openapi::api::core::v1::{LoadBalancerStatus, Node, NodeAddress, Service};

use crate::node_set::NodeSet;

/// One answer per node of a batch, in the node set's order.
pub type BatchAnswers = Vec<Result<InstanceState, ProviderError>>;

/// One metadata answer per node of a batch, in the node set's order.
pub type MetadataAnswers = Vec<Result<InstanceMetadata, ProviderError>>;

use crate::error::ProviderError;
use crate::{InstanceMetadata, InstanceState, ProviderInfo, Route, Zone};

/// A cloud provider: one method per [`Function`](crate::Function) of the
/// contract but the provider's own, which [`Cloud::info`] answers for.
///
/// The cluster's name is the provider's own to pass on, as it was
/// initialised with it. A function of a part the provider does not
/// support answers [`ProviderError::NotImplemented`].
pub trait Cloud: Clone + Send + Sync + 'static {
    /// What the provider said of itself: `ProviderName()`,
    /// `HasClusterID()` and its parts.
    fn info(&self) -> ProviderInfo;

    /// `GetLoadBalancer`: the status, or `None` when there is none.
    fn get_load_balancer(
        &self,
        service: &Service,
    ) -> impl Future<Output = Result<Option<LoadBalancerStatus>, ProviderError>> + Send;

    /// `GetLoadBalancerName`.
    fn get_load_balancer_name(&self, service: &Service) -> impl Future<Output = Result<String, ProviderError>> + Send;

    /// `EnsureLoadBalancer` targeting `nodes`.
    fn ensure_load_balancer(
        &self,
        service: &Service,
        nodes: &NodeSet,
    ) -> impl Future<Output = Result<LoadBalancerStatus, ProviderError>> + Send;

    /// `UpdateLoadBalancer`: target exactly `nodes`.
    fn update_load_balancer(
        &self,
        service: &Service,
        nodes: &NodeSet,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// `EnsureLoadBalancerDeleted`: succeeds when it is already gone.
    fn ensure_load_balancer_deleted(&self, service: &Service)
    -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// InstancesV2 `InstanceExists`.
    fn instance_exists(&self, node: &Node) -> impl Future<Output = Result<bool, ProviderError>> + Send;

    /// InstancesV2 `InstanceShutdown`.
    fn instance_shutdown(&self, node: &Node) -> impl Future<Output = Result<bool, ProviderError>> + Send;

    /// `InstanceExists` and `InstanceShutdown` of every node of `nodes`, one
    /// answer per node in the set's order, in one call: the batch form the
    /// node lifecycle uses when [`ProviderInfo::max_batch`] is not 0, with
    /// at most that many nodes. An error of the whole batch fails every node
    /// of it.
    fn instance_states(&self, nodes: &NodeSet) -> impl Future<Output = Result<BatchAnswers, ProviderError>> + Send;

    /// InstancesV2 `InstanceMetadata`.
    fn instance_metadata(&self, node: &Node) -> impl Future<Output = Result<InstanceMetadata, ProviderError>> + Send;

    /// `InstanceMetadata` of every node of `nodes`, one answer per node in
    /// the set's order, in one call: the batch form the node status refresh
    /// uses when [`ProviderInfo::max_batch`] is not 0, with at most that
    /// many nodes. An error of the whole batch fails every node of it;
    /// [`ProviderError::NotImplemented`] says to ask one node at a time.
    fn batch_metadata(&self, nodes: &NodeSet) -> impl Future<Output = Result<MetadataAnswers, ProviderError>> + Send;

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

    /// Instances `AddSSHKeyToAllInstances`.
    fn add_ssh_key_to_all_instances(
        &self,
        user: &str,
        key_data: &[u8],
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Instances `CurrentNodeName`.
    fn current_node_name(&self, hostname: &str) -> impl Future<Output = Result<String, ProviderError>> + Send;

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

    /// Zones `GetZone`: the zone the caller runs in.
    fn get_zone(&self) -> impl Future<Output = Result<Zone, ProviderError>> + Send;

    /// Zones `GetZoneByProviderID`.
    fn get_zone_by_provider_id(&self, provider_id: &str) -> impl Future<Output = Result<Zone, ProviderError>> + Send;

    /// Zones `GetZoneByNodeName`.
    fn get_zone_by_node_name(&self, node_name: &str) -> impl Future<Output = Result<Zone, ProviderError>> + Send;

    /// Clusters `ListClusters`.
    fn list_clusters(&self) -> impl Future<Output = Result<Vec<String>, ProviderError>> + Send;

    /// Clusters `Master`: the address of the cluster's API server.
    fn master(&self, cluster_name: &str) -> impl Future<Output = Result<String, ProviderError>> + Send;

    /// Routes `ListRoutes` of the cluster.
    fn list_routes(&self) -> impl Future<Output = Result<Vec<Route>, ProviderError>> + Send;

    /// Routes `CreateRoute`; `name_hint` is the target node's UID.
    fn create_route(&self, name_hint: &str, route: &Route) -> impl Future<Output = Result<(), ProviderError>> + Send;

    /// Routes `DeleteRoute`.
    fn delete_route(&self, route: &Route) -> impl Future<Output = Result<(), ProviderError>> + Send;
}
