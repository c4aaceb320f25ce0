//! The providers a controller manager calls, each with what it serves and
//! the operator's policy for its load balancers.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::policy::LoadBalancerPolicy;
use super::serves::Serves;

/// One provider the controllers call, and what it serves.
#[derive(Debug, Clone)]
pub struct Member<C> {
    /// The provider.
    pub cloud: C,
    /// What it serves.
    pub serves: Serves,
    /// What the operator sets for its load balancers; a change reaches
    /// its running lane.
    pub load_balancers: LoadBalancerPolicy,
}

/// The providers by the names their metrics, events and load balancer
/// annotations carry: who serves what. One writer publishes them (in the
/// controller manager, the fleet of `wasm-ccm-fleet`); the controllers
/// follow them, and the service controller's `Roster` is its index of
/// what each serves. A provider keeps its cloud for as long as its name
/// is in the set: a new cloud under a name already running is not picked
/// up, so a provider is re-configured inside its cloud (see
/// the host's `ProviderHandle::swap`).
pub type Members<C> = BTreeMap<Arc<str>, Member<C>>;
