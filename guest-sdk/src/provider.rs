//! The traits a provider implements: one for the provider and one per part
//! of `cloudprovider.Interface`.
//!
//! Every method of a part has a default body that answers
//! [`Error::NotImplemented`], so a provider overrides only what its cloud
//! supports.

use crate::types::{InstanceMetadata, InstanceState, LoadBalancerStatus, Node, NodeAddress, Route, Service, Zone};
use crate::{Error, NodeSet};

/// A cloud provider: `cloudprovider.Interface`.
///
/// The host builds the provider with [`Provider::new`] once per version and
/// configuration, and starts every call from a fresh copy of the instance
/// `new` left: set-up is paid once, and nothing one call keeps in memory
/// reaches the next. What `new` draws at random is the same in every call:
/// draw nonces and idempotency tokens in the call itself.
pub trait Provider: Sized + 'static {
    /// `ProviderName()`; also the scheme of the provider IDs it issues.
    const NAME: &'static str;

    /// `Initialize`: builds the provider from its configuration file and the
    /// cluster's name.
    fn new(config: &[u8], cluster_name: &str) -> Result<Self, Error>;

    /// `HasClusterID()`.
    fn has_cluster_id(&self) -> bool {
        true
    }

    /// `LoadBalancer()`: `Some` when the provider manages load balancers.
    fn load_balancer(&self) -> Option<&dyn LoadBalancer> {
        None
    }

    /// `Instances()`: `Some` when the provider implements the first
    /// instances API.
    fn instances(&self) -> Option<&dyn Instances> {
        None
    }

    /// `InstancesV2()`: `Some` when the provider implements it.
    fn instances_v2(&self) -> Option<&dyn InstancesV2> {
        None
    }

    /// `Zones()`: `Some` when the provider implements it.
    fn zones(&self) -> Option<&dyn Zones> {
        None
    }

    /// `Clusters()`: `Some` when the provider implements it.
    fn clusters(&self) -> Option<&dyn Clusters> {
        None
    }

    /// `Routes()`: `Some` when the provider manages routes.
    fn routes(&self) -> Option<&dyn Routes> {
        None
    }
}

/// `cloudprovider.LoadBalancer`.
pub trait LoadBalancer {
    /// `GetLoadBalancer`: the status, or `None` when there is no load balancer.
    fn get_load_balancer(&self, cluster_name: &str, service: &Service) -> Result<Option<LoadBalancerStatus>, Error> {
        let _ = (cluster_name, service);
        Err(Error::NotImplemented)
    }

    /// `GetLoadBalancerName`; upstream's default name unless overridden.
    fn get_load_balancer_name(&self, cluster_name: &str, service: &Service) -> String {
        let _ = cluster_name;
        default_load_balancer_name(service)
    }

    /// `EnsureLoadBalancer`: creates or updates the load balancer, targeting
    /// `nodes`; idempotent.
    fn ensure_load_balancer(
        &self,
        cluster_name: &str,
        service: &Service,
        nodes: &NodeSet<'_>,
    ) -> Result<LoadBalancerStatus, Error> {
        let _ = (cluster_name, service, nodes);
        Err(Error::NotImplemented)
    }

    /// `UpdateLoadBalancer`: makes the load balancer target exactly `nodes`.
    fn update_load_balancer(&self, cluster_name: &str, service: &Service, nodes: &NodeSet<'_>) -> Result<(), Error> {
        let _ = (cluster_name, service, nodes);
        Err(Error::NotImplemented)
    }

    /// `EnsureLoadBalancerDeleted`: succeeds when it is already gone.
    fn ensure_load_balancer_deleted(&self, cluster_name: &str, service: &Service) -> Result<(), Error> {
        let _ = (cluster_name, service);
        Err(Error::NotImplemented)
    }
}

/// `cloudprovider.InstancesV2`.
pub trait InstancesV2 {
    /// `InstanceExists`.
    fn instance_exists(&self, node: &Node) -> Result<bool, Error> {
        let _ = node;
        Err(Error::NotImplemented)
    }

    /// `InstanceShutdown`.
    fn instance_shutdown(&self, node: &Node) -> Result<bool, Error> {
        let _ = node;
        Err(Error::NotImplemented)
    }

    /// `InstanceMetadata`.
    fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, Error> {
        let _ = node;
        Err(Error::NotImplemented)
    }

    /// The most nodes [`InstancesV2::instance_states`] takes at once. 0, the
    /// default, says the provider answers one node at a time: the host then
    /// asks `instance_exists` and `instance_shutdown` per node, as upstream
    /// does.
    fn max_batch(&self) -> u32 {
        0
    }

    /// `InstanceExists` and, for an instance that exists,
    /// `InstanceShutdown` of every node of `nodes`: one answer per node in
    /// the set's order, with as few cloud requests as the cloud allows. A
    /// node's error leaves the node alone; an error of the whole answer
    /// fails every node. The default asks the per-node methods.
    fn instance_states(&self, nodes: &NodeSet<'_>) -> Result<Vec<Result<InstanceState, Error>>, Error> {
        Ok((0..nodes.len())
            .map(|index| {
                let node = nodes.get(index).ok_or(Error::InstanceNotFound)?;
                let exists = self.instance_exists(&node)?;
                let shut_down = exists && self.instance_shutdown(&node)?;
                Ok(InstanceState { exists, shut_down })
            })
            .collect())
    }

    /// `InstanceMetadata` of every node of `nodes`, asked by the node status
    /// refresh in batches of [`InstancesV2::max_batch`]: one answer per node
    /// in the set's order, with as few cloud requests as the cloud allows.
    /// A node's error leaves the node alone; an error of the whole answer
    /// fails every node. The default, `NotImplemented`, has the host ask
    /// `instance_metadata` one node at a time, a few at once.
    fn batch_metadata(&self, nodes: &NodeSet<'_>) -> Result<Vec<Result<InstanceMetadata, Error>>, Error> {
        let _ = nodes;
        Err(Error::NotImplemented)
    }
}

/// `cloudprovider.Instances`.
pub trait Instances {
    /// `NodeAddresses`.
    fn node_addresses(&self, node_name: &str) -> Result<Vec<NodeAddress>, Error> {
        let _ = node_name;
        Err(Error::NotImplemented)
    }

    /// `NodeAddressesByProviderID`.
    fn node_addresses_by_provider_id(&self, provider_id: &str) -> Result<Vec<NodeAddress>, Error> {
        let _ = provider_id;
        Err(Error::NotImplemented)
    }

    /// `InstanceID`.
    fn instance_id(&self, node_name: &str) -> Result<String, Error> {
        let _ = node_name;
        Err(Error::NotImplemented)
    }

    /// `InstanceType`.
    fn instance_type(&self, node_name: &str) -> Result<String, Error> {
        let _ = node_name;
        Err(Error::NotImplemented)
    }

    /// `InstanceTypeByProviderID`.
    fn instance_type_by_provider_id(&self, provider_id: &str) -> Result<String, Error> {
        let _ = provider_id;
        Err(Error::NotImplemented)
    }

    /// `AddSSHKeyToAllInstances`.
    fn add_ssh_key_to_all_instances(&self, user: &str, key_data: &[u8]) -> Result<(), Error> {
        let _ = (user, key_data);
        Err(Error::NotImplemented)
    }

    /// `CurrentNodeName`.
    fn current_node_name(&self, hostname: &str) -> Result<String, Error> {
        let _ = hostname;
        Err(Error::NotImplemented)
    }

    /// `InstanceExistsByProviderID`.
    fn instance_exists_by_provider_id(&self, provider_id: &str) -> Result<bool, Error> {
        let _ = provider_id;
        Err(Error::NotImplemented)
    }

    /// `InstanceShutdownByProviderID`.
    fn instance_shutdown_by_provider_id(&self, provider_id: &str) -> Result<bool, Error> {
        let _ = provider_id;
        Err(Error::NotImplemented)
    }
}

/// `cloudprovider.Zones`.
pub trait Zones {
    /// `GetZone`.
    fn get_zone(&self) -> Result<Zone, Error> {
        Err(Error::NotImplemented)
    }

    /// `GetZoneByProviderID`.
    fn get_zone_by_provider_id(&self, provider_id: &str) -> Result<Zone, Error> {
        let _ = provider_id;
        Err(Error::NotImplemented)
    }

    /// `GetZoneByNodeName`.
    fn get_zone_by_node_name(&self, node_name: &str) -> Result<Zone, Error> {
        let _ = node_name;
        Err(Error::NotImplemented)
    }
}

/// `cloudprovider.Clusters`.
pub trait Clusters {
    /// `ListClusters`.
    fn list_clusters(&self) -> Result<Vec<String>, Error> {
        Err(Error::NotImplemented)
    }

    /// `Master`.
    fn master(&self, cluster_name: &str) -> Result<String, Error> {
        let _ = cluster_name;
        Err(Error::NotImplemented)
    }
}

/// `cloudprovider.Routes`.
pub trait Routes {
    /// `ListRoutes`.
    fn list_routes(&self, cluster_name: &str) -> Result<Vec<Route>, Error> {
        let _ = cluster_name;
        Err(Error::NotImplemented)
    }

    /// `CreateRoute`; `name_hint` is the target Node's UID.
    fn create_route(&self, cluster_name: &str, name_hint: &str, route: &Route) -> Result<(), Error> {
        let _ = (cluster_name, name_hint, route);
        Err(Error::NotImplemented)
    }

    /// `DeleteRoute`.
    fn delete_route(&self, cluster_name: &str, route: &Route) -> Result<(), Error> {
        let _ = (cluster_name, route);
        Err(Error::NotImplemented)
    }
}

/// Upstream's `cloudprovider.DefaultLoadBalancerName`: `a` followed by the
/// Service's UID without dashes, cut to 32 characters.
pub fn default_load_balancer_name(service: &Service) -> String {
    let mut name: String = std::iter::once('a').chain(service.uid.chars().filter(|c| *c != '-')).collect();
    name.truncate(32);
    name
}
