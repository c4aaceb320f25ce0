//! The cloud node controller: initialises nodes that carry the
//! `node.cloudprovider.kubernetes.io/uninitialized` taint from the cloud
//! (provider ID, addresses, type, zone and region labels), then removes the
//! taint; keeps the GA topology labels in step with the beta ones; and
//! refreshes the addresses of initialised nodes at start and then
//! periodically.

mod addresses;
mod initialize;
pub mod labels;
mod refresh;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::Cloud;

use self::initialize::InitializeNode;
use self::refresh::RefreshNodes;
use crate::framework::caches::Watcher;
use crate::framework::config::ControllerName;
use crate::framework::context::Context;
use crate::framework::driver::Controller;
use crate::framework::runner::{Runner, Stopped, stopping_all_on_failure};
use crate::framework::workqueue::WorkQueue;
use wasm_ccm_kube::informer::Change;

/// The cloud node controller: node initialisation and the periodic address
/// refresh.
pub struct CloudNodeController<C: Cloud> {
    triggers: Arc<NodeTriggers>,
    initialize: Runner<InitializeNode<C>>,
    refresh: RefreshNodes<C>,
    refresh_period: Duration,
}

/// What queues nodes for initialisation.
struct NodeTriggers {
    queue: WorkQueue<String>,
}

impl Watcher for NodeTriggers {
    /// Queues every node added or changed, as upstream: a tainted one is
    /// initialised, another has its labels checked.
    fn node(&self, change: &Change<Node>) {
        if let Change::Applied(node) = change
            && let Some(name) = &node.metadata.name
        {
            self.queue.add(name.clone());
        }
    }
}

impl<C: Cloud> CloudNodeController<C> {
    /// A controller over the nodes of `ctx`; must be made inside a tokio
    /// runtime.
    pub fn new(ctx: Context<C>) -> Self {
        let settings = &ctx.settings;
        let initialize =
            Runner::new(InitializeNode::new(ctx.clone()), settings.concurrent_node_syncs, ctx.metrics.clone());
        let refresh = RefreshNodes::new(ctx.clone());
        CloudNodeController {
            triggers: Arc::new(NodeTriggers { queue: initialize.queue() }),
            initialize,
            refresh,
            refresh_period: ctx.settings.node_status_update_frequency,
        }
    }
}

impl<C: Cloud> Controller for CloudNodeController<C> {
    const NAME: ControllerName = ControllerName::CloudNode;

    fn watcher(&self) -> Option<Arc<dyn Watcher>> {
        Some(self.triggers.clone())
    }

    /// Runs initialisation and the address refresh.
    async fn run(self, stop: CancellationToken) -> Result<(), Stopped> {
        let working = stop.child_token();
        let (initialize, ()) = tokio::join!(
            stopping_all_on_failure(self.initialize.run(working.clone()), &working),
            self.refresh.run(self.refresh_period, working.clone()),
        );
        initialize
    }
}
