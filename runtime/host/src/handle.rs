//! The handle the controllers call a provider through: typed functions over
//! Kubernetes objects, limits on calls per second and at once, and an atomic
//! swap of the loaded provider behind it.

use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use k8s_openapi::api::core::v1::{LoadBalancerStatus, Node, NodeAddress, Service};
use wasm_ccm_cloud::{
    BatchAnswers, Cloud, Function, InstanceMetadata, MetadataAnswers, NodeSet, ProviderError, ProviderInfo, Route, Zone,
};

use crate::call::admission::{Admission, Admitted};
use crate::call::convert;
use crate::call::usage::{Calls, Usage};
use crate::provider::{LoadedProvider, Operation, lend, operation};

/// A provider, swappable while it serves.
///
/// Clones share the provider. A call waits for the call rate
/// ([`Limits::calls`](crate::Limits::calls)), then for a place among the
/// calls at once ([`Limits::concurrency`](crate::Limits::concurrency)),
/// and runs on the provider loaded when it gets in. [`ProviderHandle::swap`]
/// makes new calls use another provider while calls in flight finish on the
/// old one.
#[derive(Clone)]
pub struct ProviderHandle {
    serving: Arc<ArcSwap<Serving>>,
    swapping: Arc<Mutex<()>>,
    calls: Arc<Calls>,
}

/// The provider new calls go to, and how they get in.
struct Serving {
    provider: Arc<LoadedProvider>,
    admission: Arc<Admission>,
}

/// How calls of `provider` get in, by its limits.
fn admission(provider: &LoadedProvider) -> Admission {
    Admission::new(provider.name(), provider.limits(), provider.metrics())
}

/// Builds an [`Operation`] calling `$function` of the `$interface` export
/// with owned arguments.
macro_rules! operation {
    ($interface:ident . $function:ident ( $($arg:ident),* )) => {
        operation(move |exports, store| {
            Box::pin(async move { exports.world.$interface().$function(&mut *store $(, &$arg)*).await })
        })
    };
}

impl ProviderHandle {
    /// A handle serving `provider` within its limits.
    pub fn new(provider: LoadedProvider) -> Self {
        let admission = Arc::new(admission(&provider));
        ProviderHandle {
            serving: Arc::new(ArcSwap::from_pointee(Serving { provider: Arc::new(provider), admission })),
            swapping: Arc::default(),
            calls: Arc::default(),
        }
    }

    /// The provider new calls go to.
    pub fn current(&self) -> Arc<LoadedProvider> {
        self.serving.load().provider.clone()
    }

    /// Makes new calls go to `provider`; returns the one it replaces, which
    /// finishes the calls it has in flight.
    ///
    /// When `provider`'s `concurrency` or `calls` limit differs from the
    /// serving one's, new calls get in by a new count of calls at once and a
    /// new, full, bucket, while calls in flight or waiting keep what they
    /// hold: until those end, the old and the new limits both apply. The
    /// HTTP request bucket is kept when its rate is the same, as
    /// [`LoadedProvider`] says.
    pub fn swap(&self, mut provider: LoadedProvider) -> Arc<LoadedProvider> {
        let _swapping = self.swapping.lock().unwrap_or_else(PoisonError::into_inner);
        let serving = self.serving.load_full();
        provider.take_over(&serving.provider);
        let admission = if serving.admission.fits(provider.limits()) {
            serving.admission.clone()
        } else {
            Arc::new(admission(&provider))
        };
        self.serving.store(Arc::new(Serving { provider: Arc::new(provider), admission }));
        serving.provider.clone()
    }

    /// What the provider uses now: calls in flight and waiting, and the
    /// memory of its live instances, those of replaced providers included.
    pub fn usage(&self) -> Usage {
        self.calls.usage(self.serving.load().provider.memory_in_use())
    }

    /// Waits until the call rate and a place among the calls at once let a
    /// call in.
    async fn admit(&self) -> Result<Admitted<'_>, ProviderError> {
        let admission = self.serving.load().admission.clone();
        admission.enter(&self.calls).await
    }

    async fn call<R: Send>(&self, function: Function, operation: Operation<R>) -> Result<R, ProviderError> {
        let _admitted = self.admit().await?;
        self.current().call(function, operation).await
    }

    /// Starts an instance of the current provider and asks its name: a
    /// liveness check for the sandbox.
    ///
    /// # Errors
    /// The sandbox's error.
    pub async fn probe(&self) -> Result<(), ProviderError> {
        let _admitted = self.admit().await?;
        self.current().probe().await
    }

    fn cluster_name(&self) -> String {
        self.serving.load().provider.cluster_name().to_owned()
    }
}

impl Cloud for ProviderHandle {
    fn info(&self) -> ProviderInfo {
        self.serving.load().provider.info().clone()
    }

    async fn get_load_balancer(&self, service: &Service) -> Result<Option<LoadBalancerStatus>, ProviderError> {
        let (cluster, service) = (self.cluster_name(), convert::service(service)?);
        let status = self
            .call(Function::GetLoadBalancer, operation!(wasm_ccm_provider_load_balancer.call_get(cluster, service)))
            .await?;
        status.map(convert::load_balancer_status).transpose()
    }

    async fn get_load_balancer_name(&self, service: &Service) -> Result<String, ProviderError> {
        let (cluster, service) = (self.cluster_name(), convert::service(service)?);
        let operation = operation(move |exports, store| {
            Box::pin(async move {
                Ok(Ok(exports
                    .world
                    .wasm_ccm_provider_load_balancer()
                    .call_get_name(&mut *store, &cluster, &service)
                    .await?))
            })
        });
        self.call(Function::GetLoadBalancerName, operation).await
    }

    async fn ensure_load_balancer(
        &self,
        service: &Service,
        nodes: &NodeSet,
    ) -> Result<LoadBalancerStatus, ProviderError> {
        let (cluster, service, nodes) = (self.cluster_name(), convert::service(service)?, nodes.clone());
        let operation = operation(move |exports, store| {
            Box::pin(async move {
                let nodes = lend(store, nodes)?;
                exports
                    .world
                    .wasm_ccm_provider_load_balancer()
                    .call_ensure(&mut *store, &cluster, &service, nodes)
                    .await
            })
        });
        let status = self.call(Function::EnsureLoadBalancer, operation).await?;
        convert::load_balancer_status(status)
    }

    async fn update_load_balancer(&self, service: &Service, nodes: &NodeSet) -> Result<(), ProviderError> {
        let (cluster, service, nodes) = (self.cluster_name(), convert::service(service)?, nodes.clone());
        let operation = operation(move |exports, store| {
            Box::pin(async move {
                let nodes = lend(store, nodes)?;
                exports
                    .world
                    .wasm_ccm_provider_load_balancer()
                    .call_update(&mut *store, &cluster, &service, nodes)
                    .await
            })
        });
        self.call(Function::UpdateLoadBalancer, operation).await
    }

    async fn ensure_load_balancer_deleted(&self, service: &Service) -> Result<(), ProviderError> {
        let (cluster, service) = (self.cluster_name(), convert::service(service)?);
        self.call(
            Function::EnsureLoadBalancerDeleted,
            operation!(wasm_ccm_provider_load_balancer.call_ensure_deleted(cluster, service)),
        )
        .await
    }

    async fn instance_exists(&self, node: &Node) -> Result<bool, ProviderError> {
        let node = convert::node(node);
        self.call(Function::InstanceExists, operation!(wasm_ccm_provider_instances_v2.call_exists(node))).await
    }

    async fn instance_shutdown(&self, node: &Node) -> Result<bool, ProviderError> {
        let node = convert::node(node);
        self.call(Function::InstanceShutdown, operation!(wasm_ccm_provider_instances_v2.call_shutdown(node))).await
    }

    async fn instance_states(&self, nodes: &NodeSet) -> Result<BatchAnswers, ProviderError> {
        if self.info().max_batch == 0 {
            return Err(ProviderError::NotImplemented);
        }
        let (asked, nodes) = (nodes.current().len(), nodes.clone());
        let operation = operation(move |exports, store| {
            Box::pin(async move {
                let lent = lend(store, nodes)?;
                exports.batch()?.call_states(&mut *store, lent).await
            })
        });
        let answers = self.call(Function::InstanceStates, operation).await?;
        convert::batch_answers(answers, asked)
    }

    async fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, ProviderError> {
        let node = convert::node(node);
        let metadata = self
            .call(Function::InstanceMetadata, operation!(wasm_ccm_provider_instances_v2.call_metadata(node)))
            .await?;
        convert::instance_metadata(metadata)
    }

    async fn batch_metadata(&self, nodes: &NodeSet) -> Result<MetadataAnswers, ProviderError> {
        if self.info().max_batch == 0 {
            return Err(ProviderError::NotImplemented);
        }
        let (asked, nodes) = (nodes.current().len(), nodes.clone());
        let operation = operation(move |exports, store| {
            Box::pin(async move {
                let Some(batch) = &exports.metadata_batch else {
                    return Ok(Err(crate::bindings::types::CloudError::NotImplemented));
                };
                let lent = lend(store, nodes)?;
                batch.call_metadata(&mut *store, lent).await
            })
        });
        let answers = self.call(Function::BatchMetadata, operation).await?;
        convert::metadata_answers(answers, asked)
    }

    async fn node_addresses(&self, node_name: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        let name = node_name.to_owned();
        let addresses = self
            .call(Function::NodeAddresses, operation!(wasm_ccm_provider_instances.call_node_addresses(name)))
            .await?;
        convert::node_addresses(addresses)
    }

    async fn node_addresses_by_provider_id(&self, provider_id: &str) -> Result<Vec<NodeAddress>, ProviderError> {
        let id = provider_id.to_owned();
        let addresses = self
            .call(
                Function::NodeAddressesByProviderId,
                operation!(wasm_ccm_provider_instances.call_node_addresses_by_provider_id(id)),
            )
            .await?;
        convert::node_addresses(addresses)
    }

    async fn instance_id(&self, node_name: &str) -> Result<String, ProviderError> {
        let name = node_name.to_owned();
        self.call(Function::InstanceId, operation!(wasm_ccm_provider_instances.call_instance_id(name))).await
    }

    async fn instance_type(&self, node_name: &str) -> Result<String, ProviderError> {
        let name = node_name.to_owned();
        self.call(Function::InstanceType, operation!(wasm_ccm_provider_instances.call_instance_type(name))).await
    }

    async fn instance_type_by_provider_id(&self, provider_id: &str) -> Result<String, ProviderError> {
        let id = provider_id.to_owned();
        self.call(
            Function::InstanceTypeByProviderId,
            operation!(wasm_ccm_provider_instances.call_instance_type_by_provider_id(id)),
        )
        .await
    }

    async fn add_ssh_key_to_all_instances(&self, user: &str, key_data: &[u8]) -> Result<(), ProviderError> {
        let (user, key) = (user.to_owned(), key_data.to_vec());
        self.call(
            Function::AddSshKeyToAllInstances,
            operation!(wasm_ccm_provider_instances.call_add_ssh_key_to_all_instances(user, key)),
        )
        .await
    }

    async fn current_node_name(&self, hostname: &str) -> Result<String, ProviderError> {
        let hostname = hostname.to_owned();
        self.call(Function::CurrentNodeName, operation!(wasm_ccm_provider_instances.call_current_node_name(hostname)))
            .await
    }

    async fn instance_exists_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        let id = provider_id.to_owned();
        self.call(
            Function::InstanceExistsByProviderId,
            operation!(wasm_ccm_provider_instances.call_instance_exists_by_provider_id(id)),
        )
        .await
    }

    async fn instance_shutdown_by_provider_id(&self, provider_id: &str) -> Result<bool, ProviderError> {
        let id = provider_id.to_owned();
        self.call(
            Function::InstanceShutdownByProviderId,
            operation!(wasm_ccm_provider_instances.call_instance_shutdown_by_provider_id(id)),
        )
        .await
    }

    async fn get_zone(&self) -> Result<Zone, ProviderError> {
        self.call(Function::GetZone, operation!(wasm_ccm_provider_zones.call_get_zone())).await.map(convert::zone)
    }

    async fn get_zone_by_provider_id(&self, provider_id: &str) -> Result<Zone, ProviderError> {
        let id = provider_id.to_owned();
        self.call(Function::GetZoneByProviderId, operation!(wasm_ccm_provider_zones.call_get_zone_by_provider_id(id)))
            .await
            .map(convert::zone)
    }

    async fn get_zone_by_node_name(&self, node_name: &str) -> Result<Zone, ProviderError> {
        let name = node_name.to_owned();
        self.call(Function::GetZoneByNodeName, operation!(wasm_ccm_provider_zones.call_get_zone_by_node_name(name)))
            .await
            .map(convert::zone)
    }

    async fn list_clusters(&self) -> Result<Vec<String>, ProviderError> {
        self.call(Function::ListClusters, operation!(wasm_ccm_provider_clusters.call_list_clusters())).await
    }

    async fn master(&self, cluster_name: &str) -> Result<String, ProviderError> {
        let cluster = cluster_name.to_owned();
        self.call(Function::Master, operation!(wasm_ccm_provider_clusters.call_master(cluster))).await
    }

    async fn list_routes(&self) -> Result<Vec<Route>, ProviderError> {
        let cluster = self.cluster_name();
        let routes =
            self.call(Function::ListRoutes, operation!(wasm_ccm_provider_routes.call_list_routes(cluster))).await?;
        routes.into_iter().map(convert::route).collect()
    }

    async fn create_route(&self, name_hint: &str, route: &Route) -> Result<(), ProviderError> {
        let (cluster, hint, route) = (self.cluster_name(), name_hint.to_owned(), convert::to_wit_route(route));
        self.call(Function::CreateRoute, operation!(wasm_ccm_provider_routes.call_create_route(cluster, hint, route)))
            .await
    }

    async fn delete_route(&self, route: &Route) -> Result<(), ProviderError> {
        let (cluster, route) = (self.cluster_name(), convert::to_wit_route(route));
        self.call(Function::DeleteRoute, operation!(wasm_ccm_provider_routes.call_delete_route(cluster, route))).await
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    use prometheus_client::registry::Registry;

    use super::*;
    use crate::{AllowList, Credentials, Engine, EngineSettings, Limits, ProviderSpec, Rate};

    /// A call to the fake provider that takes this long.
    const SLOW: Duration = Duration::from_millis(600);

    fn engine() -> Engine {
        static ENGINE: OnceLock<Engine> = OnceLock::new();
        ENGINE.get_or_init(|| Engine::new(EngineSettings::default()).unwrap()).clone()
    }

    /// The fake provider, built by `providers/build.sh`, under `name` with
    /// `limits`; its `ListClusters` takes [`SLOW`].
    async fn fake(name: &str, limits: Limits) -> LoadedProvider {
        let wasm = wasm_ccm_test_support::guest("provider-fake");
        let config = format!(
            r#"{{"zone": {{"failureDomain": "a", "region": "r"}}, "faults": {{"clusters.list-clusters": {{"latencyMs": {}}}}}}}"#,
            SLOW.as_millis()
        );
        let spec = ProviderSpec {
            name: name.to_owned(),
            wasm,
            config: config.into_bytes().into(),
            cluster_name: "test".to_owned(),
            credentials: Credentials::default(),
            allow_list: AllowList::default(),
            trusted_certificates: None,
            limits,
        };
        LoadedProvider::load(&engine(), spec).await.unwrap()
    }

    fn rate(per_second: u32, burst: u32) -> Rate {
        Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() }
    }

    /// The value of the metric `name` of `provider`.
    fn metric(name: &str, provider: &str) -> Option<f64> {
        let mut registry = Registry::default();
        engine().metrics().register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let prefix = format!("{name}{{provider=\"{provider}\"}} ");
        text.lines().find_map(|line| line.strip_prefix(&prefix)).map(|value| value.parse().unwrap())
    }

    /// Polls `usage` until `done` holds, for at most a second.
    async fn usage_until(handle: &ProviderHandle, done: impl Fn(Usage) -> bool) -> Usage {
        let started = Instant::now();
        loop {
            let usage = handle.usage();
            if done(usage) || started.elapsed() > Duration::from_secs(1) {
                return usage;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn slow_call(handle: &ProviderHandle) -> tokio::task::JoinHandle<Result<Vec<String>, ProviderError>> {
        let handle = handle.clone();
        tokio::spawn(async move { handle.list_clusters().await })
    }

    #[tokio::test]
    async fn calls_over_the_rate_wait_their_turn() {
        let limits = Limits { calls: Some(rate(10, 2)), ..Limits::default() };
        let handle = ProviderHandle::new(fake("call-rate", limits).await);
        let started = Instant::now();
        for _ in 0..6 {
            handle.get_zone().await.unwrap();
        }
        // Two at once, then four at one per 100 ms.
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(380), "{elapsed:?}");
        assert_eq!(metric("provider_call_throttled_total", "call-rate"), Some(4.0));
        let waited = metric("provider_call_throttled_seconds_total", "call-rate").unwrap();
        assert!(waited > 0.3 && waited <= elapsed.as_secs_f64(), "{waited}");
    }

    #[tokio::test]
    async fn usage_counts_the_calls_and_memory_of_a_running_call() {
        let handle = ProviderHandle::new(fake("usage", Limits { concurrency: 1, ..Limits::default() }).await);
        assert_eq!(handle.usage(), Usage::default());
        let running = slow_call(&handle);
        let waiting = slow_call(&handle);
        let usage = usage_until(&handle, |usage| usage.calls_waiting == 1 && usage.memory_bytes > 0).await;
        assert_eq!((usage.calls_in_flight, usage.calls_waiting), (1, 1), "{usage:?}");
        assert!(usage.memory_bytes >= 64 << 10, "at least a page: {usage:?}");
        running.await.unwrap().unwrap();
        waiting.await.unwrap().unwrap();
        assert_eq!(handle.usage(), Usage::default());
    }

    #[tokio::test]
    async fn a_swap_to_more_concurrency_lets_new_calls_in_beside_the_old_ones() {
        let handle =
            ProviderHandle::new(fake("swap-concurrency", Limits { concurrency: 1, ..Limits::default() }).await);
        let more = fake("swap-concurrency", Limits { concurrency: 2, ..Limits::default() }).await;
        let old = slow_call(&handle);
        usage_until(&handle, |usage| usage.calls_in_flight == 1).await;
        handle.swap(more);
        let new = [slow_call(&handle), slow_call(&handle)];
        // The old permit and both new ones.
        let usage = usage_until(&handle, |usage| usage.calls_in_flight == 3).await;
        assert_eq!((usage.calls_in_flight, usage.calls_waiting), (3, 0), "{usage:?}");
        old.await.unwrap().unwrap();
        for call in new {
            call.await.unwrap().unwrap();
        }
    }

    #[tokio::test]
    async fn a_swap_to_the_same_limits_keeps_the_permits() {
        let limits = Limits { concurrency: 1, ..Limits::default() };
        let handle = ProviderHandle::new(fake("swap-same", limits.clone()).await);
        let same = fake("swap-same", limits).await;
        let old = slow_call(&handle);
        usage_until(&handle, |usage| usage.calls_in_flight == 1).await;
        handle.swap(same);
        let new = slow_call(&handle);
        tokio::time::sleep(SLOW / 4).await;
        let usage = handle.usage();
        assert_eq!((usage.calls_in_flight, usage.calls_waiting), (1, 1), "{usage:?}");
        old.await.unwrap().unwrap();
        new.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_swap_to_another_call_rate_starts_a_new_bucket() {
        let handle =
            ProviderHandle::new(fake("swap-rate", Limits { calls: Some(rate(1, 1)), ..Limits::default() }).await);
        let other = fake("swap-rate", Limits { calls: Some(rate(1, 5)), ..Limits::default() }).await;
        handle.get_zone().await.unwrap();
        handle.swap(other);
        let started = Instant::now();
        for _ in 0..5 {
            handle.get_zone().await.unwrap();
        }
        assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    }
}
