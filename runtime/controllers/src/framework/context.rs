//! What every controller reconciles with.

use std::sync::Arc;

use kube::Client;

use super::config::Settings;
use super::metrics::Metrics;
use crate::nodes::cache::NodeCache;
use wasm_ccm_kube::events::Events;

/// A controller's view of the cluster and the cloud; clones share it.
#[derive(Clone)]
pub struct Context<C> {
    /// The API server.
    pub client: Client,
    /// The cloud provider.
    pub cloud: C,
    /// Every node, from the shared watch.
    pub nodes: NodeCache,
    /// Events, reported as this controller's upstream component.
    pub events: Events,
    /// The controllers' metrics.
    pub metrics: Metrics,
    /// How the controllers run.
    pub settings: Arc<Settings>,
}
