//! A provider that gets the contract wrong, for the conformance tests. It
//! runs and answers, but:
//!
//! - `ensure` makes a new load balancer with a new address every time (not
//!   idempotent), which `get` never finds;
//! - `get-name` is longer than 32 characters;
//! - `ensure-deleted` fails when the load balancer is already gone;
//! - provider IDs lack the `sloppy://` scheme, and every node exists,
//!   unknown ones included;
//! - `shutdown` asks for a retry without a delay.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

use std::hash::BuildHasher;
use std::time::Duration;

use wasm_ccm_sdk::types::{
    InstanceMetadata, LoadBalancerIngress, LoadBalancerStatus, Node, NodeAddress, NodeAddressType, Service,
};
use wasm_ccm_sdk::{Error, InstancesV2, LoadBalancer, NodeSet, Provider};

/// The sloppy provider.
pub struct Sloppy;

impl Provider for Sloppy {
    const NAME: &'static str = "sloppy";

    fn new(_config: &[u8], _cluster_name: &str) -> Result<Self, Error> {
        Ok(Sloppy)
    }

    fn load_balancer(&self) -> Option<&dyn LoadBalancer> {
        Some(self)
    }

    fn instances_v2(&self) -> Option<&dyn InstancesV2> {
        Some(self)
    }
}

impl LoadBalancer for Sloppy {
    fn get_load_balancer(&self, _cluster_name: &str, _service: &Service) -> Result<Option<LoadBalancerStatus>, Error> {
        Ok(None)
    }

    fn get_load_balancer_name(&self, cluster_name: &str, service: &Service) -> String {
        format!("{cluster_name}-{}-{}-{}", service.namespace, service.name, service.uid)
    }

    fn ensure_load_balancer(
        &self,
        _cluster_name: &str,
        _service: &Service,
        _nodes: &NodeSet<'_>,
    ) -> Result<LoadBalancerStatus, Error> {
        // A fresh random number on every call: a new load balancer each time.
        let random = std::collections::hash_map::RandomState::new().hash_one(0u8);
        let ip = format!("198.51.100.{}", random % 250 + 1);
        Ok(LoadBalancerStatus {
            ingress: vec![LoadBalancerIngress { ip: Some(ip), hostname: None, ip_mode: None, ports: Vec::new() }],
        })
    }

    fn update_load_balancer(&self, _cluster_name: &str, _service: &Service, _nodes: &NodeSet<'_>) -> Result<(), Error> {
        Ok(())
    }

    fn ensure_load_balancer_deleted(&self, _cluster_name: &str, service: &Service) -> Result<(), Error> {
        Err(Error::other(format_args!("load balancer of {}/{} not found", service.namespace, service.name)))
    }
}

impl InstancesV2 for Sloppy {
    fn instance_exists(&self, _node: &Node) -> Result<bool, Error> {
        Ok(true)
    }

    fn instance_shutdown(&self, _node: &Node) -> Result<bool, Error> {
        Err(Error::retry(Duration::ZERO, "busy"))
    }

    fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, Error> {
        Ok(InstanceMetadata {
            provider_id: format!("i-{}", node.name),
            instance_type: "sloppy.small".to_owned(),
            node_addresses: vec![NodeAddress { address_type: NodeAddressType::InternalIp, address: "10.0.0.1".into() }],
            zone: "zone-a".to_owned(),
            region: "region-1".to_owned(),
            additional_labels: Vec::new(),
        })
    }
}

wasm_ccm_sdk::export_provider!(Sloppy);
