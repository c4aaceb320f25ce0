//! Values exchanged with providers that have no Kubernetes API type.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeAddress;
use serde::{Deserialize, Serialize};

use crate::Part;

/// The parts of `cloudprovider.Interface` a provider supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Parts {
    /// `LoadBalancer()`.
    pub load_balancer: bool,
    /// `Instances()`.
    pub instances: bool,
    /// `InstancesV2()`.
    pub instances_v2: bool,
    /// `Zones()`.
    pub zones: bool,
    /// `Clusters()`.
    pub clusters: bool,
    /// `Routes()`.
    pub routes: bool,
}

impl Parts {
    /// Every part.
    pub const ALL: Parts =
        Parts { load_balancer: true, instances: true, instances_v2: true, zones: true, clusters: true, routes: true };

    /// Whether `part` is supported.
    pub const fn supports(&self, part: Part) -> bool {
        match part {
            Part::LoadBalancer => self.load_balancer,
            Part::Instances => self.instances,
            Part::InstancesV2 => self.instances_v2,
            Part::Zones => self.zones,
            Part::Clusters => self.clusters,
            Part::Routes => self.routes,
        }
    }
}

/// What a provider says about itself once initialised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    /// `ProviderName()`.
    pub name: String,
    /// `HasClusterID()`.
    pub has_cluster_id: bool,
    /// The parts it supports.
    pub parts: Parts,
    /// The most nodes the batch form of the lifecycle questions
    /// ([`Cloud::instance_states`](crate::Cloud::instance_states)) takes at
    /// once; 0 when the provider answers one node at a time.
    pub max_batch: u32,
}

/// What the node lifecycle needs to know of a node's instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceState {
    /// `InstanceExists`.
    pub exists: bool,
    /// `InstanceShutdown`; meaningful only when it exists.
    pub shut_down: bool,
}

/// `cloudprovider.InstanceMetadata`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceMetadata {
    /// The Node's `spec.providerID`.
    pub provider_id: String,
    /// The instance type, for the `node.kubernetes.io/instance-type` label.
    pub instance_type: String,
    /// The Node's addresses.
    pub node_addresses: Vec<NodeAddress>,
    /// The zone, for `topology.kubernetes.io/zone`.
    pub zone: String,
    /// The region, for `topology.kubernetes.io/region`.
    pub region: String,
    /// Further labels for the Node.
    pub additional_labels: BTreeMap<String, String>,
}

/// `cloudprovider.Zone`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Zone {
    /// The zone.
    pub failure_domain: String,
    /// The region.
    pub region: String,
}

/// `cloudprovider.Route`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Route {
    /// The cloud's name for the route.
    pub name: String,
    /// The Node it sends traffic to.
    pub target_node: String,
    /// Whether `target_node_addresses` is meaningful.
    pub enable_node_addresses: bool,
    /// The target Node's addresses.
    pub target_node_addresses: Vec<NodeAddress>,
    /// The pod CIDR it routes.
    pub destination_cidr: String,
    /// The route's target is gone.
    pub blackhole: bool,
}
