//! The watches the controllers share: one per kind of object, started when
//! a controller first asks for its cache (nodes always, since every
//! controller reads them). Their changes wait, in order, until the caches
//! are synced; then every [`Watcher`] hears each of them.

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

use crate::driver::Watcher;
use crate::nodes::NodeCache;
use wasm_ccm_kube::informer::{Change, Trim, informer};

/// A watch's cache, and the changes it applied waiting to be heard.
struct Watched<K: kube::Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    changes: mpsc::UnboundedReceiver<Change<K>>,
}

/// The shared watches, until the stop they were started with.
pub(crate) struct Caches {
    client: kube::Client,
    stop: CancellationToken,
    nodes: NodeCache,
    node_changes: mpsc::UnboundedReceiver<Change<Node>>,
    services: Option<Watched<Service>>,
    namespaces: Option<Watched<Namespace>>,
    /// The watches, then also the loops handing their changes on.
    tasks: JoinSet<()>,
}

impl Caches {
    /// Starts the watch of nodes; the others start when asked for.
    pub(crate) fn start(client: kube::Client, stop: CancellationToken) -> Self {
        let mut tasks = JoinSet::new();
        let (sender, node_changes) = mpsc::unbounded_channel();
        let (nodes, watch) = NodeCache::watch(Api::all(client.clone()), stop.clone(), move |change| {
            let _ = sender.send(change);
        });
        tasks.spawn(watch);
        Caches { client, stop, nodes, node_changes, services: None, namespaces: None, tasks }
    }

    /// The nodes.
    pub(crate) fn nodes(&self) -> &NodeCache {
        &self.nodes
    }

    /// The Services, watched from the first call.
    pub(crate) fn services(&mut self) -> Store<Service> {
        let services = self.services.get_or_insert_with(|| watch(&self.client, &self.stop, &mut self.tasks));
        services.store.clone()
    }

    /// The namespaces, watched from the first call.
    pub(crate) fn namespaces(&mut self) -> Store<Namespace> {
        let namespaces = self.namespaces.get_or_insert_with(|| watch(&self.client, &self.stop, &mut self.tasks));
        namespaces.store.clone()
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

    /// Hands every change, from now on, to each of `watchers`; the watches
    /// and the loops doing it run until the returned tasks are dropped.
    pub(crate) fn hand_on(self, watchers: &[Arc<dyn Watcher>]) -> JoinSet<()> {
        let Caches { node_changes, services, namespaces, mut tasks, .. } = self;
        tasks.spawn(hear(node_changes, watchers.to_vec(), |watcher, change| watcher.node(change)));
        if let Some(services) = services {
            tasks.spawn(hear(services.changes, watchers.to_vec(), |watcher, change| watcher.service(change)));
        }
        if let Some(namespaces) = namespaces {
            tasks.spawn(hear(namespaces.changes, watchers.to_vec(), |watcher, change| watcher.namespace(change)));
        }
        tasks
    }
}

/// Starts watching every `K`.
fn watch<K>(client: &kube::Client, stop: &CancellationToken, tasks: &mut JoinSet<()>) -> Watched<K>
where
    K: kube::Resource<DynamicType = ()> + Trim + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let (sender, changes) = mpsc::unbounded_channel();
    let (store, watch) = informer(Api::<K>::all(client.clone()), stop.clone(), move |change| {
        let _ = sender.send(change);
    });
    tasks.spawn(watch);
    Watched { store, changes }
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
        let mut caches = Caches::start(client, CancellationToken::new());
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
}
