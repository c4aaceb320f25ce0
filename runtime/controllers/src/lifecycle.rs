//! The cloud node lifecycle controller: every monitor period, a node that is
//! not Ready is deleted when its instance is gone and tainted
//! `node.cloudprovider.kubernetes.io/shutdown:NoSchedule` when it is shut
//! down; Ready nodes lose that taint.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, Resource};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use wasm_ccm_host::ProviderHandle;

use crate::cloud;
use crate::events::Events;
use crate::nodes::NodeCache;
use crate::taints::{SHUTDOWN, has_taint, is_ready, taints};

/// The node lifecycle controller.
pub struct NodeLifecycleController {
    api: Api<Node>,
    provider: ProviderHandle,
    nodes: NodeCache,
    events: Events,
    period: Duration,
    workers: usize,
}

impl NodeLifecycleController {
    /// A controller over the nodes of `nodes`.
    pub fn new(
        client: Client,
        provider: ProviderHandle,
        nodes: NodeCache,
        events: Events,
        settings: &crate::Settings,
    ) -> Self {
        NodeLifecycleController {
            api: Api::all(client),
            provider,
            nodes,
            events,
            period: settings.node_monitor_period,
            workers: settings.concurrent_node_syncs.max(1),
        }
    }

    /// Monitors the nodes every period until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        let mut ticks = tokio::time::interval(self.period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let nodes = self.nodes.all();
            futures::stream::iter(nodes)
                .for_each_concurrent(self.workers, |node| {
                    let span = tracing::info_span!("monitor", node = node.metadata.name.as_deref().unwrap_or_default());
                    self.monitor(node).instrument(span)
                })
                .await;
        }
    }

    async fn monitor(&self, node: Arc<Node>) {
        let name = node.metadata.name.clone().unwrap_or_default();
        if is_ready(&node) {
            if has_taint(&node, SHUTDOWN) {
                let remaining: Vec<Taint> =
                    taints(&node).iter().filter(|taint| taint.key != SHUTDOWN).cloned().collect();
                self.patch_taints(&node, remaining, "remove the shutdown taint").await;
            }
            return;
        }
        match cloud::instance_exists(&self.provider, &node).await {
            Err(err) => {
                tracing::warn!(node = %name, "cannot tell whether the node's instance exists: {err}");
                return;
            }
            Ok(false) => {
                tracing::info!(node = %name, "deleting the node: its instance no longer exists");
                self.events.normal(
                    node.object_ref(&()),
                    "DeletingNode",
                    format!("Deleting node {name} because it does not exist in the cloud provider"),
                );
                if let Err(err) = self.api.delete(&name, &DeleteParams::default()).await {
                    tracing::warn!(node = %name, "cannot delete the node: {err}");
                }
                return;
            }
            Ok(true) => {}
        }
        match cloud::instance_shutdown(&self.provider, &node).await {
            Ok(true) if !has_taint(&node, SHUTDOWN) => {
                let mut tainted = taints(&node).to_vec();
                tainted.push(Taint { key: SHUTDOWN.into(), effect: "NoSchedule".into(), ..Default::default() });
                self.patch_taints(&node, tainted, "add the shutdown taint").await;
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(node = %name, "cannot tell whether the node's instance is shut down: {err}"),
        }
    }

    async fn patch_taints(&self, node: &Node, taints: Vec<Taint>, action: &str) {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let patch =
            json!({"metadata": {"resourceVersion": node.metadata.resource_version}, "spec": {"taints": taints}});
        match self.api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await {
            Ok(_) => tracing::info!(node = name, "{action}"),
            // A conflict means the node changed: the next period sees it anew.
            Err(err) => tracing::warn!(node = name, "cannot {action}: {err}"),
        }
    }
}
