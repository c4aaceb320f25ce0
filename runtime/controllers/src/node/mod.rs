//! The cloud node controller: initialises nodes that carry the
//! `node.cloudprovider.kubernetes.io/uninitialized` taint from the cloud
//! (provider ID, addresses, type, zone and region labels), then removes the
//! taint; and refreshes the addresses of initialised nodes periodically.

pub mod addresses;
pub mod labels;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, NodeAddress};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wasm_ccm_host::{ProviderError, ProviderHandle};

use self::addresses::{AddressError, node_addresses, provided_node_ips};
use self::labels::cloud_labels;
use crate::cloud;
use crate::events::Events;
use crate::informer::Change;
use crate::metrics::Metrics;
use crate::nodes::NodeCache;
use crate::reachability::is_transport_error;
use crate::taints::{UNINITIALIZED, has_taint, taints};
use crate::workqueue::{Backoff, WorkQueue};

/// How failing nodes are retried.
const BACKOFF: Backoff = Backoff { base: Duration::from_secs(1), max: Duration::from_secs(300) };

/// Why a node could not be initialised or refreshed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The provider failed.
    #[error("failed to get instance metadata: {0}")]
    Provider(#[from] ProviderError),
    /// The cloud's addresses do not fit the node.
    #[error(transparent)]
    Addresses(#[from] AddressError),
    /// The API server refused a write.
    #[error("failed to update the node: {0}")]
    Api(#[from] kube::Error),
}

/// The cloud node controller; clones share it.
#[derive(Clone)]
pub struct CloudNodeController {
    shared: Arc<Shared>,
}

struct Shared {
    api: Api<Node>,
    provider: ProviderHandle,
    nodes: NodeCache,
    events: Events,
    metrics: Metrics,
    queue: WorkQueue<String>,
    workers: usize,
    refresh_period: Duration,
}

impl CloudNodeController {
    /// A controller over the nodes of `nodes`.
    pub fn new(
        client: Client,
        provider: ProviderHandle,
        nodes: NodeCache,
        events: Events,
        metrics: Metrics,
        settings: &crate::Settings,
    ) -> Self {
        let queue = WorkQueue::new(BACKOFF, metrics.queue("cloud-node"));
        CloudNodeController {
            shared: Arc::new(Shared {
                api: Api::all(client),
                provider,
                nodes,
                events,
                metrics,
                queue,
                workers: settings.concurrent_node_syncs.max(1),
                refresh_period: settings.node_status_update_frequency,
            }),
        }
    }

    /// Queues nodes that carry the uninitialized taint.
    pub fn observe(&self, change: &Change<Node>) {
        if let Change::Applied(node) = change
            && has_taint(node, UNINITIALIZED)
            && let Some(name) = &node.metadata.name
        {
            self.shared.queue.add(name.clone());
        }
    }

    /// Runs the workers and the address refresh until `stop`; then lets
    /// syncs in flight finish.
    pub async fn run(self, stop: CancellationToken) {
        let shared = &self.shared;
        let workers: Vec<_> = (0..shared.workers)
            .map(|worker| tokio::spawn(shared.clone().work().instrument(tracing::info_span!("node-worker", worker))))
            .collect();
        tokio::select! {
            () = stop.cancelled() => {}
            () = shared.clone().refresh_periodically() => {}
        }
        shared.queue.shut_down();
        for worker in workers {
            let _ = worker.await;
        }
    }
}

impl Shared {
    async fn work(self: Arc<Self>) {
        while let Some(name) = self.queue.next().await {
            match self.initialize(&name).instrument(tracing::info_span!("initialize", node = %name)).await {
                Ok(()) => self.queue.forget(&name),
                Err(NodeError::Api(kube::Error::Api(status))) if status.code == 409 => self.queue.add(name.clone()),
                Err(err) => {
                    let delay = self.queue.add_rate_limited(name.clone());
                    if matches!(&err, NodeError::Api(err) if is_transport_error(err)) {
                        tracing::debug!(node = %name, "cannot initialize the node, retrying in {delay:?}: {err}");
                    } else {
                        tracing::warn!(node = %name, "cannot initialize the node, retrying in {delay:?}: {err}");
                    }
                }
            }
            self.queue.done(&name);
        }
    }

    /// Initialises one node, as upstream's `syncNode`.
    async fn initialize(&self, name: &str) -> Result<(), NodeError> {
        let Some(node) = self.nodes.store().get(&kube::runtime::reflector::ObjectRef::new(name)) else {
            return Ok(());
        };
        if !has_taint(&node, UNINITIALIZED) {
            return Ok(());
        }
        if let Some(age) = age(&node) {
            self.metrics.initial_node_sync(age);
        }
        let metadata = cloud::instance_metadata(&self.provider, &node).await?;
        let existing = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        let addresses = node_addresses(&metadata.node_addresses, &provided_node_ips(&node)?, &existing)?;
        let remaining: Vec<_> = taints(&node).iter().filter(|taint| taint.key != UNINITIALIZED).cloned().collect();
        let mut spec = json!({"taints": remaining});
        let has_provider_id =
            node.spec.as_ref().and_then(|spec| spec.provider_id.as_ref()).is_some_and(|id| !id.is_empty());
        if !has_provider_id && !metadata.provider_id.is_empty() {
            spec["providerID"] = json!(metadata.provider_id);
        }
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version, "labels": cloud_labels(&metadata)},
            "spec": spec,
        });
        // Addresses first, so that a node without the taint is complete.
        self.patch_addresses(name, &addresses).await?;
        self.api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await?;
        if let Some(age) = age(&node) {
            self.metrics.taint_removed(age);
        }
        tracing::info!(node = name, provider_id = %metadata.provider_id, "initialized the node from the cloud");
        self.events.normal(node.object_ref(&()), "Synced", "Node synced successfully");
        Ok(())
    }

    async fn patch_addresses(&self, name: &str, addresses: &[NodeAddress]) -> Result<(), kube::Error> {
        let patch = json!({"status": {"addresses": addresses}});
        self.api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch)).await.map(drop)
    }

    async fn refresh_periodically(self: Arc<Self>) {
        loop {
            tokio::time::sleep(self.refresh_period).await;
            let nodes: Vec<Arc<Node>> =
                self.nodes.all().into_iter().filter(|node| !has_taint(node, UNINITIALIZED)).collect();
            let this = &*self;
            futures::stream::iter(nodes)
                .for_each_concurrent(self.workers, |node| {
                    let span = tracing::info_span!("refresh", node = node.metadata.name.as_deref().unwrap_or_default());
                    async move {
                        if let Err(err) = this.refresh(&node).await {
                            tracing::warn!("cannot refresh the node's addresses: {err}");
                        }
                    }
                    .instrument(span)
                })
                .await;
        }
    }

    /// Brings an initialised node's addresses in line with the cloud's.
    async fn refresh(&self, node: &Node) -> Result<(), NodeError> {
        let metadata = cloud::instance_metadata(&self.provider, node).await?;
        let existing = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        let addresses = node_addresses(&metadata.node_addresses, &provided_node_ips(node)?, &existing)?;
        if addresses != existing {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            tracing::info!(node = name, "updating the node's addresses from the cloud");
            self.patch_addresses(name, &addresses).await?;
        }
        Ok(())
    }
}

/// Seconds since the node was created.
fn age(node: &Node) -> Option<f64> {
    let created = node.metadata.creation_timestamp.as_ref()?.0;
    let elapsed = k8s_openapi::jiff::Timestamp::now().duration_since(created);
    Some(elapsed.as_secs_f64().max(0.0))
}
