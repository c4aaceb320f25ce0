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
use tokio::sync::mpsc;
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

/// Hands an informer's changes to whoever subscribes, each from a replay
/// of the cache: a subscriber hears what a watch started at that moment
/// would, one [`Change::Applied`] per cached object and a
/// [`Change::Resynced`], then every change after. Nothing is kept for
/// subscribers to come, so a cache nobody hears yet holds no backlog.
pub struct Subscriptions<K> {
    requests: mpsc::UnboundedSender<mpsc::UnboundedSender<Change<K>>>,
}

impl<K> Clone for Subscriptions<K> {
    fn clone(&self) -> Self {
        Subscriptions { requests: self.requests.clone() }
    }
}

impl<K> Subscriptions<K> {
    /// The informer's changes from the next replay of its cache: at once
    /// when the cache holds a complete list, else once the list being
    /// read is complete. Nothing arrives once the informer has stopped.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Change<K>> {
        let (sender, changes) = mpsc::unbounded_channel();
        // An informer that stopped drops the request, and with it the
        // sender: the receiver then ends.
        let _ = self.requests.send(sender);
        changes
    }
}

/// The subscribers of one informer, and those waiting for a list to end.
struct Subscribers<K> {
    hearing: Vec<mpsc::UnboundedSender<Change<K>>>,
    waiting: Vec<mpsc::UnboundedSender<Change<K>>>,
    /// Whether a list is being read: the cache swaps to it at its end.
    listing: bool,
}

impl<K: Resource<DynamicType = ()> + Clone> Subscribers<K> {
    fn new() -> Self {
        Subscribers { hearing: Vec::new(), waiting: Vec::new(), listing: true }
    }

    /// Adds `subscriber`, replaying `store` to it unless a list is being
    /// read, whose end replays it.
    fn add(&mut self, subscriber: mpsc::UnboundedSender<Change<K>>, store: &Store<K>) {
        if self.listing {
            self.waiting.push(subscriber);
        } else if replay(&subscriber, store) {
            self.hearing.push(subscriber);
        }
    }

    /// Hands `change` to every subscriber hearing, after the cache applied
    /// it; a list's end replays the cache to those waiting.
    fn hand_on(&mut self, change: &Change<K>, store: &Store<K>) {
        self.hearing.retain(|subscriber| subscriber.send(change.clone()).is_ok());
        if matches!(change, Change::Resynced) {
            self.listing = false;
            for subscriber in std::mem::take(&mut self.waiting) {
                if replay(&subscriber, store) {
                    self.hearing.push(subscriber);
                }
            }
        }
    }
}

/// Sends `subscriber` every object of `store` and a resync; whether it
/// still listens.
fn replay<K>(subscriber: &mpsc::UnboundedSender<Change<K>>, store: &Store<K>) -> bool
where
    K: Resource<DynamicType = ()> + Clone,
{
    store.state().into_iter().all(|object| subscriber.send(Change::Applied(object)).is_ok())
        && subscriber.send(Change::Resynced).is_ok()
}

/// Watches `api` until `stop`, keeping the returned store up to date and
/// calling `on_change` with every change after the store has applied it;
/// [`Subscriptions`] hand the changes on from a replay of the store. The
/// watch restarts with backoff after errors, a dropped stream or an
/// expired resource version. A run of failures is logged once, when it
/// starts (not at all when the API server is unreachable, which the client
/// logs), and once when the watch works again.
pub fn informer<K, F>(
    api: Api<K>,
    stop: CancellationToken,
    mut on_change: F,
) -> (Store<K>, Subscriptions<K>, impl Future<Output = ()>)
where
    K: Resource<DynamicType = ()> + Trim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    F: FnMut(&Change<K>) + Send + 'static,
{
    let (store, writer) = reflector::store();
    let (requests, mut subscribing) = mpsc::unbounded_channel();
    // The controllers never read managedFields: dropping them before the
    // cache keeps a copy of each object halves its size.
    let watch = watcher(api, watch_config()).default_backoff().modify(Trim::trim);
    let stream = reflector::reflector(writer, watch);
    let cache = store.clone();
    let run = async move {
        let mut stream = std::pin::pin!(stream);
        let mut subscribers = Subscribers::new();
        let mut failing = false;
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                Some(subscriber) = subscribing.recv() => {
                    subscribers.add(subscriber, &cache);
                    continue;
                }
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
            let change = match event {
                Some(Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object))) => {
                    Change::Applied(Arc::new(object))
                }
                Some(Ok(watcher::Event::Delete(object))) => Change::Deleted(Arc::new(object)),
                Some(Ok(watcher::Event::InitDone)) => Change::Resynced,
                Some(Ok(watcher::Event::Init)) => {
                    subscribers.listing = true;
                    continue;
                }
                Some(Err(_)) => continue,
                None => return,
            };
            on_change(&change);
            subscribers.hand_on(&change, &cache);
        }
    };
    (store, Subscriptions { requests }, run)
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
        let (store, _, run) = informer(nodes, stop.clone(), |_| {});
        let watching = tokio::spawn(run);
        store.wait_until_ready().await.unwrap();
        assert_eq!(store.state().len(), 501);
        assert_eq!(server.requests().get("list", "nodes"), 2);
        stop.cancel();
        watching.await.unwrap();
    }

    fn line(change: &Change<Node>) -> String {
        match change {
            Change::Applied(node) => node.name_any(),
            Change::Deleted(node) => format!("gone {}", node.name_any()),
            Change::Resynced => "listed".to_owned(),
        }
    }

    /// What `changes` holds now, one line per change.
    fn received(changes: &mut mpsc::UnboundedReceiver<Change<Node>>) -> Vec<String> {
        std::iter::from_fn(|| changes.try_recv().ok()).map(|change| line(&change)).collect()
    }

    #[tokio::test]
    async fn a_subscriber_hears_a_replay_of_the_cache_and_no_backlog_then_each_change() {
        let server = ApiServer::start().await.unwrap();
        let nodes = Api::<Node>::all(server.client().await);
        for name in ["node-a", "node-b"] {
            nodes.create(&PostParams::default(), &Node::test(name)).await.unwrap();
        }
        let stop = CancellationToken::new();
        let (store, subscriptions, run) = informer(nodes.clone(), stop.clone(), |_| {});
        let watching = tokio::spawn(run);
        store.wait_until_ready().await.unwrap();
        // Changed while nobody hears: only the cache keeps what came of it.
        nodes.delete("node-b", &Default::default()).await.unwrap();
        while store.state().len() != 1 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }

        let mut changes = subscriptions.subscribe();
        nodes.create(&PostParams::default(), &Node::test("node-c")).await.unwrap();
        let mut heard = Vec::new();
        while heard.len() < 3 {
            let change = tokio::time::timeout(std::time::Duration::from_secs(10), changes.recv()).await;
            heard.push(line(&change.expect("a change in time").expect("the informer runs")));
        }
        assert_eq!(heard, ["node-a", "listed", "node-c"], "the replay, then what came after");
        stop.cancel();
        watching.await.unwrap();
        assert_eq!(changes.recv().await.map(|_| ()), None, "a stopped informer ends its subscriptions");
    }

    #[test]
    fn a_subscriber_during_a_list_hears_the_cache_once_the_list_ends() {
        let (store, mut writer) = reflector::store::<Node>();
        let mut subscribers = Subscribers::new();
        let (early, mut heard_early) = mpsc::unbounded_channel();
        let (late, mut heard_late) = mpsc::unbounded_channel();
        let apply = |writer: &mut reflector::store::Writer<Node>, event| writer.apply_watcher_event(&event);

        apply(&mut writer, watcher::Event::Init);
        subscribers.add(early, &store);
        apply(&mut writer, watcher::Event::InitApply(Node::test("node-a")));
        subscribers.hand_on(&Change::Applied(Arc::new(Node::test("node-a"))), &store);
        apply(&mut writer, watcher::Event::InitDone);
        subscribers.hand_on(&Change::Resynced, &store);
        assert_eq!(received(&mut heard_early), ["node-a", "listed"], "replayed at the list's end, once");

        // A relist: the cache holds the last complete list until it ends.
        subscribers.listing = true;
        apply(&mut writer, watcher::Event::Init);
        apply(&mut writer, watcher::Event::InitApply(Node::test("node-b")));
        subscribers.hand_on(&Change::Applied(Arc::new(Node::test("node-b"))), &store);
        subscribers.add(late, &store);
        assert_eq!(received(&mut heard_late), Vec::<String>::new(), "not the list before, nor half of this one");
        apply(&mut writer, watcher::Event::InitDone);
        subscribers.hand_on(&Change::Resynced, &store);
        assert_eq!(received(&mut heard_early), ["node-b", "listed"], "heard live");
        assert_eq!(received(&mut heard_late), ["node-b", "listed"], "the list as it ended");
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
