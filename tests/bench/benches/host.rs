//! The provider host: instantiation plus a trivial call with pooling and
//! on-demand allocation; ensure-load-balancer with 1, 100 and 1000 nodes
//! through the fake provider component against the same provider compiled
//! natively; memory per live instance.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeStatus, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use provider_fake::Fake;
use serde_json::json;
use wasm_ccm_bench::{Samples, micros, resident_bytes};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_host::{Allocation, Engine, EngineSettings, Limits, LoadedProvider, ProviderHandle};
use wasm_ccm_sdk::native::{self, HttpError, Method, Request, Response};
use wasm_ccm_sdk::types as sdk;
use wasm_ccm_sdk::{LoadBalancer, Provider};
use wasm_ccm_tests::{ServiceFixture, ServicePortFixture, allow, guest, spec};

const PROBES: usize = 5000;
const ENSURES: usize = 500;
const LIVE_INSTANCES: usize = 200;

async fn fake(
    engine: &Engine,
    config: serde_json::Value,
    cloud: Option<&FakeCloud>,
    limits: Limits,
) -> anyhow::Result<ProviderHandle> {
    let mut spec = spec("fake", guest("provider-fake"), config.to_string().as_bytes());
    spec.limits = limits;
    if let Some(cloud) = cloud {
        spec.allow_list = allow(&[&cloud.url()]);
    }
    Ok(ProviderHandle::new(LoadedProvider::load(engine, spec).await?))
}

/// Instantiation plus `name()`, the cheapest call.
async fn instantiate(allocation: Allocation) -> anyhow::Result<Samples> {
    let engine = Engine::new(EngineSettings { allocation, ..EngineSettings::default() })?;
    let handle = fake(&engine, json!({}), None, Limits::default()).await?;
    for _ in 0..200 {
        handle.probe().await?;
    }
    let mut samples = Vec::with_capacity(PROBES);
    for _ in 0..PROBES {
        let started = Instant::now();
        handle.probe().await?;
        samples.push(started.elapsed());
    }
    Ok(Samples::new(samples))
}

/// Sends the natively running provider's requests with reqwest, as the
/// host does for components.
struct NativeHttp {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl native::Host for NativeHttp {
    fn send(&self, request: &Request) -> Result<Response, HttpError> {
        let method = match request.method {
            Method::Get => reqwest::Method::GET,
            Method::Put => reqwest::Method::PUT,
            Method::Delete => reqwest::Method::DELETE,
            Method::Post => reqwest::Method::POST,
            other => return Err(HttpError::InvalidRequest(format!("{other:?}"))),
        };
        let mut builder = self.client.request(method, &request.url).body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        self.runtime.block_on(async {
            let response = builder.send().await.map_err(|err| HttpError::Transport(err.to_string()))?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or_default().to_owned()))
                .collect();
            let body = response.bytes().await.map_err(|err| HttpError::Transport(err.to_string()))?.to_vec();
            Ok(Response { status, headers, body })
        })
    }
}

fn nodes(count: usize) -> Vec<Node> {
    (0..count)
        .map(|i| Node {
            metadata: ObjectMeta {
                name: Some(format!("node-{i:04}")),
                uid: Some(format!("00000000-0000-0000-0000-{i:012}")),
                labels: Some([("kubernetes.io/hostname".to_owned(), format!("node-{i:04}"))].into()),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            status: Some(NodeStatus {
                addresses: Some(vec![NodeAddress {
                    type_: "InternalIP".into(),
                    address: format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        })
        .collect()
}

fn sdk_node(node: &Node) -> sdk::Node {
    let metadata = &node.metadata;
    sdk::Node {
        name: metadata.name.clone().unwrap_or_default(),
        uid: metadata.uid.clone().unwrap_or_default(),
        provider_id: None,
        labels: metadata
            .labels
            .iter()
            .flatten()
            .map(|(key, value)| sdk::KeyValue { key: key.clone(), value: value.clone() })
            .collect(),
        annotations: Vec::new(),
        addresses: node
            .status
            .iter()
            .flat_map(|status| status.addresses.iter().flatten())
            .map(|address| sdk::NodeAddress {
                address_type: sdk::NodeAddressType::InternalIp,
                address: address.address.clone(),
            })
            .collect(),
        pod_cidrs: Vec::new(),
        conditions: Vec::new(),
        taints: Vec::new(),
    }
}

fn service() -> Service {
    Service::test("web")
        .with_namespace("bench")
        .with_uid("9d0b5d7e-0000-4000-8000-000000000001")
        .with_ports([ServicePort::test("http", 80).with_node_port(30080)])
}

fn sdk_service() -> sdk::Service {
    sdk::Service {
        name: "web".into(),
        namespace: "bench".into(),
        uid: "9d0b5d7e-0000-4000-8000-000000000001".into(),
        labels: Vec::new(),
        annotations: Vec::new(),
        service_type: sdk::ServiceType::LoadBalancer,
        ports: vec![sdk::ServicePort {
            name: "http".into(),
            protocol: sdk::Protocol::Tcp,
            port: 80,
            node_port: Some(30080),
            app_protocol: None,
        }],
        load_balancer_ip: None,
        load_balancer_source_ranges: Vec::new(),
        external_traffic_policy: sdk::TrafficPolicy::Cluster,
        health_check_node_port: None,
        ip_families: Vec::new(),
        session_affinity: sdk::SessionAffinity::None,
        session_affinity_timeout_seconds: None,
        load_balancer_class: None,
    }
}

/// Ensure through the component and natively, same provider, same cloud.
async fn ensure(engine: &Engine, node_count: usize) -> anyhow::Result<(Samples, Samples)> {
    let cloud = FakeCloud::start().await?;
    let config = json!({"cloud": cloud.url(), "loadBalancerPool": ["198.18.0.0/16"]});
    let handle = fake(engine, config.clone(), Some(&cloud), Limits::default()).await?;
    let (service, nodes) = (service(), nodes(node_count));
    let (sdk_service, sdk_nodes): (sdk::Service, Vec<sdk::Node>) =
        (sdk_service(), nodes.iter().map(sdk_node).collect());
    handle.ensure_load_balancer(&service, &nodes).await?;

    let mut component = Vec::with_capacity(ENSURES);
    let mut native_runs = Vec::with_capacity(ENSURES);
    let config = Arc::<[u8]>::from(config.to_string().into_bytes());
    for _ in 0..ENSURES {
        let started = Instant::now();
        handle.ensure_load_balancer(&service, &nodes).await?;
        component.push(started.elapsed());

        let (config, sdk_service, sdk_nodes) = (config.clone(), sdk_service.clone(), sdk_nodes.clone());
        native_runs.push(
            tokio::task::spawn_blocking(move || {
                let started = Instant::now();
                let fake = Fake::new(&config, "bench").expect("the native provider starts");
                fake.ensure_load_balancer("bench", &sdk_service, &sdk_nodes).expect("native ensure");
                started.elapsed()
            })
            .await?,
        );
    }
    Ok((Samples::new(component), Samples::new(native_runs)))
}

/// Resident memory per instance alive at once, each held by a slow call.
async fn memory_per_instance() -> anyhow::Result<(u64, u64)> {
    let engine = Engine::new(EngineSettings::default())?;
    let config = json!({
        "instances": [{"name": "node-a", "id": "i-a"}],
        "faults": {"instances-v2.exists": {"latencyMs": 1500}},
    });
    let limits = Limits { concurrency: LIVE_INSTANCES, ..Limits::default() };
    let handle = fake(&engine, config, None, limits).await?;
    let node = nodes(1).remove(0);
    handle.probe().await?;
    let before = resident_bytes();
    let calls: Vec<_> = (0..LIVE_INSTANCES)
        .map(|_| {
            let (handle, node) = (handle.clone(), node.clone());
            tokio::spawn(async move { handle.instance_exists(&node).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(750)).await;
    let during = resident_bytes();
    for call in calls {
        call.await??;
    }
    let pooled_virtual_per_instance = engine.settings().max_memory;
    Ok((during.saturating_sub(before) / LIVE_INSTANCES as u64, pooled_virtual_per_instance))
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    native::set_host(Arc::new(NativeHttp { client: reqwest::Client::new(), runtime: runtime.handle().clone() }));
    runtime.block_on(async {
        println!("## Instantiate plus a trivial call ({PROBES} calls, one at a time)\n");
        println!("| allocation | median | p99 |\n|---|---|---|");
        let pooled = instantiate(Allocation::Pooling { instances: 1000 }).await?;
        let on_demand = instantiate(Allocation::OnDemand).await?;
        println!("| pooling | {} | {} |", micros(pooled.median()), micros(pooled.p99()));
        println!("| on-demand | {} | {} |", micros(on_demand.median()), micros(on_demand.p99()));
        println!(
            "\nOn-demand median / pooling median: {:.2}\n",
            on_demand.median().as_secs_f64() / pooled.median().as_secs_f64()
        );

        println!("## ensure-load-balancer, component against native ({ENSURES} calls each, medians)\n");
        println!("| nodes | component | native | extra |\n|---|---|---|---|");
        let engine = Engine::new(EngineSettings::default())?;
        for count in [1, 100, 1000] {
            let (component, native) = ensure(&engine, count).await?;
            let extra = component.median().saturating_sub(native.median());
            println!("| {count} | {} | {} | {} |", micros(component.median()), micros(native.median()), micros(extra));
        }

        let (per_instance, reserved) = memory_per_instance().await?;
        println!("\n## Memory per live instance ({LIVE_INSTANCES} instances alive at once)\n");
        println!(
            "Resident: {:.0} KiB per instance (address space reserved per pool slot: {} MiB, not resident).",
            per_instance as f64 / 1024.0,
            reserved >> 20
        );
        anyhow::Ok(())
    })
}
