//! What the controllers' unit tests run on: the in-memory cloud, builders
//! of nodes and Services, and a context on the API server harness whose
//! caches the test fills.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, PostParams};
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::watcher;
use tokio::sync::mpsc;
use wasm_ccm_apiserver::ApiServer;
pub use wasm_ccm_cloud::testing::TestCloud;

use crate::framework::config::Settings;
use crate::framework::context::Context;
use crate::framework::metrics::Metrics;
use crate::nodes::cache::NodeCache;
use crate::providers::serves::Serves;
use crate::service::claim::{Claim, Roster};
use crate::service::ownership::{OWNER_CONDITION, claim_patch};
use wasm_ccm_kube::events::{Events, Pending, Recorded};

pub use wasm_ccm_test_support::{NodeFixture, ServiceFixture};

/// Services recorded as ensured by a provider, as its lane leaves them.
pub trait OwnedFixture {
    /// With the status condition recording `provider` as the owner of the
    /// load balancer.
    fn recorded_as(self, provider: &str) -> Self;

    /// Likewise, claimed at `time`.
    fn claimed_by(self, provider: &str, time: k8s_openapi::jiff::Timestamp) -> Self;
}

impl OwnedFixture for Service {
    fn recorded_as(self, provider: &str) -> Self {
        self.claimed_by(provider, k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    }

    fn claimed_by(mut self, provider: &str, time: k8s_openapi::jiff::Timestamp) -> Self {
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(time);
        let condition = serde_json::from_value(claim_patch(provider, now)["status"]["conditions"][0].clone())
            .expect("the record is a condition");
        let status = self.status.get_or_insert_default();
        let conditions = status.conditions.get_or_insert_default();
        conditions.retain(|condition| condition.type_ != OWNER_CONDITION);
        conditions.push(condition);
        self
    }
}

/// A controller's context on the API server harness and a [`TestCloud`],
/// with node and Service caches that hold what the test put there.
pub struct TestEnv {
    /// The API server.
    pub api: ApiServer,
    /// A client of it.
    pub client: kube::Client,
    /// The cloud.
    pub cloud: TestCloud,
    /// The settings the context carries.
    pub settings: Settings,
    nodes: NodeCache,
    node_writer: Mutex<Writer<Node>>,
    services: Store<Service>,
    service_writer: Mutex<Writer<Service>>,
    events: Events,
    recorded: mpsc::Receiver<Pending>,
}

impl TestEnv {
    /// A harness, `cloud`, empty caches and default settings.
    pub async fn new(cloud: TestCloud) -> Self {
        let api = ApiServer::start().await.expect("the API server harness starts");
        let client = api.client().await;
        let (node_store, node_writer) = reflector::store();
        let (services, service_writer) = reflector::store();
        let (events, recorded) = Events::recorder();
        TestEnv {
            api,
            client,
            cloud,
            settings: Settings::default(),
            nodes: NodeCache::new(node_store),
            node_writer: Mutex::new(node_writer),
            services,
            service_writer: Mutex::new(service_writer),
            events,
            recorded,
        }
    }

    /// The service controller's claim for the cloud, provider `test`, the
    /// only one, serving everything, with the addresses of the Services
    /// cached so far indexed.
    pub fn claim(&self) -> Claim {
        let roster = Roster::new(Writer::default().as_reader());
        roster.set(BTreeMap::from([(Arc::from("test"), Serves::everything())]));
        roster.addresses().rebuild(&self.services.state());
        Claim::new(Arc::from("test"), roster)
    }

    /// The context a controller gets.
    pub fn context(&self) -> Context<TestCloud> {
        Context {
            client: self.client.clone(),
            cloud: self.cloud.clone(),
            nodes: self.nodes.clone(),
            events: self.events.clone(),
            metrics: Metrics::default(),
            settings: Arc::new(self.settings.clone()),
        }
    }

    /// The Service cache.
    pub fn services(&self) -> Store<Service> {
        self.services.clone()
    }

    /// Creates `node` in the API server and puts the created node in the
    /// cache.
    pub async fn add_node(&mut self, node: Node) -> Node {
        let created =
            Api::<Node>::all(self.client.clone()).create(&PostParams::default(), &node).await.expect("a node");
        self.cache_node(created.clone());
        created
    }

    /// Creates `service` in the API server and puts the created Service in
    /// the cache.
    pub async fn add_service(&mut self, service: Service) -> Service {
        let api = Api::<Service>::namespaced(self.client.clone(), "default");
        let mut created = api.create(&PostParams::default(), &service).await.expect("a Service");
        if let Some(status) = service.status {
            let patch = serde_json::json!({"status": status});
            let patch = kube::api::Patch::Merge(patch);
            created =
                api.patch_status(&self.service_name(&created), &Default::default(), &patch).await.expect("a status");
        }
        self.cache_service(created.clone());
        created
    }

    fn service_name(&self, service: &Service) -> String {
        service.metadata.name.clone().unwrap_or_default()
    }

    /// Puts `node` in the cache as it is.
    pub fn cache_node(&self, node: Node) {
        self.node_writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .apply_watcher_event(&watcher::Event::Apply(node));
        self.nodes.changed();
    }

    /// Removes `node` from the cache.
    pub fn uncache_node(&self, node: Node) {
        self.node_writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .apply_watcher_event(&watcher::Event::Delete(node));
        self.nodes.changed();
    }

    /// Puts `service` in the cache as it is.
    pub fn cache_service(&self, service: Service) {
        self.service_writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .apply_watcher_event(&watcher::Event::Apply(service));
    }

    /// Removes `service` from the cache.
    pub fn uncache_service(&self, service: Service) {
        self.service_writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .apply_watcher_event(&watcher::Event::Delete(service));
    }

    /// Node `name` as the API server has it, and into the cache.
    pub async fn node(&mut self, name: &str) -> Node {
        let node = Api::<Node>::all(self.client.clone()).get(name).await.expect("the node");
        self.cache_node(node.clone());
        node
    }

    /// Service `name` in `default` as the API server has it, and into the
    /// cache.
    pub async fn service(&mut self, name: &str) -> Service {
        let service = Api::<Service>::namespaced(self.client.clone(), "default").get(name).await.expect("the Service");
        self.cache_service(service.clone());
        service
    }

    /// The events recorded since the last call.
    pub fn events(&mut self) -> Vec<Recorded> {
        Events::recorded(&mut self.recorded)
    }

    /// The reasons of the events recorded since the last call.
    pub fn event_reasons(&mut self) -> Vec<String> {
        self.events().into_iter().map(|(_, reason, _, _)| reason).collect()
    }
}
