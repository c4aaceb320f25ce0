//! A cluster for end-to-end tests: an API server (the harness in this
//! process, or a real kube-apiserver, see [`Backend`]), the fake cloud, a
//! provider component (the fake one, or any other from its
//! [`ProviderSpec`]) and the controllers, in this process, with helpers to
//! create nodes and Services and to wait for what the controllers do.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Service, ServicePort};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use wasm_ccm_controllers::{ControllerManager, Metrics, Readiness, Settings, UNINITIALIZED_TAINT};
use wasm_ccm_fake_cloud::{FakeCloud, Object};
use wasm_ccm_host::{ProviderHandle, ProviderSpec};

use crate::backend::{Backend, TestApiServer};
use crate::{ServiceFixture, ServicePortFixture, allow, guest, load, spec};

/// How long a test waits for the controllers before it fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Settings with short periods, so that tests do not wait long.
pub fn fast_settings() -> Settings {
    Settings {
        cluster_cidrs: vec!["10.244.0.0/16".parse().expect("a network")],
        node_monitor_period: Duration::from_millis(200),
        node_status_update_frequency: Duration::from_millis(500),
        route_reconciliation_period: Duration::from_millis(300),
        ..Settings::default()
    }
}

/// The keys of the node's cloud taints (`node.cloudprovider.kubernetes.io/`),
/// those the controllers add and remove; a real API server's admission also
/// taints a node created not Ready with `node.kubernetes.io/not-ready`.
pub fn cloud_taints(node: &Node) -> Vec<String> {
    let taints = node.spec.iter().flat_map(|spec| spec.taints.iter().flatten());
    taints.map(|taint| taint.key.clone()).filter(|key| key.starts_with("node.cloudprovider.kubernetes.io/")).collect()
}

/// A node to create.
#[derive(Debug, Clone)]
pub struct NewNode {
    /// Its name, also its instance's in the fake cloud.
    pub name: String,
    /// Whether its Ready condition is True.
    pub ready: bool,
    /// Whether it carries the uninitialized taint.
    pub uninitialized: bool,
    /// Its pod CIDR.
    pub pod_cidr: Option<String>,
    /// Its labels.
    pub labels: Vec<(String, String)>,
    /// The `alpha.kubernetes.io/provided-node-ip` annotation.
    pub provided_ip: Option<String>,
}

impl NewNode {
    /// A Ready, initialised node without a pod CIDR.
    pub fn ready(name: &str) -> Self {
        NewNode {
            name: name.into(),
            ready: true,
            uninitialized: false,
            pod_cidr: None,
            labels: Vec::new(),
            provided_ip: None,
        }
    }
}

/// The cluster; the controllers stop when it is dropped.
pub struct TestCluster {
    /// The API server.
    pub api: TestApiServer,
    /// The fake provider's cloud; idle when the cluster runs another
    /// provider.
    pub cloud: FakeCloud,
    /// The controllers' client: deploy/'s in-cluster identity on a real API
    /// server.
    pub client: kube::Client,
    /// A client allowed everything, for the test's own requests.
    pub admin: kube::Client,
    /// The provider the controllers call.
    pub provider: ProviderHandle,
    /// The controllers' metrics.
    pub metrics: Metrics,
    /// Whether the controllers are ready.
    pub readiness: Readiness,
    settings: Settings,
    stop: CancellationToken,
    controllers: Option<JoinHandle<()>>,
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

tokio::task_local! {
    /// The fake provider component of the clusters a test starts, for a
    /// test that runs another one: see [`fake_component`].
    pub static FAKE_COMPONENT: &'static str;
}

/// The crate of the fake provider component clusters run: the test's
/// [`FAKE_COMPONENT`], or else `WASM_CCM_TEST_FAKE` (`provider-fake-go` runs
/// every end-to-end test with the Go fake), or else `provider-fake`.
pub fn fake_component() -> String {
    FAKE_COMPONENT
        .try_with(|component| (*component).to_owned())
        .unwrap_or_else(|_| std::env::var("WASM_CCM_TEST_FAKE").unwrap_or_else(|_| "provider-fake".to_owned()))
}

/// The fake provider's configuration for `cloud`, with `extra` merged in.
pub fn fake_config(cloud: &FakeCloud, extra: &Value) -> Vec<u8> {
    let mut config = json!({"cloud": cloud.url(), "loadBalancerPool": ["198.51.100.0/24"]});
    if let (Some(config), Some(extra)) = (config.as_object_mut(), extra.as_object()) {
        config.extend(extra.clone());
    }
    config.to_string().into_bytes()
}

impl TestCluster {
    /// Starts everything against `backend`'s API server, the fake provider
    /// ([`fake_component`]) configured with `config` (its `instances`,
    /// `faults`...), and the controllers with `settings`.
    pub async fn start(backend: &Backend, config: Value, settings: Settings) -> Self {
        let cloud = FakeCloud::start().await.expect("the fake cloud starts");
        let mut fake = spec("fake", guest(&fake_component()), &fake_config(&cloud, &config));
        fake.allow_list = allow(&[&cloud.url()]);
        Self::launch(backend, cloud, fake, settings).await
    }

    /// Starts everything with the provider `spec` (its component,
    /// configuration, credentials and allow-list) instead of the fake one,
    /// and the controllers with `settings`. The spec's cluster name becomes
    /// the settings' one, as `wasm-ccm run` gives its `--cluster-name` to
    /// both. The fake cloud runs too, unused unless `spec` reaches it.
    pub async fn start_with_provider(backend: &Backend, spec: ProviderSpec, settings: Settings) -> Self {
        let cloud = FakeCloud::start().await.expect("the fake cloud starts");
        Self::launch(backend, cloud, spec, settings).await
    }

    async fn launch(backend: &Backend, cloud: FakeCloud, mut spec: ProviderSpec, settings: Settings) -> Self {
        crate::init_logging();
        let api = TestApiServer::start(backend).await;
        let client = api.controller_client().await;
        let admin = api.admin();
        spec.cluster_name = settings.cluster_name.clone();
        let provider = ProviderHandle::new(load(spec).await);
        let mut cluster = TestCluster {
            api,
            cloud,
            client,
            admin,
            provider,
            metrics: Metrics::default(),
            readiness: Readiness::default(),
            settings,
            stop: CancellationToken::new(),
            controllers: None,
        };
        cluster.start_controllers().await;
        cluster
    }

    /// Starts the controllers, and waits until they are ready.
    pub async fn start_controllers(&mut self) {
        self.stop = CancellationToken::new();
        let manager = ControllerManager::new(
            self.client.clone(),
            self.provider.clone(),
            self.settings.clone(),
            self.metrics.clone(),
        );
        let (stop, readiness) = (self.stop.clone(), self.readiness.clone());
        self.controllers = Some(tokio::spawn(async move {
            manager.run(stop, readiness).await.expect("the controllers start");
        }));
        let readiness = self.readiness.clone();
        self.wait("the controllers to be ready", || {
            let ready = readiness.is_ready();
            async move { ready.then_some(()) }
        })
        .await;
    }

    /// Stops the controllers and waits for them to finish.
    pub async fn stop_controllers(&mut self) {
        self.stop.cancel();
        if let Some(controllers) = self.controllers.take() {
            controllers.await.expect("the controllers stop cleanly");
        }
    }

    /// Stops the controllers at once, as a crash would, without letting
    /// work in flight finish.
    pub fn kill_controllers(&mut self) {
        if let Some(controllers) = self.controllers.take() {
            controllers.abort();
        }
        self.stop.cancel();
    }

    /// Reloads the fake provider with another configuration and swaps it in.
    pub async fn reconfigure(&self, config: Value) {
        let mut fake = spec("fake", guest(&fake_component()), &fake_config(&self.cloud, &config));
        fake.allow_list = allow(&[&self.cloud.url()]);
        fake.cluster_name = self.settings.cluster_name.clone();
        self.provider.swap(load(fake).await);
    }

    /// Polls `check` until it gives a value, or fails the test after
    /// [`PATIENCE`].
    pub async fn wait<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(value) = check().await {
                return value;
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The Nodes API.
    pub fn nodes(&self) -> Api<Node> {
        Api::all(self.admin.clone())
    }

    /// The Services API of the `default` namespace.
    pub fn services(&self) -> Api<Service> {
        Api::namespaced(self.admin.clone(), "default")
    }

    /// Creates a node, with its status.
    pub async fn create_node(&self, node: NewNode) -> Node {
        let taints = if node.uninitialized {
            json!([{"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}])
        } else {
            json!([])
        };
        let mut annotations = serde_json::Map::new();
        if let Some(ip) = &node.provided_ip {
            annotations.insert("alpha.kubernetes.io/provided-node-ip".into(), json!(ip));
        }
        let labels: serde_json::Map<String, Value> =
            node.labels.iter().map(|(key, value)| (key.clone(), json!(value))).collect();
        // Registered with its status, as kubelet does.
        let object: Node = serde_json::from_value(json!({
            "metadata": {"name": node.name, "labels": labels, "annotations": annotations},
            "spec": {"taints": taints, "podCIDR": node.pod_cidr, "podCIDRs": node.pod_cidr.iter().collect::<Vec<_>>()},
            "status": {
                "conditions": [{"type": "Ready", "status": if node.ready { "True" } else { "False" }, "reason": "Test"}],
                "addresses": [{"type": "Hostname", "address": node.name}],
            },
        }))
        .expect("a node");
        self.nodes().create(&PostParams::default(), &object).await.expect("the node is created")
    }

    /// Sets a node's Ready condition.
    pub async fn set_ready(&self, name: &str, ready: bool) {
        let status = json!({"status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }, "reason": "Test"}]}});
        self.nodes().patch_status(name, &PatchParams::default(), &Patch::Strategic(status)).await.expect("ready");
    }

    /// Creates a LoadBalancer Service in `default` with TCP `ports`.
    pub async fn create_service(&self, name: &str, ports: &[u16]) -> Service {
        let ports = ports.iter().map(|port| ServicePort::test(&format!("p{port}"), i32::from(*port)));
        let service = Service::test(name).with_ports(ports);
        self.services().create(&PostParams::default(), &service).await.expect("the service is created")
    }

    /// Waits until the Service has an ingress, and returns its IP.
    pub async fn ingress(&self, name: &str) -> String {
        let services = self.services();
        self.wait(&format!("an ingress for {name}"), || {
            let services = services.clone();
            async move {
                let service = services.get_opt(name).await.ok().flatten()?;
                service.status?.load_balancer?.ingress?.first()?.ip.clone()
            }
        })
        .await
    }

    /// The fake cloud's load balancer of the Service with `uid`.
    pub fn load_balancer(&self, uid: &str) -> Option<Object> {
        let name: String = std::iter::once('a').chain(uid.chars().filter(|c| *c != '-')).take(32).collect();
        self.cloud.objects("load-balancers").into_iter().find(|object| object.key == name)
    }

    /// The events whose reason is `reason`, about any object.
    pub async fn events(&self, reason: &str) -> Vec<Event> {
        let events: Api<Event> = Api::all(self.admin.clone());
        let all = events.list(&ListParams::default()).await.expect("events");
        all.items.into_iter().filter(|event| event.reason.as_deref() == Some(reason)).collect()
    }

    /// The sum of the controllers' counter `name` (`reconcile_errors`)
    /// over the series with every one of `labels`.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let mut registry = prometheus_client::registry::Registry::default();
        self.metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("the metrics encode");
        let series = format!("{name}_total{{");
        let labels: Vec<String> = labels.iter().map(|(key, value)| format!("{key}=\"{value}\"")).collect();
        text.lines()
            .filter(|line| line.starts_with(&series) && labels.iter().all(|label| line.contains(label)))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// How many times an event with `reason` was recorded, repeats counted.
    pub async fn event_count(&self, reason: &str) -> i32 {
        self.events(reason).await.iter().map(|event| event.count.unwrap_or(1)).sum()
    }
}
