//! A zone outage, side by side with upstream, on a real kube-apiserver:
//! every node NotReady, as after a zone outage, and the node lifecycle asking
//! the cloud about each of them every monitor period (5 s) for as long as
//! it lasts. Upstream's cloud-controller-manager with its in-memory fake
//! provider (tuned as in the controllers benchmark), and the `wasm-ccm`
//! binary with the fake provider answering in batches (its default) and one
//! node at a time (`maxBatch: 0`), as upstream asks.
//!
//! Each run gets a fresh control plane with the NotReady nodes, starts the
//! controller manager, lets it settle for 15 s, then measures a minute of
//! outage: the controller's CPU seconds, and for wasm-ccm, from its
//! `/metrics`, the lifecycle's passes and its provider calls per pass.
//!
//! Needs what the controllers benchmark needs. `BENCH_OUTAGE_NODES` lists
//! the node counts (default `2000,5000`); `BENCH_OUTAGE_SECONDS` the
//! measured time (default 60).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use serde_json::json;
use wasm_ccm_bench::services::create_all;
use wasm_ccm_bench::{UPSTREAM_TUNED, cpu_time, lifecycle_passes, metric_sum, release_binary, upstream_ccm_run};
use wasm_ccm_envtest::{Assets, ControlPlane, Identity, Options};
use wasm_ccm_tests::{free_port, repository};

const SETTLE: Duration = Duration::from_secs(15);

/// Who runs the node lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contender {
    /// Upstream, tuned as in the controllers benchmark.
    Upstream,
    /// wasm-ccm, the fake provider answering in batches of `max_batch`
    /// nodes, or one node at a time when 0.
    WasmCcm { max_batch: usize },
}

impl Contender {
    fn label(self) -> String {
        match self {
            Contender::Upstream => "upstream, in-memory fake".to_owned(),
            Contender::WasmCcm { max_batch: 0 } => "wasm-ccm, one node at a time".to_owned(),
            Contender::WasmCcm { max_batch } => format!("wasm-ccm, batches of {max_batch}"),
        }
    }

    /// Starts it against `plane` with `nodes` machines, its files in
    /// `dir`; for wasm-ccm, its admin server (plain HTTP) on `admin`.
    fn spawn(self, plane: &ControlPlane, nodes: usize, dir: &Path, admin: u16) -> anyhow::Result<Child> {
        let kubeconfig = dir.join("kubeconfig");
        let identity = match self {
            Contender::Upstream => Identity::UpstreamControllerManager,
            Contender::WasmCcm { .. } => Identity::CloudControllerManager,
        };
        plane.write_kubeconfig(identity, &kubeconfig)?;
        let log = std::fs::File::create(dir.join("controller.log"))?;
        let mut command = match self {
            Contender::WasmCcm { max_batch } => {
                let config = dir.join("fake.json");
                let instances: Vec<_> = (0..nodes)
                    .map(|index| json!({"name": format!("node-{index:04}"), "id": format!("i-{index:04}")}))
                    .collect();
                let fake = json!({"statelessLoadBalancers": true, "instances": instances, "maxBatch": max_batch});
                std::fs::write(&config, fake.to_string())?;
                let mut command = Command::new(release_binary()?);
                command
                    .args(["run", "--log-level", "warn", "--admin-plain-http", "--bind-address", "127.0.0.1"])
                    .args(["--secure-port", &admin.to_string(), "--kubeconfig"])
                    .arg(&kubeconfig)
                    .arg("--provider")
                    .arg(repository().join("target/wasm/provider_fake.wasm"))
                    .arg("--cloud-config")
                    .arg(&config);
                command
            }
            Contender::Upstream => {
                let mut command = upstream_ccm_run(&kubeconfig)?;
                command.args(UPSTREAM_TUNED);
                command
            }
        };
        command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        Ok(command.spawn()?)
    }
}

/// A NotReady node, as after a zone outage: no Ready condition, no address.
fn node(index: usize) -> Node {
    let name = format!("node-{index:04}");
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": format!("fake://i-{index:04}")},
    }))
    .expect("a node")
}

/// What wasm-ccm's `/metrics` says of the lifecycle: passes that asked the
/// cloud, and provider calls of the lifecycle's questions.
fn lifecycle_counts(port: u16) -> anyhow::Result<(f64, f64)> {
    let passes = lifecycle_passes(port)?;
    let calls = ["instances-batch.states", "instances-v2.exists", "instances-v2.shutdown"]
        .iter()
        .map(|function| {
            metric_sum(
                port,
                &format!("provider_call_duration_seconds_count{{provider=\"provider_fake\",function=\"{function}\""),
            )
        })
        .sum::<anyhow::Result<f64>>()?;
    Ok((passes, calls))
}

/// One run's figures: CPU seconds per minute of outage, and for wasm-ccm
/// passes and provider calls per pass.
struct Run {
    cpu_per_minute: f64,
    passes: Option<f64>,
    calls_per_pass: Option<f64>,
    nodes_left: usize,
}

async fn run(assets: &Assets, contender: Contender, nodes: usize, measured: Duration) -> anyhow::Result<Run> {
    let plane = ControlPlane::start(assets, Options { audit: false }).await?;
    let admin_client = plane.client(Identity::Admin).await?;
    let api = Api::<Node>::all(admin_client);
    create_all(&api, (0..nodes).map(node).collect()).await?;
    let dir = tempfile::Builder::new().prefix("wasm-ccm-outage-").tempdir()?;
    let port = free_port()?;
    let mut child = contender.spawn(&plane, nodes, dir.path(), port)?;
    let result = async {
        tokio::time::sleep(SETTLE).await;
        anyhow::ensure!(child.try_wait()?.is_none(), "the controller manager exited");
        let wasm = matches!(contender, Contender::WasmCcm { .. });
        let before = if wasm { Some(lifecycle_counts(port)?) } else { None };
        let cpu_before = cpu_time(&child.id().to_string());
        tokio::time::sleep(measured).await;
        let cpu = (cpu_time(&child.id().to_string()) - cpu_before).as_secs_f64();
        let after = if wasm { Some(lifecycle_counts(port)?) } else { None };
        anyhow::ensure!(child.try_wait()?.is_none(), "the controller manager exited");
        let (passes, calls_per_pass) = match (before, after) {
            (Some((passes_before, calls_before)), Some((passes_after, calls_after))) => {
                let passes = passes_after - passes_before;
                (Some(passes), Some((calls_after - calls_before) / passes.max(1.0)))
            }
            _ => (None, None),
        };
        let nodes_left = api.list_metadata(&Default::default()).await?.items.len();
        Ok(Run { cpu_per_minute: cpu * 60.0 / measured.as_secs_f64(), passes, calls_per_pass, nodes_left })
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    if result.is_err() {
        let log = std::fs::read_to_string(dir.path().join("controller.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        eprintln!("{}: the end of the controller's log:\n{}", contender.label(), tail.join("\n"));
    }
    result
}

fn main() -> anyhow::Result<()> {
    let assets = Assets::find_or_skip("the outage benchmark")?
        .ok_or_else(|| anyhow::anyhow!("set KUBEBUILDER_ASSETS or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD"))?;
    let counts: Vec<usize> = std::env::var("BENCH_OUTAGE_NODES")
        .unwrap_or_else(|_| "2000,5000".to_owned())
        .split(',')
        .map(|count| count.trim().parse().map_err(|_| anyhow::anyhow!("BENCH_OUTAGE_NODES: {count:?}")))
        .collect::<anyhow::Result<_>>()?;
    let seconds: u64 = std::env::var("BENCH_OUTAGE_SECONDS").ok().and_then(|text| text.parse().ok()).unwrap_or(60);
    let measured = Duration::from_secs(seconds);
    let contenders = [Contender::Upstream, Contender::WasmCcm { max_batch: 500 }, Contender::WasmCcm { max_batch: 0 }];
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        for nodes in counts {
            println!("## {nodes} NotReady nodes, {seconds} s of outage after {} s\n", SETTLE.as_secs());
            println!(
                "| controller | CPU per minute of outage | lifecycle passes | provider calls per pass | nodes left |"
            );
            println!("|---|---|---|---|---|");
            let mut upstream_cpu = None;
            let mut ratios = Vec::new();
            for contender in contenders {
                let run = run(&assets, contender, nodes, measured).await?;
                let optional = |value: Option<f64>| value.map_or_else(String::new, |value| format!("{value:.1}"));
                println!(
                    "| {} | {:.2} s | {} | {} | {} |",
                    contender.label(),
                    run.cpu_per_minute,
                    optional(run.passes),
                    optional(run.calls_per_pass),
                    run.nodes_left
                );
                match contender {
                    Contender::Upstream => upstream_cpu = Some(run.cpu_per_minute),
                    Contender::WasmCcm { .. } => ratios.push((contender.label(), run.cpu_per_minute)),
                }
            }
            if let Some(upstream) = upstream_cpu {
                for (label, cpu) in ratios {
                    println!("\n{label} / upstream: CPU per minute {:.2}×", cpu / upstream.max(0.001));
                }
            }
            println!();
        }
        anyhow::Ok(())
    })
}
