//! The IPs kubelet was given (`--node-ip`, in the
//! `alpha.kubernetes.io/provided-node-ip` annotation), which the addresses a
//! node gets from its cloud must hold; and why the cloud's addresses cannot
//! be the node's ([`AddressError`]), a cause the one reconcile error carries.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Node;

/// The annotation kubelet sets to its `--node-ip`, one IP or `ipv4,ipv6`.
pub const PROVIDED_NODE_IP: &str = "alpha.kubernetes.io/provided-node-ip";

/// Why the cloud's addresses cannot be the node's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The annotation does not hold one IP or an IPv4 and an IPv6 address.
    #[error("invalid {PROVIDED_NODE_IP} annotation {0:?}")]
    BadAnnotation(String),
    /// A provided IP is not among the cloud's addresses.
    #[error("failed to get node address from cloud provider that matches ip: {0}")]
    NoMatch(IpAddr),
}

/// The IPs kubelet was given, in order; empty without the annotation.
///
/// # Errors
/// When the annotation is malformed.
pub fn provided_node_ips(node: &Node) -> Result<Vec<IpAddr>, AddressError> {
    let Some(value) = node.metadata.annotations.as_ref().and_then(|annotations| annotations.get(PROVIDED_NODE_IP))
    else {
        return Ok(Vec::new());
    };
    let bad = || AddressError::BadAnnotation(value.clone());
    let ips: Vec<IpAddr> = value.split(',').map(|ip| ip.trim().parse().map_err(|_| bad())).collect::<Result<_, _>>()?;
    match ips.as_slice() {
        [_] => Ok(ips),
        [first, second] if first.is_ipv4() != second.is_ipv4() => Ok(ips),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn annotated(value: &str) -> Node {
        Node {
            metadata: ObjectMeta {
                annotations: Some([(PROVIDED_NODE_IP.to_owned(), value.to_owned())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn parses_the_annotation() {
        assert_eq!(provided_node_ips(&Node::default()).unwrap(), Vec::<IpAddr>::new());
        assert_eq!(provided_node_ips(&annotated("10.0.0.1")).unwrap(), ["10.0.0.1".parse::<IpAddr>().unwrap()]);
        assert_eq!(provided_node_ips(&annotated("10.0.0.1, fd00::1")).unwrap().len(), 2);
        for bad in ["nope", "10.0.0.1,10.0.0.2", "10.0.0.1,fd00::1,10.0.0.3", ""] {
            assert!(matches!(provided_node_ips(&annotated(bad)), Err(AddressError::BadAnnotation(_))), "{bad}");
        }
    }
}
