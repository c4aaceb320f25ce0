//! The controllers at scale: 1000 LoadBalancer Services on 100 nodes, served
//! by the `wasm-ccm` binary (run as a child process, at default settings)
//! against the API server harness with the fake provider; once with no
//! provider latency and once with 50 ms per ensure. Then a node sync storm:
//! 10 nodes added while the 1000 Services exist.
//!
//! Needs `target/release/wasm-ccm` (`cargo build --release -p wasm-ccm`).

use std::process::Child;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::Api;
use serde_json::{Value, json};
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_bench::services::{create_all, service, wait_for_ingress};
use wasm_ccm_bench::{peak_memory_kib, wasm_ccm_run};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::repository;

const SERVICES: usize = 1000;
const NODES: usize = 100;
const STORM: usize = 10;
const TIMEOUT: Duration = Duration::from_secs(300);

fn node(index: usize) -> Node {
    let name = format!("node-{index:03}");
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": format!("fake://i-{index:03}")},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": format!("10.0.{}.{}", index / 256, index % 256)}],
        },
    }))
    .expect("a node")
}

struct Run {
    ready_after: Duration,
    requests: u64,
    breakdown: String,
    storm: Duration,
    peak_kib: u64,
}

async fn run(faults: Value) -> anyhow::Result<Run> {
    let api = ApiServer::start().await?;
    let cloud = FakeCloud::start().await?;
    let client = api.client().await;
    create_all(&Api::<Node>::all(client.clone()), (0..NODES).map(node).collect()).await?;
    create_all(&Api::<Service>::namespaced(client.clone(), "default"), (0..SERVICES).map(service).collect()).await?;

    let dir = std::env::temp_dir().join(format!("wasm-ccm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig)?;
    let config = dir.join("fake.json");
    std::fs::write(
        &config,
        json!({"cloud": cloud.url(), "loadBalancerPool": ["10.128.0.0/16"], "faults": faults}).to_string(),
    )?;
    let mut command = wasm_ccm_run(&kubeconfig)?;
    command
        .arg("--provider")
        .arg(repository().join("target/wasm/provider_fake.wasm"))
        .arg("--cloud-config")
        .arg(&config)
        .args(["--provider-allow", &cloud.url()]);

    api.reset_requests();
    let started = Instant::now();
    let mut child = command.spawn()?;
    let result = measure(&api, &cloud, &client, started, &mut child).await;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure(
    api: &ApiServer,
    cloud: &FakeCloud,
    client: &kube::Client,
    started: Instant,
    child: &mut Child,
) -> anyhow::Result<Run> {
    let ready_after = wait_for_ingress(api, SERVICES, started, TIMEOUT, child).await?;
    let counts = api.requests();
    let (requests, breakdown) = (counts.total(), counts.to_string());

    let storm_started = Instant::now();
    create_all(&Api::<Node>::all(client.clone()), (NODES..NODES + STORM).map(node).collect()).await?;
    loop {
        let balancers = cloud.objects("load-balancers");
        let updated = balancers
            .iter()
            .filter(|balancer| balancer.value["nodes"].as_array().is_some_and(|nodes| nodes.len() == NODES + STORM))
            .count();
        if updated == SERVICES {
            break;
        }
        anyhow::ensure!(storm_started.elapsed() < TIMEOUT, "only {updated} load balancers have the new nodes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let storm = storm_started.elapsed();
    Ok(Run { ready_after, requests, breakdown, storm, peak_kib: peak_memory_kib(child.id()) })
}

fn report(label: &str, run: &Run) {
    println!(
        "| {label} | {:.2} s | {:.0} | {} | {:.2} s | {} MiB |",
        run.ready_after.as_secs_f64(),
        SERVICES as f64 / run.ready_after.as_secs_f64(),
        run.requests,
        run.storm.as_secs_f64(),
        run.peak_kib / 1024,
    );
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let fast = run(json!({})).await?;
        let slow = run(json!({"load-balancer.ensure": {"latencyMs": 50}})).await?;
        println!("## {SERVICES} LoadBalancer Services on {NODES} nodes, default settings\n");
        println!(
            "| provider | all ingress after | services/s | API requests | {STORM}-node storm converged | peak RSS |"
        );
        println!("|---|---|---|---|---|---|");
        report("no latency", &fast);
        report("50 ms per ensure", &slow);
        println!("\nAPI requests until all had an ingress, no latency:\n\n```\n{}```", fast.breakdown);
        anyhow::Ok(())
    })
}
