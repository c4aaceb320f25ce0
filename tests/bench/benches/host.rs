//! The provider host: instantiation plus a trivial call with pooling and
//! on-demand allocation; ensure-load-balancer with 1, 100 and 1000 nodes
//! through the fake provider component against the same provider compiled
//! natively; a call's cost beside the size of the provider's configuration
//! (set-up runs once, not per call); update-load-balancer with 100 and 5000
//! nodes to a provider that reads only their provider IDs; a call on a
//! fresh instance against one on a kept instance, for the Rust and Go
//! fakes; memory per live instance.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use provider_fake::Fake;
use serde_json::json;
use wasm_ccm_bench::{Samples, fakes, load_optimized, micros, nodes, service};
use wasm_ccm_cloud::{Cloud, NodeSet, NodeSnapshot};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_host::{
    Allocation, ChildCompiler, Compiler, Engine, EngineSettings, Limits, LoadedProvider, ProviderHandle, Tier,
};
use wasm_ccm_sdk::native::{self, HttpError, Method, Request, Response};
use wasm_ccm_sdk::types as sdk;
use wasm_ccm_sdk::{LoadBalancer, Provider};
use wasm_ccm_tests::{guest, spec};

const PROBES: usize = 5000;
const ENSURES: usize = 500;
const LIVE_INSTANCES: usize = 200;
const CONFIGURED_CALLS: usize = 500;

/// Instantiation plus `name()`, the cheapest call.
async fn instantiate(allocation: Allocation) -> anyhow::Result<Samples> {
    let engine = Engine::new(EngineSettings { allocation, ..EngineSettings::default() })?;
    let handle = fakes::load(&engine, "provider-fake", json!({}), None, Limits::default()).await?;
    fakes::timed(PROBES, async || Ok(handle.probe().await?)).await
}

/// The fake provider's configuration listing `count` instances.
fn instances(count: usize) -> serde_json::Value {
    let instances: Vec<_> = (0..count)
        .map(|i| {
            json!({
                "name": format!("node-{i}"),
                "id": format!("i-{i}"),
                "zone": "zone-a",
                "region": "region-a",
                "addresses": [{"type": "InternalIP", "address": format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255)}],
            })
        })
        .collect();
    json!({ "instances": instances })
}

/// Loading the fake provider configured with `count` instances, then
/// `instance-exists-by-provider-id`, which needs the parsed configuration.
async fn configured(engine: &Engine, count: usize) -> anyhow::Result<(Duration, Samples)> {
    let started = Instant::now();
    let handle = fakes::load(engine, "provider-fake", instances(count), None, Limits::default()).await?;
    let load = started.elapsed();
    let mut samples = Vec::with_capacity(CONFIGURED_CALLS);
    for _ in 0..CONFIGURED_CALLS {
        let started = Instant::now();
        anyhow::ensure!(handle.instance_exists_by_provider_id("fake://i-0").await?);
        samples.push(started.elapsed());
    }
    Ok((load, Samples::new(samples)))
}

/// What a call costs before and after Cranelift's code replaces Winch's.
struct TierUp {
    /// From the load's start until it serves, on Winch's code.
    serving: Duration,
    /// From then until calls run Cranelift's code.
    window: Duration,
    /// Calls made one at a time in the window.
    calls: usize,
    /// Those calls, on Winch's code.
    on_baseline: Samples,
    /// As many calls afterwards, on Cranelift's code.
    on_optimizing: Samples,
}

/// Loads the fake provider configured with 2000 instances on an engine that
/// compiles in `wasm-ccm`'s compile worker, as `run` does, and calls
/// `instance-exists-by-provider-id` one at a time while Cranelift compiles
/// its snapshot, then as many times after.
async fn tier_up(worker: &std::path::Path) -> anyhow::Result<TierUp> {
    let compiler = Compiler::Child(ChildCompiler::new(worker, ["compile-worker"]));
    let engine = Engine::new(EngineSettings { compiler, ..EngineSettings::default() })?;
    let started = Instant::now();
    let spec = fakes::fake_spec("provider-fake", &instances(2000), None, Limits::default());
    let handle = ProviderHandle::new(LoadedProvider::load(&engine, spec).await?);
    let serving = started.elapsed();
    anyhow::ensure!(handle.current().code() == Tier::Baseline, "the load waited for Cranelift's code");
    let mut on_baseline = Vec::new();
    while handle.current().code() == Tier::Baseline {
        let call = Instant::now();
        anyhow::ensure!(handle.instance_exists_by_provider_id("fake://i-5").await?);
        on_baseline.push(call.elapsed());
    }
    let window = started.elapsed() - serving;
    let calls = on_baseline.len();
    let mut on_optimizing = Vec::new();
    for _ in 0..calls {
        let call = Instant::now();
        anyhow::ensure!(handle.instance_exists_by_provider_id("fake://i-5").await?);
        on_optimizing.push(call.elapsed());
    }
    let (on_baseline, on_optimizing) = (Samples::new(on_baseline), Samples::new(on_optimizing));
    Ok(TierUp { serving, window, calls, on_baseline, on_optimizing })
}

/// `update-load-balancer` with `count` nodes, one of them new since the set
/// given before, to the hostile guest, which reads only the provider IDs.
async fn update_reading_provider_ids(engine: &Engine, count: usize) -> anyhow::Result<Samples> {
    let handle = ProviderHandle::new(load_optimized(engine, spec("ids", guest("guest-hostile"), b"")).await?);
    let mut nodes = nodes(count);
    for (index, node) in nodes.iter_mut().enumerate() {
        node.spec.get_or_insert_default().provider_id = Some(format!("fake://i-{index:05}"));
    }
    let snapshot = |nodes: &[Node]| Arc::new(NodeSnapshot::new(nodes.iter().cloned().map(Arc::new).collect()));
    let set = NodeSet::new(snapshot(&nodes), Some(snapshot(&nodes[1..])));
    let service = service();
    fakes::timed(ENSURES, async || Ok(handle.update_load_balancer(&service, &set).await?)).await
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
    let handle = fakes::load(engine, "provider-fake", config.clone(), Some(&cloud), Limits::default()).await?;
    let (service, nodes) = (service(), nodes(node_count));
    let (sdk_service, sdk_nodes): (sdk::Service, Vec<sdk::Node>) =
        (sdk_service(), nodes.iter().map(sdk_node).collect());
    let nodes = NodeSet::of(nodes);
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
                let sdk_nodes = wasm_ccm_sdk::NodeSet::of(sdk_nodes);
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

/// `ensure-load-balancer` with 100 nodes through `component` (the fake in
/// Rust or Go) given `kept_instances`, one call at a time.
async fn on_kept_instances(engine: &Engine, component: &str, kept_instances: usize) -> anyhow::Result<Samples> {
    let cloud = FakeCloud::start().await?;
    let config = json!({"cloud": cloud.url(), "loadBalancerPool": ["198.18.0.0/16"]});
    let limits = Limits { kept_instances, ..Limits::default() };
    let handle = fakes::load(engine, component, config, Some(&cloud), limits).await?;
    let (service, nodes) = (service(), NodeSet::of(nodes(100)));
    fakes::timed(ENSURES, async || Ok(handle.ensure_load_balancer(&service, &nodes).await.map(drop)?)).await
}

fn main() -> anyhow::Result<()> {
    wasm_ccm_tests::install_crypto_provider();
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

        println!("\n## A call beside the provider's configuration ({CONFIGURED_CALLS} calls each)\n");
        println!("| instances configured | load, until Cranelift's code | call median | call p99 |\n|---|---|---|---|");
        let mut medians = Vec::new();
        for count in [1, 2000] {
            let (load, calls) = configured(&engine, count).await?;
            println!("| {count} | {} | {} | {} |", micros(load), micros(calls.median()), micros(calls.p99()));
            medians.push(calls.median().as_secs_f64());
        }
        println!("\nCall median with 2000 instances / with 1: {:.2}", medians[1] / medians[0]);

        println!("\n## update-load-balancer to a provider reading only provider IDs ({ENSURES} calls each)\n");
        println!("| nodes | median | p99 |\n|---|---|---|");
        let mut medians = Vec::new();
        for count in [100, 5000] {
            let calls = update_reading_provider_ids(&engine, count).await?;
            println!("| {count} | {} | {} |", micros(calls.median()), micros(calls.p99()));
            medians.push(calls.median().as_secs_f64());
        }
        println!("\nMedian with 5000 nodes / with 100: {:.2}", medians[1] / medians[0]);

        println!("\n## Calls while Cranelift's code is compiled (the fake with 2000 instances configured)\n");
        println!(
            "Compiled in the compile worker of {}, as `run` compiles; `instance-exists-by-provider-id` one at a \
             time on Winch's code until Cranelift's replaces it, then as many calls on Cranelift's.\n",
            wasm_ccm_bench::release_binary()?.display()
        );
        println!(
            "| load | serving after | Cranelift's code after that | calls on Winch's code | median | p99 | on Cranelift's: median | p99 |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for round in 1..=3 {
            let tier_up = tier_up(&wasm_ccm_bench::release_binary()?).await?;
            println!(
                "| {round} | {:.1} ms | {:.1} ms | {} | {} | {} | {} | {} |",
                tier_up.serving.as_secs_f64() * 1e3,
                tier_up.window.as_secs_f64() * 1e3,
                tier_up.calls,
                micros(tier_up.on_baseline.median()),
                micros(tier_up.on_baseline.p99()),
                micros(tier_up.on_optimizing.median()),
                micros(tier_up.on_optimizing.p99()),
            );
        }

        println!("\n## A fresh instance per call against a kept one (ensure-load-balancer, 100 nodes, {ENSURES} calls)\n");
        println!("| provider | fresh: median | p99 | kept: median | p99 | kept / fresh |\n|---|---|---|---|---|---|");
        for component in ["provider-fake", "provider-fake-go"] {
            let fresh = on_kept_instances(&engine, component, 0).await?;
            // A Go instance kept long enough traps when its collector reads
            // the wall clock inside `cabi_realloc`: say so rather than stop.
            match on_kept_instances(&engine, component, 1).await {
                Ok(kept) => println!(
                    "| {component} | {} | {} | {} | {} | {:.2} |",
                    micros(fresh.median()),
                    micros(fresh.p99()),
                    micros(kept.median()),
                    micros(kept.p99()),
                    kept.median().as_secs_f64() / fresh.median().as_secs_f64()
                ),
                Err(err) => println!(
                    "| {component} | {} | {} | failed: {} | | |",
                    micros(fresh.median()),
                    micros(fresh.p99()),
                    format!("{err:#}").lines().last().unwrap_or_default().trim()
                ),
            }
        }

        let per_instance = fakes::memory_per_instance(&engine, "provider-fake", LIVE_INSTANCES).await?;
        let reserved = engine.settings().max_memory;
        println!("\n## Memory per live instance ({LIVE_INSTANCES} instances alive at once)\n");
        println!(
            "Resident: {:.0} KiB per instance (address space reserved per pool slot: {} MiB, not resident).",
            per_instance as f64 / 1024.0,
            reserved >> 20
        );
        anyhow::Ok(())
    })
}
