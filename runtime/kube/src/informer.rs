//! One watch per kind of object, shared by every controller: a cache they
//! all read, and a callback on every change.

use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, NodeStatus, Service};
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::is_transport_error;

/// A change the cache has seen.
#[derive(Debug)]
pub enum Change<K> {
    /// An object was created or modified, or listed after a restart of the
    /// watch.
    Applied(Arc<K>),
    /// An object was deleted.
    Deleted(Arc<K>),
    /// The watch (re)started and the cache now holds the complete set:
    /// objects deleted while it was disconnected are no longer in it.
    Resynced,
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Change::Applied(object) => Change::Applied(object.clone()),
            Change::Deleted(object) => Change::Deleted(object.clone()),
            Change::Resynced => Change::Resynced,
        }
    }
}

/// Watches `api` until `stop`, keeping the returned store up to date and
/// calling `on_change` with every change after the store has applied it.
/// The watch restarts with backoff after errors, a dropped stream or an
/// expired resource version. A run of failures is logged once, when it
/// starts (not at all when the API server is unreachable, which the client
/// logs), and once when the watch works again.
pub fn informer<K, F>(api: Api<K>, stop: CancellationToken, mut on_change: F) -> (Store<K>, impl Future<Output = ()>)
where
    K: Resource<DynamicType = ()> + Trim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    F: FnMut(Change<K>) + Send + 'static,
{
    let (store, writer) = reflector::store();
    // The controllers never read managedFields: dropping them before the
    // cache keeps a copy of each object halves its size.
    let watch = watcher(api, watch_config()).default_backoff().modify(Trim::trim);
    let stream = reflector::reflector(writer, watch);
    let run = async move {
        let mut stream = std::pin::pin!(stream);
        let mut failing = false;
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                event = stream.next() => event,
            };
            let kind = K::kind(&());
            match &event {
                Some(Ok(_)) if failing => {
                    failing = false;
                    tracing::info!(%kind, "the watch works again");
                }
                Some(Err(err)) if !failing && !is_transport(err) => {
                    failing = true;
                    tracing::warn!(%kind, "the watch failed, retrying until it works: {err}");
                }
                Some(Err(err)) => {
                    failing = true;
                    tracing::debug!(%kind, "the watch failed, retrying: {err}");
                }
                _ => {}
            }
            match event {
                Some(Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object))) => {
                    on_change(Change::Applied(Arc::new(object)));
                }
                Some(Ok(watcher::Event::Delete(object))) => on_change(Change::Deleted(Arc::new(object))),
                Some(Ok(watcher::Event::InitDone)) => on_change(Change::Resynced),
                Some(Ok(watcher::Event::Init) | Err(_)) => {}
                None => return,
            }
        }
    };
    (store, run)
}

/// How the caches list and watch: kube-rs's default, lists read from etcd
/// in pages of 500. Upstream's informers list from the API server's watch
/// cache (resourceVersion 0), at less than half the API server's CPU; but
/// the watch cache answers a list whole, and a list parsed whole grew the
/// peak memory of a cache of 5000 nodes, 50 images each, 3.6 times as much
/// as pages did (`--bench cache_lists`).
pub fn watch_config() -> watcher::Config {
    watcher::Config::default()
}

/// What the caches keep of an object: fields no controller reads and no
/// provider is given are dropped as it arrives, so that memory follows what
/// the controllers use rather than what kubelets report (a node's image
/// list alone is often most of it).
pub trait Trim {
    /// Drops what the caches need not keep.
    fn trim(&mut self);
}

impl Trim for Node {
    fn trim(&mut self) {
        self.managed_fields_mut().clear();
        if let Some(status) = self.status.as_mut() {
            // Addresses and conditions are all the controllers read.
            let NodeStatus { addresses, conditions, .. } = std::mem::take(status);
            *status = NodeStatus { addresses, conditions, ..NodeStatus::default() };
        }
    }
}

impl Trim for Service {
    fn trim(&mut self) {
        self.managed_fields_mut().clear();
    }
}

impl Trim for Namespace {
    /// Its labels are all the controllers read.
    fn trim(&mut self) {
        self.managed_fields_mut().clear();
        self.annotations_mut().clear();
    }
}

/// Whether the watch failed because the API server could not be reached.
fn is_transport(err: &watcher::Error) -> bool {
    match err {
        watcher::Error::InitialListFailed(err)
        | watcher::Error::WatchStartFailed(err)
        | watcher::Error::WatchFailed(err) => is_transport_error(err),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerImage, NodeAddress, NodeCondition, NodeSystemInfo};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use kube::api::PostParams;
    use wasm_ccm_apiserver::ApiServer;

    use super::*;
    use wasm_ccm_test_support::NodeFixture;

    #[tokio::test]
    async fn a_cache_fills_in_pages_so_that_no_list_is_parsed_whole() {
        let server = ApiServer::start().await.unwrap();
        let nodes = Api::<Node>::all(server.client().await);
        // One more than a page holds.
        for index in 0..501 {
            nodes.create(&PostParams::default(), &Node::test(&format!("node-{index}"))).await.unwrap();
        }
        let stop = CancellationToken::new();
        let (store, run) = informer(nodes, stop.clone(), |_| {});
        let watching = tokio::spawn(run);
        store.wait_until_ready().await.unwrap();
        assert_eq!(store.state().len(), 501);
        assert_eq!(server.requests().get("list", "nodes"), 2);
        stop.cancel();
        watching.await.unwrap();
    }

    #[test]
    fn a_cached_node_keeps_what_the_controllers_read() {
        let mut node = Node::test("a");
        node.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        let status = node.status.get_or_insert_with(NodeStatus::default);
        status.addresses = Some(vec![NodeAddress { type_: "InternalIP".into(), address: "10.0.0.1".into() }]);
        status.conditions =
            Some(vec![NodeCondition { type_: "Ready".into(), status: "True".into(), ..Default::default() }]);
        status.images =
            Some(vec![ContainerImage { names: Some(vec!["registry/image:1".into()]), size_bytes: Some(1) }]);
        status.node_info = Some(NodeSystemInfo::default());
        let (labels, spec) = (node.metadata.labels.clone(), node.spec.clone());
        let (addresses, conditions) = (status.addresses.clone(), status.conditions.clone());

        node.trim();
        assert_eq!(node.metadata.managed_fields, Some(vec![]));
        assert_eq!((node.metadata.labels.clone(), node.spec.clone()), (labels, spec));
        assert_eq!(node.status, Some(NodeStatus { addresses, conditions, ..NodeStatus::default() }));
    }
}
