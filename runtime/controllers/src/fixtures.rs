//! What the controllers' unit tests run on: the in-memory cloud, builders
//! of nodes and Services, and a context on the API server harness whose
//! caches the test fills.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{
    Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, Service, ServicePort, ServiceSpec, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::watcher;
use tokio::sync::mpsc;
use wasm_ccm_apiserver::ApiServer;
pub use wasm_ccm_cloud::testing::TestCloud;

use crate::config::Settings;
use crate::context::Context;
use crate::events::{Events, Pending, Recorded};
use crate::metrics::Metrics;
use crate::nodes::NodeCache;
use crate::serves::Serves;
use crate::service::claim::{Claim, Roster};
use crate::service::ownership::Ownership;
use crate::service::rules::LOAD_BALANCER_FINALIZER;

/// Builders of Services for tests.
pub trait ServiceFixture: Sized {
    /// A Service of type LoadBalancer named `name` in `default`, one TCP
    /// port.
    fn test(name: &str) -> Self;
    /// With the load-balancer finalizer.
    fn with_finalizer(self) -> Self;
    /// Of another type.
    fn with_type(self, type_: &str) -> Self;
    /// Of a load balancer class.
    fn with_class(self, class: &str) -> Self;
}

impl ServiceFixture for Service {
    fn test(name: &str) -> Self {
        Service {
            metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                ports: Some(vec![ServicePort { port: 80, ..Default::default() }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn with_finalizer(mut self) -> Self {
        self.metadata.finalizers.get_or_insert_default().push(LOAD_BALANCER_FINALIZER.to_owned());
        self
    }

    fn with_type(mut self, type_: &str) -> Self {
        self.spec.get_or_insert_default().type_ = Some(type_.to_owned());
        self
    }

    fn with_class(mut self, class: &str) -> Self {
        self.spec.get_or_insert_default().load_balancer_class = Some(class.to_owned());
        self
    }
}

/// Builders of nodes for tests.
pub trait NodeFixture: Sized {
    /// A Ready node named `name` with kubelet's host name address.
    fn test(name: &str) -> Self;
    /// With its Ready condition `ready`.
    fn ready(self, ready: bool) -> Self;
    /// With a `NoSchedule` taint `key`.
    fn with_taint(self, key: &str) -> Self;
    /// With a provider ID.
    fn with_provider_id(self, id: &str) -> Self;
    /// With pod CIDRs.
    fn with_pod_cidrs(self, cidrs: &[&str]) -> Self;
    /// With labels.
    fn with_labels(self, labels: &[(&str, &str)]) -> Self;
    /// With these addresses (`(type, address)`) instead.
    fn with_addresses(self, addresses: &[(&str, &str)]) -> Self;
    /// With a condition `type_` of `status` and `reason`.
    fn with_condition(self, type_: &str, status: &str, reason: &str) -> Self;
    /// Being deleted.
    fn deleting(self) -> Self;
}

impl NodeFixture for Node {
    fn test(name: &str) -> Self {
        Node {
            metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..Default::default()
                }]),
                addresses: Some(vec![NodeAddress { type_: "Hostname".into(), address: name.into() }]),
                ..Default::default()
            }),
        }
    }

    fn ready(mut self, ready: bool) -> Self {
        let status = self.status.get_or_insert_default();
        for condition in status.conditions.get_or_insert_default() {
            if condition.type_ == "Ready" {
                condition.status = if ready { "True" } else { "False" }.to_owned();
            }
        }
        self
    }

    fn with_taint(mut self, key: &str) -> Self {
        let taint = Taint { key: key.into(), effect: "NoSchedule".into(), ..Default::default() };
        self.spec.get_or_insert_default().taints.get_or_insert_default().push(taint);
        self
    }

    fn with_provider_id(mut self, id: &str) -> Self {
        self.spec.get_or_insert_default().provider_id = Some(id.to_owned());
        self
    }

    fn with_pod_cidrs(mut self, cidrs: &[&str]) -> Self {
        let spec = self.spec.get_or_insert_default();
        spec.pod_cidr = cidrs.first().map(|cidr| (*cidr).to_owned());
        spec.pod_cidrs = Some(cidrs.iter().map(|cidr| (*cidr).to_owned()).collect());
        self
    }

    fn with_labels(mut self, labels: &[(&str, &str)]) -> Self {
        let existing = self.metadata.labels.get_or_insert_default();
        existing.extend(labels.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())));
        self
    }

    fn with_addresses(mut self, addresses: &[(&str, &str)]) -> Self {
        let addresses =
            addresses.iter().map(|(type_, address)| NodeAddress { type_: (*type_).into(), address: (*address).into() });
        self.status.get_or_insert_default().addresses = Some(addresses.collect());
        self
    }

    fn with_condition(mut self, type_: &str, status: &str, reason: &str) -> Self {
        let condition = NodeCondition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(reason.into()),
            ..Default::default()
        };
        self.status.get_or_insert_default().conditions.get_or_insert_default().push(condition);
        self
    }

    fn deleting(mut self) -> Self {
        self.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
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
    /// The ownership records, in `kube-system`.
    pub ownership: Ownership,
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
        let ownership = Ownership::load(client.clone(), "kube-system", &tokio_util::sync::CancellationToken::new())
            .await
            .expect("the records are read");
        TestEnv {
            api,
            client,
            cloud,
            settings: Settings::default(),
            nodes: NodeCache::new(node_store),
            node_writer: Mutex::new(node_writer),
            services,
            service_writer: Mutex::new(service_writer),
            ownership,
            events,
            recorded,
        }
    }

    /// The service controller's claim for the cloud, provider `test`, the
    /// only one, serving everything, over the env's ownership records.
    pub fn claim(&self) -> Claim {
        let roster = Roster::new(self.ownership.clone(), Writer::default().as_reader());
        roster.set(BTreeMap::from([(Arc::from("test"), Serves::everything())]));
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
