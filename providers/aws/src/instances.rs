//! Instances, both APIs, and zones, answered from EC2's DescribeInstances.

use wasm_ccm_sdk::types::{InstanceMetadata, InstanceState, Node, NodeAddress, NodeAddressType, Zone};
use wasm_ccm_sdk::{Error, Instances, InstancesV2, NodeSet, Zones};

use crate::Aws;
use crate::batch;
use crate::ec2::{ALIVE_STATES, Ec2, Instance};
use crate::provider_id;

impl Aws {
    /// The instance named by a provider ID, whatever its state.
    fn instance_by_provider_id(&self, provider_id: &str) -> Result<Instance, Error> {
        Ec2(&self.client).instance(provider_id::instance_id(provider_id)?)
    }

    /// The instance, not terminated, whose private DNS name is `node_name`.
    pub(crate) fn instance_by_node_name(&self, node_name: &str) -> Result<Instance, Error> {
        let mut found = Ec2(&self.client).instances_where("private-dns-name", &[node_name], &ALIVE_STATES)?;
        match found.len() {
            0 => Err(Error::InstanceNotFound),
            1 => Ok(found.remove(0)),
            count => Err(Error::other(format_args!("{count} instances have the private DNS name {node_name}"))),
        }
    }

    /// The instance behind a Node: by provider ID once it has one, else by
    /// its name.
    fn instance_of(&self, node: &Node) -> Result<Instance, Error> {
        match node.provider_id.as_deref() {
            Some(provider_id) => self.instance_by_provider_id(provider_id),
            None => self.instance_by_node_name(&node.name),
        }
    }

    fn zone_of(&self, instance: &Instance) -> Zone {
        Zone { failure_domain: instance.placement.availability_zone.clone(), region: self.client.region().to_owned() }
    }

    /// What InstancesV2 says of `instance`.
    fn metadata(&self, instance: &Instance) -> InstanceMetadata {
        let zone = self.zone_of(instance);
        InstanceMetadata {
            provider_id: provider_id::format(&zone.failure_domain, &instance.instance_id),
            instance_type: instance.instance_type.clone(),
            node_addresses: addresses(instance),
            zone: zone.failure_domain,
            region: zone.region,
            additional_labels: Vec::new(),
        }
    }
}

/// Whether an instance found, or not, still exists for Kubernetes.
fn exists(instance: Result<Instance, Error>) -> Result<bool, Error> {
    match instance {
        Ok(instance) => Ok(!instance.is("terminated")),
        Err(Error::InstanceNotFound) => Ok(false),
        Err(err) => Err(err),
    }
}

fn is_shut_down(instance: &Instance) -> bool {
    instance.is("stopped") || instance.is("stopping")
}

/// A Node's addresses in upstream's order: the private IPs of the attached
/// interfaces (primary interface first, primary address first), the public
/// IP, the private DNS name as InternalDNS and Hostname, the public DNS name.
fn addresses(instance: &Instance) -> Vec<NodeAddress> {
    let address = |address_type, address: &str| NodeAddress { address_type, address: address.to_owned() };
    let mut addresses = Vec::new();
    let mut interfaces: Vec<_> =
        instance.network_interface_set.items.iter().filter(|interface| interface.status == "in-use").collect();
    interfaces
        .sort_by_key(|interface| interface.attachment.as_ref().map_or(u32::MAX, |attachment| attachment.device_index));
    for interface in &interfaces {
        let mut private_ips: Vec<_> = interface.private_ip_addresses_set.items.iter().collect();
        private_ips.sort_by_key(|ip| !ip.primary);
        for ip in private_ips.into_iter().filter(|ip| !ip.private_ip_address.is_empty()) {
            addresses.push(address(NodeAddressType::InternalIp, &ip.private_ip_address));
        }
    }
    if interfaces.is_empty()
        && let Some(ip) = instance.private_ip_address.as_deref().filter(|ip| !ip.is_empty())
    {
        addresses.push(address(NodeAddressType::InternalIp, ip));
    }
    if let Some(ip) = instance.ip_address.as_deref().filter(|ip| !ip.is_empty()) {
        addresses.push(address(NodeAddressType::ExternalIp, ip));
    }
    if let Some(name) = instance.node_name() {
        addresses.push(address(NodeAddressType::InternalDns, name));
        addresses.push(address(NodeAddressType::Hostname, name));
    }
    if let Some(name) = instance.dns_name.as_deref().filter(|name| !name.is_empty()) {
        addresses.push(address(NodeAddressType::ExternalDns, name));
    }
    addresses
}

impl InstancesV2 for Aws {
    fn instance_exists(&self, node: &Node) -> Result<bool, Error> {
        exists(self.instance_of(node))
    }

    fn instance_shutdown(&self, node: &Node) -> Result<bool, Error> {
        Ok(is_shut_down(&self.instance_of(node)?))
    }

    fn max_batch(&self) -> u32 {
        batch::MAX_BATCH
    }

    fn instance_states(&self, nodes: &NodeSet<'_>) -> Result<Vec<Result<InstanceState, Error>>, Error> {
        let found = self.instances_of_set(nodes)?;
        Ok(found
            .into_iter()
            .map(|found| {
                let instance = found?;
                let exists = exists(instance.clone().ok_or(Error::InstanceNotFound))?;
                Ok(InstanceState { exists, shut_down: exists && instance.as_ref().is_some_and(is_shut_down) })
            })
            .collect())
    }

    fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, Error> {
        Ok(self.metadata(&self.instance_of(node)?))
    }

    fn batch_metadata(&self, nodes: &NodeSet<'_>) -> Result<Vec<Result<InstanceMetadata, Error>>, Error> {
        let found = self.instances_of_set(nodes)?;
        Ok(found.into_iter().map(|found| Ok(self.metadata(&found?.ok_or(Error::InstanceNotFound)?))).collect())
    }
}

impl Instances for Aws {
    fn node_addresses(&self, node_name: &str) -> Result<Vec<NodeAddress>, Error> {
        Ok(addresses(&self.instance_by_node_name(node_name)?))
    }

    fn node_addresses_by_provider_id(&self, provider_id: &str) -> Result<Vec<NodeAddress>, Error> {
        Ok(addresses(&self.instance_by_provider_id(provider_id)?))
    }

    /// `/<zone>/<instance-id>`, so that `aws://` and it make the provider ID.
    fn instance_id(&self, node_name: &str) -> Result<String, Error> {
        let instance = self.instance_by_node_name(node_name)?;
        Ok(format!("/{}/{}", instance.placement.availability_zone, instance.instance_id))
    }

    fn instance_type(&self, node_name: &str) -> Result<String, Error> {
        Ok(self.instance_by_node_name(node_name)?.instance_type)
    }

    fn instance_type_by_provider_id(&self, provider_id: &str) -> Result<String, Error> {
        Ok(self.instance_by_provider_id(provider_id)?.instance_type)
    }

    /// The host name, as is: without the instance metadata service, which
    /// providers cannot reach, there is nothing better to answer.
    fn current_node_name(&self, hostname: &str) -> Result<String, Error> {
        Ok(hostname.to_owned())
    }

    fn instance_exists_by_provider_id(&self, provider_id: &str) -> Result<bool, Error> {
        exists(self.instance_by_provider_id(provider_id))
    }

    fn instance_shutdown_by_provider_id(&self, provider_id: &str) -> Result<bool, Error> {
        Ok(is_shut_down(&self.instance_by_provider_id(provider_id)?))
    }
}

impl Zones for Aws {
    fn get_zone_by_provider_id(&self, provider_id: &str) -> Result<Zone, Error> {
        Ok(self.zone_of(&self.instance_by_provider_id(provider_id)?))
    }

    fn get_zone_by_node_name(&self, node_name: &str) -> Result<Zone, Error> {
        Ok(self.zone_of(&self.instance_by_node_name(node_name)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ec2::{Attachment, InstanceState, NetworkInterface, Placement, PrivateIp};
    use crate::xml::Items;

    fn instance(state: &str) -> Instance {
        Instance {
            instance_id: "i-1".into(),
            instance_type: "m5.large".into(),
            instance_state: InstanceState { name: state.into() },
            placement: Placement { availability_zone: "eu-west-1a".into() },
            private_dns_name: Some("ip-10-0-1-4.eu-west-1.compute.internal".into()),
            dns_name: Some("ec2-54-1-2-3.eu-west-1.compute.amazonaws.com".into()),
            private_ip_address: Some("10.0.1.4".into()),
            ip_address: Some("54.1.2.3".into()),
            network_interface_set: Items::default(),
        }
    }

    fn interface(device_index: u32, status: &str, ips: &[(&str, bool)]) -> NetworkInterface {
        NetworkInterface {
            status: status.into(),
            attachment: Some(Attachment { device_index }),
            private_ip_addresses_set: Items {
                items: ips
                    .iter()
                    .map(|(ip, primary)| PrivateIp { private_ip_address: (*ip).into(), primary: *primary })
                    .collect(),
            },
        }
    }

    fn pairs(addresses: &[NodeAddress]) -> Vec<(NodeAddressType, &str)> {
        addresses.iter().map(|address| (address.address_type, address.address.as_str())).collect()
    }

    #[test]
    fn addresses_in_upstream_order() {
        assert_eq!(
            pairs(&addresses(&instance("running"))),
            [
                (NodeAddressType::InternalIp, "10.0.1.4"),
                (NodeAddressType::ExternalIp, "54.1.2.3"),
                (NodeAddressType::InternalDns, "ip-10-0-1-4.eu-west-1.compute.internal"),
                (NodeAddressType::Hostname, "ip-10-0-1-4.eu-west-1.compute.internal"),
                (NodeAddressType::ExternalDns, "ec2-54-1-2-3.eu-west-1.compute.amazonaws.com"),
            ]
        );
    }

    #[test]
    fn interface_addresses_primary_first() {
        let mut multi = instance("running");
        multi.ip_address = None;
        multi.dns_name = Some(String::new());
        multi.network_interface_set.items = vec![
            interface(1, "in-use", &[("10.0.2.9", true)]),
            interface(2, "detaching", &[("10.0.3.9", true)]),
            interface(0, "in-use", &[("10.0.1.5", false), ("10.0.1.4", true)]),
        ];
        let found = addresses(&multi);
        let ips: Vec<_> = pairs(&found)
            .into_iter()
            .filter(|(address_type, _)| *address_type == NodeAddressType::InternalIp)
            .map(|(_, ip)| ip)
            .collect();
        assert_eq!(ips, ["10.0.1.4", "10.0.1.5", "10.0.2.9"]);
        assert!(!pairs(&found).iter().any(|(address_type, _)| *address_type == NodeAddressType::ExternalDns));
    }

    #[test]
    fn states() {
        assert!(exists(Ok(instance("stopped"))).unwrap());
        assert!(!exists(Ok(instance("terminated"))).unwrap());
        assert!(!exists(Err(Error::InstanceNotFound)).unwrap());
        assert!(exists(Err(Error::other("boom"))).is_err());
        assert!(is_shut_down(&instance("stopped")) && is_shut_down(&instance("stopping")));
        assert!(!is_shut_down(&instance("running")) && !is_shut_down(&instance("pending")));
    }
}
