//! What the operator sets for one provider's load balancers beyond the
//! classes it serves: where its answers must fall, and whether its load
//! balancers are ensured again each resync period.

use std::sync::{Arc, RwLock};

use super::ingress::IngressRanges;

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
}

impl Default for LoadBalancerPolicy {
    fn default() -> Self {
        LoadBalancerPolicy { ingress_ranges: IngressRanges::default(), resync: true }
    }
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
