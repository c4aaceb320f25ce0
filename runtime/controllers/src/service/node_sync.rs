//! Node sync: when the nodes that back load balancers change, update every
//! load balancer whose node set differs, as upstream's `nodeSyncLoop`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wasm_ccm_host::ProviderError;

use super::rules::wants_load_balancer;
use super::{ServiceKey, Shared};
use crate::nodes::NodeSet;

/// Node changes arriving within this window are synced together.
const COALESCE: Duration = Duration::from_millis(100);
/// Node names listed in an event.
const NAMES_IN_EVENTS: usize = 10;

impl Shared {
    /// Syncs nodes after every change until `stop`.
    pub(super) async fn sync_nodes_on_change(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.node_changes.notified() => {}
            }
            tokio::time::sleep(COALESCE).await;
            self.sync_nodes().await;
        }
    }

    /// Updates the load balancers whose last node set is not the current one.
    async fn sync_nodes(&self) {
        let nodes = self.nodes.eligible();
        let stale: Vec<ServiceKey> = self
            .lock_states()
            .iter()
            .filter(|(_, state)| state.nodes.as_deref().is_some_and(|last| *last != nodes.fingerprint))
            .map(|(key, _)| key.clone())
            .collect();
        if stale.is_empty() {
            return;
        }
        let started = Instant::now();
        let failures = AtomicUsize::new(0);
        futures::stream::iter(stale)
            .for_each_concurrent(self.workers, |key| {
                let (nodes, failures) = (nodes.clone(), &failures);
                let span = tracing::info_span!("update-hosts", service = %key);
                async move {
                    if !self.update_hosts(&key, &nodes).await {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                .instrument(span)
            })
            .await;
        let failed = failures.load(Ordering::Relaxed);
        self.metrics.node_sync(started.elapsed().as_secs_f64(), failed > 0);
        tracing::info!(nodes = nodes.nodes.len(), failed, "synced load balancer nodes in {:?}", started.elapsed());
    }

    /// Updates one load balancer's nodes; `false` when it failed, in which
    /// case the Service is queued for a full sync.
    async fn update_hosts(&self, key: &ServiceKey, nodes: &Arc<NodeSet>) -> bool {
        let _lock = self.locks.lock(key).await;
        let Some(service) = self.services.get(key) else {
            return true;
        };
        if !wants_load_balancer(&service) || service.metadata.deletion_timestamp.is_some() {
            return true;
        }
        let started = Instant::now();
        let result = match self.provider.update_load_balancer(&service, &nodes.nodes).await {
            Ok(()) | Err(ProviderError::ImplementedElsewhere) => Ok(()),
            // It is only an error if the load balancer still exists.
            Err(err) => match self.provider.get_load_balancer(&service).await {
                Ok(None) => Ok(()),
                _ => Err(err),
            },
        };
        let reference = service.object_ref(&());
        match result {
            Ok(()) => {
                self.metrics.host_update(started.elapsed().as_secs_f64());
                self.metrics.load_balancer_synced();
                self.state(key).nodes = Some(Arc::new(nodes.fingerprint.clone()));
                self.events.normal(reference, "UpdatedLoadBalancer", "Updated load balancer with new hosts");
                true
            }
            Err(err) => {
                self.events.warning(
                    reference,
                    "UpdateLoadBalancerFailed",
                    format!(
                        "Error updating load balancer with new hosts {}, error: {err}",
                        nodes.names(NAMES_IN_EVENTS)
                    ),
                );
                self.queue.add(key.clone());
                false
            }
        }
    }
}
