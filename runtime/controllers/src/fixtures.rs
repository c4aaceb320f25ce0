//! What the controllers' unit tests run on: an in-memory cloud that records
//! every call and fails on request, builders of nodes and Services, and a
//! context on the API server harness whose caches the test fills.

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::{LoadBalancerIngress, LoadBalancerStatus, Node, NodeAddress, Service};
use kube::api::{Api, PostParams};
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::watcher;
use tokio::sync::mpsc;
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_host::ProviderError;
use wasm_ccm_host::types::{InstanceMetadata, Parts, Route, Zone};

use crate::cloud::Cloud;
use crate::config::Settings;
use crate::context::Context;
use crate::events::{Events, Pending, Recorded};
use crate::metrics::Metrics;
use crate::nodes::NodeCache;
use crate::serves::Serves;
use crate::service::claim::{Claim, Roster};

/// An instance of the [`TestCloud`].
#[derive(Debug, Clone, Default)]
pub struct TestInstance {
    /// Its ID, without the provider's scheme.
    pub id: String,
    /// What InstancesV2 says of it; the first instances API says the same.
    pub metadata: InstanceMetadata,
    /// Whether it is shut down.
    pub shutdown: bool,
}

#[derive(Debug, Default)]
struct CloudState {
    parts: Parts,
    instances: BTreeMap<String, TestInstance>,
    /// Load balancers by `namespace/name`, with the nodes they target.
    load_balancers: BTreeMap<String, Vec<String>>,
    routes: Vec<Route>,
    calls: Vec<String>,
    failures: HashMap<String, ProviderError>,
}

/// An in-memory cloud: provider `test`, every part supported unless told
/// otherwise; every call recorded as `function subject`.
#[derive(Debug, Clone)]
pub struct TestCloud {
    state: Arc<Mutex<CloudState>>,
}

impl Default for TestCloud {
    fn default() -> Self {
        let parts = Parts {
            load_balancer: true,
            instances: true,
            instances_v2: true,
            zones: true,
            clusters: true,
            routes: true,
        };
        TestCloud { state: Arc::new(Mutex::new(CloudState { parts, ..CloudState::default() })) }
    }
}

fn service_key(service: &Service) -> String {
    format!(
        "{}/{}",
        service.metadata.namespace.as_deref().unwrap_or("default"),
        service.metadata.name.as_deref().unwrap_or_default()
    )
}

fn name(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

impl TestCloud {
    fn lock(&self) -> MutexGuard<'_, CloudState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The cloud with only `parts` supported.
    pub fn with_parts(self, parts: Parts) -> Self {
        self.lock().parts = parts;
        self
    }

    /// The cloud with an instance for node `node`, `test://<id>`, in zone
    /// `zone-a` of `region-1`, at `address`.
    pub fn with_instance(self, node: &str, id: &str, address: &str) -> Self {
        let metadata = InstanceMetadata {
            provider_id: format!("test://{id}"),
            instance_type: "test.small".to_owned(),
            node_addresses: vec![NodeAddress { type_: "InternalIP".into(), address: address.into() }],
            zone: "zone-a".to_owned(),
            region: "region-1".to_owned(),
            additional_labels: BTreeMap::new(),
        };
        self.lock().instances.insert(node.to_owned(), TestInstance { id: id.to_owned(), metadata, shutdown: false });
        self
    }

    /// Changes the instance of node `node`.
    pub fn update_instance(&self, node: &str, update: impl FnOnce(&mut TestInstance)) {
        update(self.lock().instances.get_mut(node).expect("a known instance"));
    }

    /// Makes every call of `function` fail with `error` until
    /// [`TestCloud::heal`]; [`ProviderError::Panic`] panics instead, as a bug
    /// in the host would.
    pub fn fail(&self, function: &str, error: ProviderError) {
        self.lock().failures.insert(function.to_owned(), error);
    }

    /// Makes `function` answer again.
    pub fn heal(&self, function: &str) {
        self.lock().failures.remove(function);
    }

    /// Every call so far, as `function subject`, and forgets them.
    pub fn take_calls(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().calls)
    }

    /// The nodes the load balancer of Service `key` (`namespace/name`)
    /// targets, if it exists.
    pub fn load_balancer(&self, key: &str) -> Option<Vec<String>> {
        self.lock().load_balancers.get(key).cloned()
    }

    /// The routes.
    pub fn routes(&self) -> Vec<Route> {
        self.lock().routes.clone()
    }

    /// Adds a route, as if someone else made it.
    pub fn add_route(&self, route: Route) {
        self.lock().routes.push(route);
    }

    fn call(&self, function: &str, subject: &str) -> Result<(), ProviderError> {
        let failure = {
            let mut state = self.lock();
            state.calls.push(format!("{function} {subject}"));
            state.failures.get(function).cloned()
        };
        match failure {
            Some(ProviderError::Panic { message }) => panic!("{message}"),
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    fn instance(&self, node: &str) -> Result<TestInstance, ProviderError> {
        self.lock().instances.get(node).cloned().ok_or(ProviderError::InstanceNotFound)
    }

    fn instance_by_id(&self, provider_id: &str) -> Result<TestInstance, ProviderError> {
        let state = self.lock();
        let found = state.instances.values().find(|instance| instance.metadata.provider_id == provider_id);
        found.cloned().ok_or(ProviderError::InstanceNotFound)
    }

    fn status(key: &str) -> LoadBalancerStatus {
        let last = key.bytes().fold(0u8, |sum, byte| sum.wrapping_add(byte)) % 250 + 1;
        let ip = Ipv4Addr::new(192, 0, 2, last).to_string();
        LoadBalancerStatus { ingress: Some(vec![LoadBalancerIngress { ip: Some(ip), ..Default::default() }]) }
    }
}

impl Cloud for TestCloud {
    fn provider_name(&self) -> String {
        "test".to_owned()
    }

    fn parts(&self) -> Parts {
        self.lock().parts
    }

    async fn get_load_balancer(&self, service: &Service) -> Result<Option<LoadBalancerStatus>, ProviderError> {
        let key = service_key(service);
        self.call("get", &key)?;
        Ok(self.lock().load_balancers.contains_key(&key).then(|| Self::status(&key)))
    }

    async fn ensure_load_balancer(
        &self,
        service: &Service,
        nodes: &[Node],
    ) -> Result<LoadBalancerStatus, ProviderError> {
        let key = service_key(service);
        self.call("ensure", &key)?;
        self.lock().load_balancers.insert(key.clone(), nodes.iter().map(name).collect());
        Ok(Self::status(&key))
    }

    async fn update_load_balancer(&self, service: &Service, nodes: &[Node]) -> Result<(), ProviderError> {
        let key = service_key(service);
        self.call("update", &key)?;
        let mut state = self.lock();
        let targets = state
            .load_balancers
            .get_mut(&key)
            .ok_or_else(|| ProviderError::Cloud(format!("no load balancer {key}")))?;
        *targets = nodes.iter().map(name).collect();
        Ok(())
    }

    async fn ensure_load_balancer_deleted(&self, service: &Service) -> Result<(), ProviderError> {
        let key = service_key(service);
        self.call("delete", &key)?;
        self.lock().load_balancers.remove(&key);
        Ok(())
    }

    async fn instance_exists(&self, node: &Node) -> Result<bool, ProviderError> {
        self.call("exists", &name(node))?;
        Ok(self.instance(&name(node)).is_ok())
    }

    async fn instance_shutdown(&self, node: &Node) -> Result<bool, ProviderError> {
        self.call("shutdown", &name(node))?;
        Ok(self.instance(&name(node))?.shutdown)
    }

    async fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, ProviderError> {
        self.call("metadata", &name(node))?;
        Ok(self.instance(&name(node))?.metadata)
    }

    async fn node_addresses(&self, node_name: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        self.call("node-addresses", node_name)?;
        Ok(self.instance(node_name)?.metadata.node_addresses)
    }

    async fn node_addresses_by_provider_id(&self, provider_id: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        self.call("node-addresses-by-provider-id", provider_id)?;
        Ok(self.instance_by_id(provider_id)?.metadata.node_addresses)
    }

    async fn instance_id(&self, node_name: &str) -> Result<String, ProviderError> {
        self.call("instance-id", node_name)?;
        Ok(self.instance(node_name)?.id)
    }

    async fn instance_type(&self, node_name: &str) -> Result<String, ProviderError> {
        self.call("instance-type", node_name)?;
        Ok(self.instance(node_name)?.metadata.instance_type)
    }

    async fn instance_type_by_provider_id(&self, provider_id: &str) -> Result<String, ProviderError> {
        self.call("instance-type-by-provider-id", provider_id)?;
        Ok(self.instance_by_id(provider_id)?.metadata.instance_type)
    }

    async fn instance_exists_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        self.call("instance-exists-by-provider-id", provider_id)?;
        Ok(self.instance_by_id(provider_id).is_ok())
    }

    async fn instance_shutdown_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        self.call("instance-shutdown-by-provider-id", provider_id)?;
        Ok(self.instance_by_id(provider_id)?.shutdown)
    }

    async fn zone_by_provider_id(&self, provider_id: &str) -> Result<Zone, ProviderError> {
        self.call("zone-by-provider-id", provider_id)?;
        let metadata = self.instance_by_id(provider_id)?.metadata;
        Ok(Zone { failure_domain: metadata.zone, region: metadata.region })
    }

    async fn zone_by_node_name(&self, node_name: &str) -> Result<Zone, ProviderError> {
        self.call("zone-by-node-name", node_name)?;
        let metadata = self.instance(node_name)?.metadata;
        Ok(Zone { failure_domain: metadata.zone, region: metadata.region })
    }

    async fn list_routes(&self) -> Result<Vec<Route>, ProviderError> {
        self.call("list-routes", "")?;
        Ok(self.routes())
    }

    async fn create_route(&self, name_hint: &str, route: &Route) -> Result<(), ProviderError> {
        self.call("create-route", &route.destination_cidr)?;
        self.lock().routes.push(Route { name: name_hint.to_owned(), ..route.clone() });
        Ok(())
    }

    async fn delete_route(&self, route: &Route) -> Result<(), ProviderError> {
        self.call("delete-route", &route.destination_cidr)?;
        self.lock().routes.retain(|kept| kept.name != route.name || kept.destination_cidr != route.destination_cidr);
        Ok(())
    }
}

/// Builders of nodes and Services, shared with the integration tests.
pub use wasm_ccm_test_support::{NodeFixture, ServiceFixture};

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
    /// only one, serving everything.
    pub fn claim(&self) -> Claim {
        let roster = Roster::default();
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
