//! What the operator sets for one provider's load balancers beyond the
//! classes it serves: where its answers must fall, how many entries one may
//! hold, and whether its load balancers are ensured again each resync
//! period.

use std::num::NonZeroUsize;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Service;

use super::ingress_ranges::IngressRanges;

/// The most entries one answer may hold whatever a provider's policy says:
/// a load balancer answers an address per IP family, or per zone on some
/// clouds.
pub const MAX_INGRESS: usize = 16;

/// One provider's load balancer policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadBalancerPolicy {
    /// Where its ingress answers must fall; empty: anywhere not refused
    /// for every provider.
    pub ingress_ranges: IngressRanges,
    /// Whether its load balancers are ensured again each resync period to
    /// repair drift; off for a cloud where ensuring an existing load
    /// balancer is not free of effects.
    pub resync: bool,
    /// The most entries one of its answers may hold, at most
    /// [`MAX_INGRESS`]; `None`: as many as the Service needs (see
    /// [`LoadBalancerPolicy::most_ingress`]).
    pub max_ingress: Option<NonZeroUsize>,
}

impl Default for LoadBalancerPolicy {
    fn default() -> Self {
        LoadBalancerPolicy { ingress_ranges: IngressRanges::default(), resync: true, max_ingress: None }
    }
}

impl LoadBalancerPolicy {
    /// The most entries an answer for `service` may hold: the policy's
    /// `max_ingress`, or an address for each of the Service's IP families
    /// for each of its ports.
    pub fn most_ingress(&self, service: &Service) -> usize {
        let needed = || {
            let spec = service.spec.as_ref();
            let families = spec.and_then(|spec| spec.ip_families.as_ref()).map_or(1, Vec::len).max(1);
            let ports = spec.and_then(|spec| spec.ports.as_ref()).map_or(1, Vec::len).max(1);
            families.saturating_mul(ports)
        };
        self.max_ingress.map_or_else(needed, NonZeroUsize::get).min(MAX_INGRESS)
    }
}

/// A `maxIngress` out of its range.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0} entries: an answer may hold from 1 to {MAX_INGRESS}")]
pub struct InvalidMaxIngress(pub usize);

/// `most` as a policy's `max_ingress`.
///
/// # Errors
/// When it is 0 or above [`MAX_INGRESS`].
pub fn max_ingress(most: usize) -> Result<NonZeroUsize, InvalidMaxIngress> {
    NonZeroUsize::new(most).filter(|most| most.get() <= MAX_INGRESS).ok_or(InvalidMaxIngress(most))
}

/// A lane's policy, replaced when the operator changes it; clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedPolicy(Arc<RwLock<LoadBalancerPolicy>>);

impl SharedPolicy {
    pub(crate) fn new(policy: LoadBalancerPolicy) -> Self {
        SharedPolicy(Arc::new(RwLock::new(policy)))
    }

    /// Replaces the policy.
    pub(crate) fn set(&self, policy: LoadBalancerPolicy) {
        *self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = policy;
    }

    /// Reads the policy.
    pub(crate) fn read<T>(&self, read: impl FnOnce(&LoadBalancerPolicy) -> T) -> T {
        read(&self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};

    use super::*;

    fn service(families: &[&str], ports: usize) -> Service {
        Service {
            spec: Some(ServiceSpec {
                ip_families: Some(families.iter().map(|family| (*family).to_owned()).collect()),
                ports: Some(
                    (0..ports).map(|port| ServicePort { port: 80 + port as i32, ..ServicePort::default() }).collect(),
                ),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        }
    }

    #[test]
    fn an_answer_holds_an_address_per_family_and_port_unless_the_policy_says_otherwise() {
        let needed = LoadBalancerPolicy::default();
        assert_eq!(needed.most_ingress(&Service::default()), 1);
        assert_eq!(needed.most_ingress(&service(&["IPv4"], 1)), 1);
        assert_eq!(needed.most_ingress(&service(&["IPv4", "IPv6"], 3)), 6);
        assert_eq!(needed.most_ingress(&service(&["IPv4", "IPv6"], 100)), MAX_INGRESS);
        let zonal = LoadBalancerPolicy { max_ingress: Some(max_ingress(3).unwrap()), ..LoadBalancerPolicy::default() };
        assert_eq!(zonal.most_ingress(&service(&["IPv4"], 1)), 3);
        for out_of_range in [0, MAX_INGRESS + 1] {
            let err = max_ingress(out_of_range).unwrap_err().to_string();
            assert_eq!(err, format!("{out_of_range} entries: an answer may hold from 1 to {MAX_INGRESS}"));
        }
    }
}
