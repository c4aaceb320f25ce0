//! The watches the controllers share: one per kind of object the enabled
//! controllers read (nodes always, since every controller reads them).
//! They can start before the controllers are made, so that they fill while
//! the providers load, and a replica waiting to lead keeps them warm; the
//! namespaces' starts only when a provider picks Services by namespace
//! ([`OnDemand`]). Once the caches are synced, every [`Watcher`] hears a
//! replay of each cache and then each change, in order.

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::Api;
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::WriterDropped;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::config::{ControllerName, Settings};
use crate::nodes::cache::NodeCache;
use wasm_ccm_kube::informer::{Change, Subscriptions, Trim, informer};

/// What a controller hears of the shared watches: every change, after the
/// cache applied it, in the order they came. From when the caches are
/// synced: first each cache replayed as it stands, as a list would give it,
/// then every change after.
pub(crate) trait Watcher: Send + Sync {
    /// A node changed.
    fn node(&self, _change: &Change<Node>) {}
    /// A Service changed.
    fn service(&self, _change: &Change<Service>) {}
    /// A namespace changed.
    fn namespace(&self, _change: &Change<Namespace>) {}
}

/// A watch's cache, its changes, and whether a controller asked for it.
struct Watched<K: kube::Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    changes: Subscriptions<K>,
    /// Stops this watch alone.
    stop: CancellationToken,
    /// Starts it, if it was made dormant.
    start: OnDemand,
    asked: bool,
}

/// Starts a watch made dormant: until then it asks the API server nothing,
/// and its cache stays empty and unlisted. Clones share it; starting twice
/// is starting once.
#[derive(Debug, Clone, Default)]
pub(crate) struct OnDemand(CancellationToken);

impl OnDemand {
    /// Starts the watch, if it has not started.
    pub(crate) fn start(&self) {
        self.0.cancel();
    }
}

/// The shared watches of the controllers `settings` enables, until the stop
/// they were started with.
pub struct Caches {
    client: kube::Client,
    stop: CancellationToken,
    nodes: NodeCache,
    node_changes: Subscriptions<Node>,
    services: Option<Watched<Service>>,
    namespaces: Option<Watched<Namespace>>,
    /// The watches, then also the loops handing their changes on.
    tasks: JoinSet<()>,
}

impl Caches {
    /// Starts the watches the controllers `settings` enables read: nodes,
    /// and Services when the service controller is enabled, with the
    /// namespaces' made dormant. Those no controller asks for once made are
    /// stopped then (see [`Caches::stop_unasked`]).
    pub fn start(client: kube::Client, settings: &Settings, stop: CancellationToken) -> Self {
        let mut tasks = JoinSet::new();
        let (nodes, node_changes, watching_nodes) = NodeCache::watch(Api::all(client.clone()), stop.clone());
        tasks.spawn(watching_nodes);
        let mut caches = Caches { client, stop, nodes, node_changes, services: None, namespaces: None, tasks };
        if settings.controllers.contains(&ControllerName::Service) {
            caches.services = Some(watch(&caches.client, &caches.stop, &mut caches.tasks));
            caches.namespaces = Some(dormant(&caches.client, &caches.stop, &mut caches.tasks));
        }
        caches
    }

    /// The nodes.
    pub(crate) fn nodes(&self) -> &NodeCache {
        &self.nodes
    }

    /// The Services, watched from the first call if not already.
    pub(crate) fn services(&mut self) -> Store<Service> {
        let watched = ask(&mut self.services, &self.client, &self.stop, &mut self.tasks);
        watched.start.start();
        watched.store.clone()
    }

    /// The namespaces, and what starts their watch: the asker starts it
    /// when it needs them.
    pub(crate) fn namespaces(&mut self) -> (Store<Namespace>, OnDemand) {
        let watched = ask(&mut self.namespaces, &self.client, &self.stop, &mut self.tasks);
        (watched.store.clone(), watched.start.clone())
    }

    /// Stops the watches started for controllers that do not run: those
    /// no controller asked for.
    pub(crate) fn stop_unasked(&mut self) {
        fn unless_asked<K: kube::Resource<DynamicType = ()>>(watched: &mut Option<Watched<K>>) {
            if let Some(unasked) = watched.take_if(|watched| !watched.asked) {
                unasked.stop.cancel();
            }
        }
        unless_asked(&mut self.services);
        unless_asked(&mut self.namespaces);
    }

    /// Waits until the caches asked for are synced, the namespaces only
    /// when `namespaces`: a controller that does not need them listed is
    /// not held up by a missing grant for them.
    ///
    /// # Errors
    /// When a watch stopped first.
    pub(crate) async fn synced(&self, namespaces: bool) -> Result<(), WriterDropped> {
        self.nodes.store().wait_until_ready().await?;
        if let Some(services) = &self.services {
            services.store.wait_until_ready().await?;
        }
        if let Some(watched) = self.namespaces.as_ref().filter(|_| namespaces) {
            watched.store.wait_until_ready().await?;
        }
        Ok(())
    }

    /// Hands each cache's replay and every change after it to each of
    /// `watchers`; the watches and the loops doing it run until the
    /// returned tasks are dropped.
    pub(crate) fn hand_on(self, watchers: &[Arc<dyn Watcher>]) -> JoinSet<()> {
        let Caches { node_changes, services, namespaces, mut tasks, .. } = self;
        tasks.spawn(hear(node_changes.subscribe(), watchers.to_vec(), |watcher, change| watcher.node(change)));
        if let Some(services) = services {
            let changes = services.changes.subscribe();
            tasks.spawn(hear(changes, watchers.to_vec(), |watcher, change| watcher.service(change)));
        }
        if let Some(namespaces) = namespaces {
            let changes = namespaces.changes.subscribe();
            tasks.spawn(hear(changes, watchers.to_vec(), |watcher, change| watcher.namespace(change)));
        }
        tasks
    }
}

/// `watched`, made dormant now if it was not made, marked asked for.
fn ask<'a, K>(
    watched: &'a mut Option<Watched<K>>,
    client: &kube::Client,
    stop: &CancellationToken,
    tasks: &mut JoinSet<()>,
) -> &'a Watched<K>
where
    K: kube::Resource<DynamicType = ()> + Trim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let watched = watched.get_or_insert_with(|| dormant(client, stop, tasks));
    watched.asked = true;
    watched
}

/// Starts watching every `K`, until `stop` or the watch's own stop.
fn watch<K>(client: &kube::Client, stop: &CancellationToken, tasks: &mut JoinSet<()>) -> Watched<K>
where
    K: kube::Resource<DynamicType = ()> + Trim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let watched = dormant(client, stop, tasks);
    watched.start.start();
    watched
}

/// A watch of every `K` that starts when its [`OnDemand`] says, and runs
/// until `stop` or its own stop.
fn dormant<K>(client: &kube::Client, stop: &CancellationToken, tasks: &mut JoinSet<()>) -> Watched<K>
where
    K: kube::Resource<DynamicType = ()> + Trim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let own = stop.child_token();
    let (store, changes, watch) = informer(Api::<K>::all(client.clone()), own.clone(), |_| {});
    let start = OnDemand::default();
    let (starting, stopping) = (start.clone(), own.clone());
    tasks.spawn(async move {
        tokio::select! {
            () = starting.0.cancelled() => watch.await,
            () = stopping.cancelled() => {}
        }
    });
    Watched { store, changes, stop: own, start, asked: false }
}

/// Hands each of `changes` to every one of `watchers`.
async fn hear<K>(
    mut changes: mpsc::UnboundedReceiver<Change<K>>,
    watchers: Vec<Arc<dyn Watcher>>,
    heard: impl Fn(&dyn Watcher, &Change<K>),
) {
    while let Some(change) = changes.recv().await {
        for watcher in &watchers {
            heard(&**watcher, &change);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use kube::ResourceExt;
    use kube::api::PostParams;
    use kube::runtime::reflector::ObjectRef;
    use wasm_ccm_apiserver::ApiServer;

    use super::*;
    use crate::fixtures::{NodeFixture, ServiceFixture};

    /// What a watcher heard, one line per change.
    #[derive(Default)]
    struct Heard(Mutex<Vec<String>>);

    impl Heard {
        fn note<K: kube::Resource>(&self, kind: &str, change: &Change<K>) {
            let line = match change {
                Change::Applied(object) => format!("{kind} {}", object.name_any()),
                Change::Deleted(object) => format!("{kind} gone {}", object.name_any()),
                Change::Resynced => format!("{kind} listed"),
            };
            self.0.lock().unwrap().push(line);
        }

        fn lines(&self, kind: &str) -> Vec<String> {
            self.0.lock().unwrap().iter().filter(|line| line.starts_with(kind)).cloned().collect()
        }
    }

    impl Watcher for Heard {
        fn node(&self, change: &Change<Node>) {
            self.note("node", change);
        }

        fn service(&self, change: &Change<Service>) {
            self.note("service", change);
        }
    }

    #[tokio::test]
    async fn every_watcher_hears_each_change_from_the_initial_lists_on_in_order() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let (nodes, services) =
            (Api::<Node>::all(client.clone()), Api::<Service>::namespaced(client.clone(), "default"));
        nodes.create(&PostParams::default(), &Node::test("node-a")).await.unwrap();
        services.create(&PostParams::default(), &Service::test("web")).await.unwrap();
        let mut caches = Caches::start(client, &Settings::default(), CancellationToken::new());
        let cached = caches.services();
        caches.synced(false).await.unwrap();
        assert_eq!((caches.nodes().all().len(), cached.state().len()), (1, 1), "synced");

        let (first, second) = (Arc::new(Heard::default()), Arc::new(Heard::default()));
        let _handing_on = caches.hand_on(&[first.clone(), second.clone()]);
        nodes.create(&PostParams::default(), &Node::test("node-b")).await.unwrap();
        services.delete("web", &Default::default()).await.unwrap();
        let expected_nodes = ["node node-a", "node listed", "node node-b"];
        let expected_services = ["service web", "service listed", "service gone web"];
        for _ in 0..200 {
            if [&first, &second].iter().all(|heard| heard.lines("node").len() == 3 && heard.lines("service").len() == 3)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        for heard in [first, second] {
            assert_eq!(heard.lines("node"), expected_nodes, "the initial list, then what came after");
            assert_eq!(heard.lines("service"), expected_services);
        }
    }

    #[tokio::test]
    async fn caches_started_early_hold_no_backlog_and_watchers_hear_them_as_they_stand() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let nodes = Api::<Node>::all(client.clone());
        nodes.create(&PostParams::default(), &Node::test("node-a")).await.unwrap();
        let mut caches = Caches::start(client, &Settings::default(), CancellationToken::new());
        caches.services();
        caches.synced(false).await.unwrap();
        // While waiting to lead: a node comes and goes, another is added.
        nodes.create(&PostParams::default(), &Node::test("node-b")).await.unwrap();
        nodes.delete("node-b", &Default::default()).await.unwrap();
        nodes.create(&PostParams::default(), &Node::test("node-c")).await.unwrap();
        while caches.nodes().all().len() != 2 || caches.nodes().store().get(&ObjectRef::new("node-b")).is_some() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        let heard = Arc::new(Heard::default());
        let watcher: Arc<dyn Watcher> = heard.clone();
        let _handing_on = caches.hand_on(&[watcher]);
        for _ in 0..200 {
            if heard.lines("node").len() == 3 && heard.lines("service").len() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let mut listed = heard.lines("node");
        listed[..2].sort();
        assert_eq!(listed, ["node node-a", "node node-c", "node listed"], "the nodes as they stand, nothing of node-b");
        assert_eq!(heard.lines("service"), ["service listed"]);
    }

    #[tokio::test]
    async fn watches_no_controller_asks_for_stop() {
        let api = ApiServer::start().await.unwrap();
        let mut caches = Caches::start(api.client().await, &Settings::default(), CancellationToken::new());
        let services =
            caches.services.as_ref().map(|watched| watched.stop.clone()).expect("started for the service controller");
        let (namespaces, start) = caches.namespaces();
        caches.stop_unasked();
        assert!(services.is_cancelled() && caches.services.is_none(), "no controller asked for the Services");
        assert!(caches.namespaces.as_ref().is_some_and(|watched| !watched.stop.is_cancelled()));
        caches.synced(false).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(api.requests().get("list", "namespaces"), 0, "asked for, not started");
        assert!(namespaces.state().is_empty());
        start.start();
        caches.synced(true).await.unwrap();
        assert!(namespaces.state().iter().any(|namespace| namespace.name_any() == "default"));
        assert_eq!(api.requests().get("list", "namespaces"), 1, "{:?}", api.requests());
    }
}
