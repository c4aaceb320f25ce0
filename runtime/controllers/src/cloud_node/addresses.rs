//! A node's addresses from its cloud's, with the IPs kubelet was given
//! (`--node-ip`, see [`provided_ips`](crate::nodes::provided_ips)) enforced,
//! as upstream does.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::NodeAddress;

use crate::nodes::provided_ips::AddressError;

fn same_ip(address: &str, ip: IpAddr) -> bool {
    address.parse::<IpAddr>().is_ok_and(|parsed| parsed == ip)
}

/// The addresses the node should have: for every provided IP, the cloud's
/// addresses equal to it come first and replace the cloud's other addresses
/// of the same types; the cloud's remaining addresses follow; the host name
/// kubelet set is kept when the cloud gives none.
///
/// # Errors
/// When a provided IP is not among the cloud's addresses.
pub fn node_addresses(
    cloud: &[NodeAddress],
    provided: &[IpAddr],
    existing: &[NodeAddress],
) -> Result<Vec<NodeAddress>, AddressError> {
    let mut addresses = Vec::new();
    let mut enforced_types = Vec::new();
    for ip in provided {
        let matching: Vec<&NodeAddress> = cloud.iter().filter(|address| same_ip(&address.address, *ip)).collect();
        if matching.is_empty() {
            return Err(AddressError::NoMatch(*ip));
        }
        for address in matching {
            enforced_types.push(address.type_.clone());
            addresses.push(address.clone());
        }
    }
    addresses.extend(cloud.iter().filter(|address| !enforced_types.contains(&address.type_)).cloned());
    if !addresses.iter().any(|address| address.type_ == "Hostname") {
        addresses.extend(existing.iter().filter(|address| address.type_ == "Hostname").cloned());
    }
    let mut unique = Vec::with_capacity(addresses.len());
    for address in addresses {
        if !unique.contains(&address) {
            unique.push(address);
        }
    }
    Ok(unique)
}

/// Whether two address lists differ as sets: the same addresses in another
/// order are no change, as upstream's `nodeAddressesChangeDetected` sees it
/// (which compares one address per type).
pub fn changed(current: &[NodeAddress], desired: &[NodeAddress]) -> bool {
    fn sorted(addresses: &[NodeAddress]) -> Vec<(&str, &str)> {
        let mut pairs: Vec<(&str, &str)> =
            addresses.iter().map(|address| (address.type_.as_str(), address.address.as_str())).collect();
        pairs.sort_unstable();
        pairs
    }
    sorted(current) != sorted(desired)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(type_: &str, address: &str) -> NodeAddress {
        NodeAddress { type_: type_.into(), address: address.into() }
    }

    #[test]
    fn without_provided_ips_the_cloud_decides() {
        let cloud = [address("InternalIP", "10.0.0.1"), address("ExternalIP", "203.0.113.1")];
        assert_eq!(node_addresses(&cloud, &[], &[]).unwrap(), cloud);
    }

    #[test]
    fn a_provided_ip_replaces_the_others_of_its_type() {
        let cloud = [
            address("InternalIP", "10.0.0.1"),
            address("InternalIP", "10.0.0.2"),
            address("ExternalIP", "203.0.113.1"),
        ];
        let provided = ["10.0.0.2".parse().unwrap()];
        assert_eq!(
            node_addresses(&cloud, &provided, &[]).unwrap(),
            [address("InternalIP", "10.0.0.2"), address("ExternalIP", "203.0.113.1")]
        );
    }

    #[test]
    fn dual_stack_provided_ips_come_first() {
        let cloud = [
            address("InternalIP", "10.0.0.1"),
            address("InternalIP", "10.0.0.2"),
            address("InternalIP", "fd00::2"),
            address("InternalDNS", "node.internal"),
        ];
        let provided = ["10.0.0.2".parse().unwrap(), "fd00::2".parse().unwrap()];
        assert_eq!(
            node_addresses(&cloud, &provided, &[]).unwrap(),
            [
                address("InternalIP", "10.0.0.2"),
                address("InternalIP", "fd00::2"),
                address("InternalDNS", "node.internal")
            ]
        );
    }

    #[test]
    fn a_provided_ip_the_cloud_does_not_know_is_an_error() {
        let cloud = [address("InternalIP", "10.0.0.1")];
        let provided = ["10.0.0.9".parse().unwrap()];
        assert_eq!(node_addresses(&cloud, &provided, &[]), Err(AddressError::NoMatch(provided[0])));
    }

    #[test]
    fn the_order_of_addresses_is_no_change() {
        let a = [address("InternalIP", "10.0.0.1"), address("InternalIP", "fd00::1"), address("Hostname", "n")];
        let reordered = [address("Hostname", "n"), address("InternalIP", "fd00::1"), address("InternalIP", "10.0.0.1")];
        assert!(!changed(&a, &reordered));
        assert!(changed(&a, &a[..2]));
        assert!(changed(
            &a,
            &[address("InternalIP", "10.0.0.2"), address("InternalIP", "fd00::1"), address("Hostname", "n")]
        ));
    }

    #[test]
    fn keeps_kubelet_s_host_name_when_the_cloud_has_none() {
        let cloud = [address("InternalIP", "10.0.0.1")];
        let existing = [address("Hostname", "node-a"), address("InternalIP", "192.168.0.1")];
        assert_eq!(
            node_addresses(&cloud, &[], &existing).unwrap(),
            [address("InternalIP", "10.0.0.1"), address("Hostname", "node-a")]
        );
        let named = [address("InternalIP", "10.0.0.1"), address("Hostname", "cloud-name")];
        assert_eq!(node_addresses(&named, &[], &existing).unwrap(), named);
    }
}
