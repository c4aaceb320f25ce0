//! [`TestCloud`], an in-memory cloud for tests: it records every call and
//! fails a function on request.

#![allow(clippy::expect_used, clippy::panic, reason = "a test double: a test asking what it was not given fails")]

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::{LoadBalancerIngress, LoadBalancerStatus, Node, NodeAddress, Service};

use crate::cloud::{BatchAnswers, Cloud, MetadataAnswers};
use crate::error::ProviderError;
use crate::function::Function;
use crate::node_set::NodeSet;
use crate::{InstanceMetadata, InstanceState, Parts, ProviderInfo, Route, Zone};

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

#[derive(Debug)]
struct CloudState {
    parts: Parts,
    max_batch: u32,
    instances: BTreeMap<String, TestInstance>,
    /// Load balancers by `namespace/name`, with the nodes they target.
    load_balancers: BTreeMap<String, Vec<String>>,
    routes: Vec<Route>,
    calls: Vec<String>,
    /// The copy of each Service the last ensure was given, by `namespace/name`.
    ensured_with: HashMap<String, Service>,
    failures: HashMap<Function, ProviderError>,
}

/// An in-memory cloud: provider `test`, every part supported unless told
/// otherwise; every call recorded as `<function> <subject>`, the function
/// by its WIT name (`ensure default/web`). Clones share the cloud.
///
/// Load balancers answer the ingress `192.0.2.<n>`, `n` derived from the
/// Service's key; instances are in zone `zone-a` of `region-1`; the zone of
/// the caller is that too, the one cluster is `kubernetes`, with no API
/// server address to give. It answers one node at a time unless
/// [`TestCloud::with_max_batch`] says otherwise.
#[derive(Debug, Clone)]
pub struct TestCloud {
    state: Arc<Mutex<CloudState>>,
}

impl Default for TestCloud {
    fn default() -> Self {
        let state = CloudState {
            parts: Parts::ALL,
            max_batch: 0,
            instances: BTreeMap::new(),
            load_balancers: BTreeMap::new(),
            routes: Vec::new(),
            calls: Vec::new(),
            ensured_with: HashMap::new(),
            failures: HashMap::new(),
        };
        TestCloud { state: Arc::new(Mutex::new(state)) }
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

fn names(nodes: &NodeSet) -> Vec<String> {
    nodes.current().names().iter().map(str::to_owned).collect()
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

    /// The cloud answering the lifecycle questions and the metadata in
    /// batches of at most `max_batch` nodes; a batch call is recorded as
    /// `states a,b,c` or `metadata a,b,c`.
    pub fn with_max_batch(self, max_batch: u32) -> Self {
        self.lock().max_batch = max_batch;
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
    ///
    /// # Panics
    /// When the cloud has no instance for `node`.
    pub fn update_instance(&self, node: &str, update: impl FnOnce(&mut TestInstance)) {
        update(self.lock().instances.get_mut(node).expect("a known instance"));
    }

    /// Makes every call of `function` fail with `error` until
    /// [`TestCloud::heal`]; [`ProviderError::Panic`] panics instead, as a bug
    /// in the host would.
    pub fn fail(&self, function: Function, error: ProviderError) {
        self.lock().failures.insert(function, error);
    }

    /// Makes `function` answer again.
    pub fn heal(&self, function: Function) {
        self.lock().failures.remove(&function);
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

    /// The copy of Service `key` (`namespace/name`) the last ensure was
    /// given, whether or not it failed.
    pub fn ensured_with(&self, key: &str) -> Option<Service> {
        self.lock().ensured_with.get(key).cloned()
    }

    /// The routes.
    pub fn routes(&self) -> Vec<Route> {
        self.lock().routes.clone()
    }

    /// Adds a route, as if someone else made it.
    pub fn add_route(&self, route: Route) {
        self.lock().routes.push(route);
    }

    fn call(&self, function: Function, subject: &str) -> Result<(), ProviderError> {
        let failure = {
            let mut state = self.lock();
            state.calls.push(format!("{} {subject}", function.wit_name()));
            state.failures.get(&function).cloned()
        };
        match failure {
            Some(ProviderError::Panic { message }) => panic!("{message}"),
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Refuses a batch larger than the cloud said it takes.
    fn check_batch(&self, nodes: usize) -> Result<(), ProviderError> {
        let max_batch = self.lock().max_batch;
        match u32::try_from(nodes) {
            Ok(nodes) if nodes <= max_batch => Ok(()),
            _ => Err(ProviderError::Cloud(format!("a batch of {nodes} nodes; at most {max_batch} taken"))),
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

    fn zone(metadata: InstanceMetadata) -> Zone {
        Zone { failure_domain: metadata.zone, region: metadata.region }
    }

    fn status(key: &str) -> LoadBalancerStatus {
        let last = key.bytes().fold(0u8, |sum, byte| sum.wrapping_add(byte)) % 250 + 1;
        let ip = Ipv4Addr::new(192, 0, 2, last).to_string();
        LoadBalancerStatus { ingress: Some(vec![LoadBalancerIngress { ip: Some(ip), ..Default::default() }]) }
    }
}

impl Cloud for TestCloud {
    fn info(&self) -> ProviderInfo {
        let state = self.lock();
        ProviderInfo { name: "test".to_owned(), has_cluster_id: true, parts: state.parts, max_batch: state.max_batch }
    }

    async fn get_load_balancer(&self, service: &Service) -> Result<Option<LoadBalancerStatus>, ProviderError> {
        let key = service_key(service);
        self.call(Function::GetLoadBalancer, &key)?;
        Ok(self.lock().load_balancers.contains_key(&key).then(|| Self::status(&key)))
    }

    async fn get_load_balancer_name(&self, service: &Service) -> Result<String, ProviderError> {
        let key = service_key(service);
        self.call(Function::GetLoadBalancerName, &key)?;
        Ok(key.replace('/', "-"))
    }

    async fn ensure_load_balancer(
        &self,
        service: &Service,
        nodes: &NodeSet,
    ) -> Result<LoadBalancerStatus, ProviderError> {
        let key = service_key(service);
        self.lock().ensured_with.insert(key.clone(), service.clone());
        self.call(Function::EnsureLoadBalancer, &key)?;
        self.lock().load_balancers.insert(key.clone(), names(nodes));
        Ok(Self::status(&key))
    }

    async fn update_load_balancer(&self, service: &Service, nodes: &NodeSet) -> Result<(), ProviderError> {
        let key = service_key(service);
        self.call(Function::UpdateLoadBalancer, &key)?;
        let mut state = self.lock();
        let targets = state
            .load_balancers
            .get_mut(&key)
            .ok_or_else(|| ProviderError::Cloud(format!("no load balancer {key}")))?;
        *targets = names(nodes);
        Ok(())
    }

    async fn ensure_load_balancer_deleted(&self, service: &Service) -> Result<(), ProviderError> {
        let key = service_key(service);
        self.call(Function::EnsureLoadBalancerDeleted, &key)?;
        self.lock().load_balancers.remove(&key);
        Ok(())
    }

    async fn instance_exists(&self, node: &Node) -> Result<bool, ProviderError> {
        self.call(Function::InstanceExists, &name(node))?;
        Ok(self.instance(&name(node)).is_ok())
    }

    async fn instance_shutdown(&self, node: &Node) -> Result<bool, ProviderError> {
        self.call(Function::InstanceShutdown, &name(node))?;
        Ok(self.instance(&name(node))?.shutdown)
    }

    async fn instance_states(&self, nodes: &NodeSet) -> Result<BatchAnswers, ProviderError> {
        let names = names(nodes);
        self.call(Function::InstanceStates, &names.join(","))?;
        self.check_batch(names.len())?;
        Ok(names
            .iter()
            .map(|name| match self.instance(name) {
                Ok(instance) => Ok(InstanceState { exists: true, shut_down: instance.shutdown }),
                Err(_) => Ok(InstanceState { exists: false, shut_down: false }),
            })
            .collect())
    }

    async fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, ProviderError> {
        self.call(Function::InstanceMetadata, &name(node))?;
        Ok(self.instance(&name(node))?.metadata)
    }

    async fn batch_metadata(&self, nodes: &NodeSet) -> Result<MetadataAnswers, ProviderError> {
        let names = names(nodes);
        self.call(Function::BatchMetadata, &names.join(","))?;
        self.check_batch(names.len())?;
        Ok(names.iter().map(|name| self.instance(name).map(|instance| instance.metadata)).collect())
    }

    async fn node_addresses(&self, node_name: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        self.call(Function::NodeAddresses, node_name)?;
        Ok(self.instance(node_name)?.metadata.node_addresses)
    }

    async fn node_addresses_by_provider_id(&self, provider_id: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        self.call(Function::NodeAddressesByProviderId, provider_id)?;
        Ok(self.instance_by_id(provider_id)?.metadata.node_addresses)
    }

    async fn instance_id(&self, node_name: &str) -> Result<String, ProviderError> {
        self.call(Function::InstanceId, node_name)?;
        Ok(self.instance(node_name)?.id)
    }

    async fn instance_type(&self, node_name: &str) -> Result<String, ProviderError> {
        self.call(Function::InstanceType, node_name)?;
        Ok(self.instance(node_name)?.metadata.instance_type)
    }

    async fn instance_type_by_provider_id(&self, provider_id: &str) -> Result<String, ProviderError> {
        self.call(Function::InstanceTypeByProviderId, provider_id)?;
        Ok(self.instance_by_id(provider_id)?.metadata.instance_type)
    }

    async fn add_ssh_key_to_all_instances(&self, user: &str, _key_data: &[u8]) -> Result<(), ProviderError> {
        self.call(Function::AddSshKeyToAllInstances, user)
    }

    async fn current_node_name(&self, hostname: &str) -> Result<String, ProviderError> {
        self.call(Function::CurrentNodeName, hostname)?;
        Ok(hostname.to_owned())
    }

    async fn instance_exists_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        self.call(Function::InstanceExistsByProviderId, provider_id)?;
        Ok(self.instance_by_id(provider_id).is_ok())
    }

    async fn instance_shutdown_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        self.call(Function::InstanceShutdownByProviderId, provider_id)?;
        Ok(self.instance_by_id(provider_id)?.shutdown)
    }

    async fn get_zone(&self) -> Result<Zone, ProviderError> {
        self.call(Function::GetZone, "")?;
        Ok(Zone { failure_domain: "zone-a".to_owned(), region: "region-1".to_owned() })
    }

    async fn get_zone_by_provider_id(&self, provider_id: &str) -> Result<Zone, ProviderError> {
        self.call(Function::GetZoneByProviderId, provider_id)?;
        Ok(Self::zone(self.instance_by_id(provider_id)?.metadata))
    }

    async fn get_zone_by_node_name(&self, node_name: &str) -> Result<Zone, ProviderError> {
        self.call(Function::GetZoneByNodeName, node_name)?;
        Ok(Self::zone(self.instance(node_name)?.metadata))
    }

    async fn list_clusters(&self) -> Result<Vec<String>, ProviderError> {
        self.call(Function::ListClusters, "")?;
        Ok(vec!["kubernetes".to_owned()])
    }

    async fn master(&self, cluster_name: &str) -> Result<String, ProviderError> {
        self.call(Function::Master, cluster_name)?;
        Err(ProviderError::NotImplemented)
    }

    async fn list_routes(&self) -> Result<Vec<Route>, ProviderError> {
        self.call(Function::ListRoutes, "")?;
        Ok(self.routes())
    }

    async fn create_route(&self, name_hint: &str, route: &Route) -> Result<(), ProviderError> {
        self.call(Function::CreateRoute, &route.destination_cidr)?;
        self.lock().routes.push(Route { name: name_hint.to_owned(), ..route.clone() });
        Ok(())
    }

    async fn delete_route(&self, route: &Route) -> Result<(), ProviderError> {
        self.call(Function::DeleteRoute, &route.destination_cidr)?;
        self.lock().routes.retain(|kept| kept.name != route.name || kept.destination_cidr != route.destination_cidr);
        Ok(())
    }
}
