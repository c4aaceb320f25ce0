//! The controllers side by side with upstream's, on a real kube-apiserver:
//! upstream's Go cloud-controller-manager with its in-memory fake provider
//! (`cloud-controller-manager`), at its defaults and tuned (20 Service syncs, 1000
//! requests per second with bursts of 2000), and the `wasm-ccm` binary at
//! its defaults with the fake provider's stateless load balancers (no cloud
//! round trip, as upstream's fake). Each run gets a fresh control plane
//! (etcd and kube-apiserver on the same cores) with 100 Ready nodes.
//!
//! Scenarios: 1000 LoadBalancer Services existing before the controller
//! starts (the clock starts when it is spawned), then a storm of 10 nodes
//! added at once (until the controller's log says every load balancer has
//! them);
//! 1000 Services created while the controller runs (the clock starts at the
//! first creation, once a first Service proved the controller ready); and
//! for wasm-ccm, the first scenario with 50 ms per provider call, which
//! upstream's fake cannot inject.
//!
//! Reported per run: how long after its spawn its log says its caches have
//! synced and its controllers start (and, for wasm-ccm, that its provider's
//! calls run Cranelift's code, not Winch's), the time until every Service
//! has an ingress, Services per second, the controller's CPU seconds until
//! then and peak RSS (from `/proc`), and its API requests per Service (from
//! the API server's audit log, 3 s after the last ingress, so that events
//! written late count).
//!
//! Needs `target/release/wasm-ccm` (`cargo build --release -p wasm-ccm`),
//! the fake provider (`providers/build.sh`), etcd and kube-apiserver
//! (`KUBEBUILDER_ASSETS` or `TEST_ASSET_KUBE_APISERVER`/`TEST_ASSET_ETCD`),
//! and `cloud-controller-manager` (`UPSTREAM_CCM`, else beside kube-apiserver).
//! `BENCH_SKIP_UPSTREAM_DEFAULTS=1` leaves out upstream at its defaults,
//! which takes minutes per scenario; `BENCH_GO_FAKE=1` adds wasm-ccm with
//! the Go fake (`providers/fake-go`) to the first scenario.
//!
//! `BENCH_SERVICES` sets how many Services each run has (default 1000).
//! `BENCH_CLUSTERS` lists the clusters to run the first scenario in, by
//! node count, `-not-ready` marking nodes without a Ready condition or
//! addresses, as after a zone outage: `100,1000,2000-not-ready` (default
//! `100`; the second scenario runs in the first cluster only). The storm's
//! controller CPU is reported beside its time. `BENCH_KEEP_LOGS` names a
//! directory each run's controller log is copied to. `BENCH_PAIRS` runs
//! tuned upstream and wasm-ccm at its defaults that many times in turn in
//! each scenario, and reports each pair's ratios and their median.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use wasm_ccm_bench::services::{create_all, service};
use wasm_ccm_bench::{UPSTREAM_TUNED, cpu_time, peak_memory_kib, release_binary, upstream_ccm_run};
use wasm_ccm_envtest::{Assets, ControlPlane, Identity, Options};
use wasm_ccm_tests::repository;

/// How many LoadBalancer Services each run has: `BENCH_SERVICES`, or 1000.
static SERVICES: LazyLock<usize> = LazyLock::new(|| match std::env::var("BENCH_SERVICES") {
    Ok(count) => count.parse().unwrap_or_else(|_| panic!("BENCH_SERVICES: {count:?} is not a Service count")),
    Err(_) => 1000,
});
/// How many times tuned upstream and wasm-ccm at its defaults run, one
/// after the other, in each scenario: `BENCH_PAIRS`, or 1.
static PAIRS: LazyLock<usize> = LazyLock::new(|| match std::env::var("BENCH_PAIRS") {
    Ok(count) => {
        count.parse().ok().filter(|&count| count > 0).unwrap_or_else(|| panic!("BENCH_PAIRS: {count:?} is not a count"))
    }
    Err(_) => 1,
});
const STORM: usize = 10;
const TIMEOUT: Duration = Duration::from_secs(600);
/// How long after the last ingress the API requests are counted.
const SETTLE: Duration = Duration::from_secs(3);

/// Who runs the controllers.
#[derive(Debug, Clone)]
enum Contender {
    /// Upstream at its defaults: one Service sync at a time, 20 requests
    /// per second.
    UpstreamDefaults,
    /// Upstream as a careful operator tunes it.
    UpstreamTuned,
    /// wasm-ccm at its defaults, the fake provider (the Go one when `go`)
    /// injecting `faults`.
    WasmCcm { faults: Value, go: bool },
}

impl Contender {
    fn label(&self) -> String {
        match self {
            Contender::UpstreamDefaults => "upstream, defaults".to_owned(),
            Contender::UpstreamTuned => "upstream, 20 syncs, QPS 1000/2000".to_owned(),
            Contender::WasmCcm { go: true, .. } => "wasm-ccm, defaults, the Go fake".to_owned(),
            Contender::WasmCcm { faults, .. } if faults.as_object().is_none_or(|faults| faults.is_empty()) => {
                "wasm-ccm, defaults".to_owned()
            }
            Contender::WasmCcm { .. } => "wasm-ccm, defaults, 50 ms per call".to_owned(),
        }
    }

    /// What its log says once its caches have synced and its controllers
    /// start.
    fn started_line(&self) -> &'static str {
        match self {
            Contender::WasmCcm { .. } => "caches synced; starting controllers",
            _ => "Caches are synced for service",
        }
    }

    /// What its log says once its calls run the provider's optimised code:
    /// wasm-ccm serves with Winch's code first.
    fn optimized_line(&self) -> Option<&'static str> {
        match self {
            Contender::WasmCcm { .. } => Some("the provider's calls run Cranelift's code from now on"),
            _ => None,
        }
    }

    fn identity(&self) -> Identity {
        match self {
            Contender::WasmCcm { .. } => Identity::CloudControllerManager,
            _ => Identity::UpstreamControllerManager,
        }
    }

    /// Starts the controller manager against `plane` in `cluster`, its
    /// files and log in `dir`.
    fn spawn(&self, plane: &ControlPlane, cluster: Cluster, dir: &Path) -> anyhow::Result<Child> {
        let kubeconfig = dir.join("kubeconfig");
        plane.write_kubeconfig(self.identity(), &kubeconfig)?;
        let log = std::fs::File::create(dir.join("controller.log"))?;
        let mut command = match self {
            Contender::WasmCcm { faults, go } => {
                let config = dir.join("fake.json");
                // Every machine of the cluster and the storm, so that none
                // is deleted as gone from the cloud.
                let instances: Vec<Value> = (0..cluster.nodes + STORM)
                    .map(|index| json!({"name": format!("node-{index:03}"), "id": format!("i-{index:03}")}))
                    .collect();
                let fake = json!({
                    "statelessLoadBalancers": true,
                    "loadBalancerPool": ["10.128.0.0/16"],
                    "instances": instances,
                    "faults": faults,
                });
                std::fs::write(&config, fake.to_string())?;
                let mut command = Command::new(release_binary()?);
                command
                    .args(["run", "--secure-port", "0", "--kubeconfig"])
                    .arg(&kubeconfig)
                    .arg("--provider")
                    .arg(repository().join(if *go {
                        "target/wasm/provider_fake_go.wasm"
                    } else {
                        "target/wasm/provider_fake.wasm"
                    }))
                    .arg("--cloud-config")
                    .arg(&config);
                command
            }
            upstream => {
                let mut command = upstream_ccm_run(&kubeconfig)?;
                // The node syncs' start and end, which tell the storm's.
                command.arg("--v=2");
                if matches!(upstream, Contender::UpstreamTuned) {
                    command.args(UPSTREAM_TUNED);
                }
                command
            }
        };
        command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        Ok(command.spawn()?)
    }
}

/// The nodes a run starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cluster {
    nodes: usize,
    /// With a Ready condition and an address, else with neither.
    ready: bool,
}

impl Cluster {
    /// `BENCH_CLUSTERS`, or 100 Ready nodes.
    fn from_env() -> anyhow::Result<Vec<Cluster>> {
        let listed = std::env::var("BENCH_CLUSTERS").unwrap_or_else(|_| "100".to_owned());
        listed
            .split(',')
            .map(|entry| {
                let (count, ready) = match entry.trim().strip_suffix("-not-ready") {
                    Some(count) => (count, false),
                    None => (entry.trim(), true),
                };
                let nodes =
                    count.parse().map_err(|_| anyhow::anyhow!("BENCH_CLUSTERS: {entry:?} is not a node count"))?;
                Ok(Cluster { nodes, ready })
            })
            .collect()
    }

    fn label(&self) -> String {
        format!("{} {} nodes", self.nodes, if self.ready { "Ready" } else { "NotReady" })
    }

    fn node(&self, index: usize) -> Node {
        node(index, self.ready)
    }
}

/// When the Services are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// All before the controller starts.
    Existing,
    /// While it runs.
    Arriving,
}

/// What one run measured.
struct Run {
    time: Duration,
    cpu: f64,
    /// The API server's and etcd's CPU seconds over the same time.
    server_cpu: f64,
    peak_kib: u64,
    requests: u64,
    breakdown: String,
    /// How long after its spawn its log said its controllers start.
    started: Option<Duration>,
    /// How long after its spawn its log said its provider's calls run
    /// Cranelift's code.
    optimized: Option<Duration>,
    /// How long until every load balancer had the storm's nodes, and the
    /// controller's CPU seconds meanwhile.
    storm: Option<(Duration, f64)>,
}

/// Node `index`'s address.
fn address(index: usize) -> String {
    format!("10.0.{}.{}", index / 256, index % 256)
}

fn node(index: usize, ready: bool) -> Node {
    let name = format!("node-{index:03}");
    let status = match ready {
        true => json!({
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": address(index)}],
        }),
        false => json!({}),
    };
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": format!("fake://i-{index:03}")},
        "status": status,
    }))
    .expect("a node")
}

/// Counts the Services that have an ingress, from one watch.
struct Ingresses {
    seen: HashSet<String>,
    stream: futures::stream::BoxStream<'static, Result<Service, watcher::Error>>,
}

impl Ingresses {
    fn watch(client: &kube::Client) -> Self {
        let api: Api<Service> = Api::namespaced(client.clone(), "default");
        let stream = watcher(api, watcher::Config::default()).default_backoff().applied_objects().boxed();
        Ingresses { seen: HashSet::new(), stream }
    }

    /// Waits until `count` Services have an ingress, or `child` exits, or
    /// `deadline` passes.
    async fn wait(&mut self, count: usize, child: &mut Child, deadline: Instant) -> anyhow::Result<()> {
        while self.seen.len() < count {
            anyhow::ensure!(child.try_wait()?.is_none(), "the controller manager exited");
            let left = deadline.saturating_duration_since(Instant::now());
            anyhow::ensure!(!left.is_zero(), "only {} Services have an ingress", self.seen.len());
            let next = tokio::time::timeout(left.min(Duration::from_secs(1)), self.stream.next()).await;
            if let Ok(Some(service)) = next {
                // The watcher lists again after an error, such as a resource
                // version too old for the API server's watch cache.
                let service = match service {
                    Ok(service) => service,
                    Err(err) => {
                        eprintln!("the ingress watch: {err}; listing again");
                        continue;
                    }
                };
                let ingress = service.status.and_then(|status| status.load_balancer).and_then(|lb| lb.ingress);
                if ingress.is_some_and(|ingress| !ingress.is_empty()) {
                    self.seen.insert(service.metadata.name.unwrap_or_default());
                }
            }
        }
        Ok(())
    }
}

/// Whether the controller has updated every load balancer to the storm's
/// nodes, from what its log says after `start` (a byte offset): wasm-ccm
/// logs each node sync with the nodes it targeted and its failures;
/// upstream, at `--v=2`, logs the start of each node sync that follows a
/// change of the nodes and, at its end, how many load balancers it
/// updated. Its events cannot tell: its broadcaster drops those that come
/// faster than its rate-limited client writes them, and its log of events
/// with them.
fn storm_converged(contender: &Contender, cluster: Cluster, log: &Path, start: u64) -> anyhow::Result<bool> {
    let mut since_start = Vec::new();
    let mut file = std::fs::File::open(log)?;
    file.seek(SeekFrom::Start(start))?;
    file.read_to_end(&mut since_start)?;
    let log = String::from_utf8_lossy(&since_start);
    Ok(match contender {
        Contender::WasmCcm { .. } => log.lines().any(|line| {
            line.contains("synced load balancer nodes")
                && line.contains(&format!("nodes={}", cluster.nodes + STORM))
                && line.contains("failed=0")
        }),
        _ => {
            // Every node sync begun since the storm began has ended, the last
            // having updated every load balancer.
            let begun = log.matches("Syncing backends for all LB services.").count();
            let ended: Vec<&str> =
                log.lines().filter(|line| line.contains("load balancers to direct traffic")).collect();
            let all = format!("Successfully updated {0} out of {0} load balancers", *SERVICES);
            begun > 0 && ended.len() == begun && ended.last().is_some_and(|line| line.contains(&all))
        }
    })
}

async fn run(assets: &Assets, contender: &Contender, scenario: Scenario, cluster: Cluster) -> anyhow::Result<Run> {
    let plane = ControlPlane::start(assets, Options { audit: true }).await?;
    let admin = plane.client(Identity::Admin).await?;
    let services: Api<Service> = Api::namespaced(admin.clone(), "default");
    create_all(&Api::<Node>::all(admin.clone()), (0..cluster.nodes).map(|index| cluster.node(index)).collect()).await?;
    if scenario == Scenario::Existing {
        create_all(&services, (0..*SERVICES).map(service).collect()).await?;
    }
    let dir = tempfile::Builder::new().prefix("wasm-ccm-bench-").tempdir()?;
    let mut ingresses = Ingresses::watch(&admin);
    let server_cpu = || {
        let apiserver = plane.apiserver_pid().map(|pid| cpu_time(&pid.to_string())).unwrap_or_default();
        (apiserver + cpu_time(&plane.etcd_pid().to_string())).as_secs_f64()
    };
    let server_cpu_before = server_cpu();
    let spawned = Instant::now();
    let mut child = contender.spawn(&plane, cluster, dir.path())?;
    let log = dir.path().join("controller.log");
    let mut started_line = tokio::spawn(logged(log.clone(), contender.started_line(), spawned));
    let mut optimized_line = contender.optimized_line().map(|line| tokio::spawn(logged(log, line, spawned)));
    let result = async {
        // The clock and the CPU count start with the Services' work: the
        // existing Services' include the controller's start.
        let (started, cpu_before, server_before) = match scenario {
            Scenario::Existing => (spawned, Duration::ZERO, server_cpu_before),
            Scenario::Arriving => {
                // One Service first: the clock starts once the controller
                // manager serves.
                create_all(&services, vec![service(*SERVICES)]).await?;
                ingresses.wait(1, &mut child, spawned + TIMEOUT).await?;
                let started = (Instant::now(), cpu_time(&child.id().to_string()), server_cpu());
                create_all(&services, (0..*SERVICES).map(service).collect()).await?;
                started
            }
        };
        let count = match scenario {
            Scenario::Existing => *SERVICES,
            Scenario::Arriving => *SERVICES + 1,
        };
        ingresses.wait(count, &mut child, started + TIMEOUT).await?;
        let time = started.elapsed();
        let cpu = (cpu_time(&child.id().to_string()) - cpu_before).as_secs_f64();
        let server_cpu = server_cpu() - server_before;
        // Events still being written count towards the Services' requests.
        tokio::time::sleep(SETTLE).await;
        let requests = plane.audited_requests()?.of(contender.identity());
        let storm = match scenario {
            Scenario::Existing => {
                Some(storm(contender, cluster, &admin, &mut child, &dir.path().join("controller.log")).await?)
            }
            Scenario::Arriving => None,
        };
        anyhow::Ok(Run {
            time,
            cpu,
            server_cpu,
            peak_kib: peak_memory_kib(child.id()),
            requests: requests.total(),
            breakdown: requests.to_string(),
            started: seen(&mut started_line).await,
            optimized: match &mut optimized_line {
                Some(line) => seen(line).await,
                None => None,
            },
            storm,
        })
    }
    .await;
    started_line.abort();
    optimized_line.iter().for_each(JoinHandle::abort);
    let _ = child.kill();
    let _ = child.wait();
    if let Some(kept) = std::env::var_os("BENCH_KEEP_LOGS") {
        let name = format!("{} {} {scenario:?}.log", contender.label(), cluster.label()).replace([' ', ',', '/'], "-");
        std::fs::create_dir_all(&kept)?;
        std::fs::copy(dir.path().join("controller.log"), Path::new(&kept).join(name))?;
    }
    if result.is_err() {
        let log = std::fs::read_to_string(dir.path().join("controller.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        eprintln!("{}: the end of the controller's log:\n{}", contender.label(), tail.join("\n"));
    }
    result
}

/// How long after `since` the log at `path` first had a line containing
/// `wanted`, looked for every 10 ms.
async fn logged(path: PathBuf, wanted: &str, since: Instant) -> Duration {
    loop {
        if std::fs::read_to_string(&path).is_ok_and(|log| log.contains(wanted)) {
            return since.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What a [`logged`] task found, if it has.
async fn seen(line: &mut JoinHandle<Duration>) -> Option<Duration> {
    if line.is_finished() { line.await.ok() } else { None }
}

/// Adds the storm's Ready nodes, and says how long until every Service's
/// load balancer was updated and the controller's CPU seconds meanwhile.
async fn storm(
    contender: &Contender,
    cluster: Cluster,
    admin: &kube::Client,
    child: &mut Child,
    log: &Path,
) -> anyhow::Result<(Duration, f64)> {
    let (started, cpu_before) = (Instant::now(), cpu_time(&child.id().to_string()));
    let start = std::fs::metadata(log)?.len();
    let added = (cluster.nodes..cluster.nodes + STORM).map(|index| node(index, true)).collect();
    create_all(&Api::<Node>::all(admin.clone()), added).await?;
    while !storm_converged(contender, cluster, log, start)? {
        anyhow::ensure!(child.try_wait()?.is_none(), "the controller manager exited");
        anyhow::ensure!(started.elapsed() < TIMEOUT, "the load balancers were not all updated");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((started.elapsed(), (cpu_time(&child.id().to_string()) - cpu_before).as_secs_f64()))
}

/// Whether `contender` is one of the pair each ratio compares.
fn paired(contender: &Contender) -> bool {
    match contender {
        Contender::UpstreamTuned => true,
        Contender::WasmCcm { faults, go } => !go && faults.as_object().is_none_or(|faults| faults.is_empty()),
        Contender::UpstreamDefaults => false,
    }
}

/// wasm-ccm's time to all ingress, peak RSS and storm against tuned
/// upstream's, pair by pair in the order they ran, then their medians.
fn ratios(runs: &[(Contender, Run)]) {
    let of = |wanted: fn(&Contender) -> bool| {
        runs.iter().filter(move |(contender, _)| paired(contender) && wanted(contender)).map(|(_, run)| run)
    };
    let upstream = of(|contender| matches!(contender, Contender::UpstreamTuned));
    let pairs: Vec<(&Run, &Run)> =
        of(|contender| matches!(contender, Contender::WasmCcm { .. })).zip(upstream).collect();
    let mut time = Vec::new();
    let mut memory = Vec::new();
    for (ours, upstream) in &pairs {
        let (time_ratio, memory_ratio) =
            (ours.time.as_secs_f64() / upstream.time.as_secs_f64(), ours.peak_kib as f64 / upstream.peak_kib as f64);
        time.push(time_ratio);
        memory.push(memory_ratio);
        let mut line = format!("wasm-ccm / tuned upstream: all ingress {time_ratio:.2}×, peak RSS {memory_ratio:.2}×");
        if let (Some((ours_time, ours_cpu)), Some((upstream_time, upstream_cpu))) = (ours.storm, upstream.storm) {
            line += &format!(
                ", storm {:.2}× (CPU {:.2}×)",
                ours_time.as_secs_f64() / upstream_time.as_secs_f64(),
                ours_cpu / upstream_cpu.max(0.01)
            );
        }
        println!("\n{line}");
    }
    if pairs.len() > 1 {
        println!(
            "\nmedian of {} pairs: all ingress {:.2}×, peak RSS {:.2}×",
            pairs.len(),
            median(&mut time),
            median(&mut memory)
        );
    }
}

/// The median of `values`, the upper one of an even count.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn row(contender: &Contender, run: &Run, services: usize) {
    let storm =
        run.storm.map_or_else(String::new, |(time, cpu)| format!("{:.2} s ({cpu:.2} s CPU)", time.as_secs_f64()));
    let seconds =
        |after: Option<Duration>| after.map_or_else(String::new, |after| format!("{:.2} s", after.as_secs_f64()));
    println!(
        "| {} | {} | {} | {:.2} s | {:.0} | {:.2} s | {:.1} ms | {:.2} s | {} MiB | {:.2} | {storm} |",
        contender.label(),
        seconds(run.started),
        seconds(run.optimized),
        run.time.as_secs_f64(),
        services as f64 / run.time.as_secs_f64(),
        run.cpu,
        run.cpu * 1000.0 / services as f64,
        run.server_cpu,
        run.peak_kib / 1024,
        run.requests as f64 / services as f64,
    );
}

fn main() -> anyhow::Result<()> {
    let assets = Assets::find_or_skip("the controllers benchmark")?
        .ok_or_else(|| anyhow::anyhow!("set KUBEBUILDER_ASSETS or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD"))?;
    let skip_defaults = std::env::var_os("BENCH_SKIP_UPSTREAM_DEFAULTS").is_some_and(|value| value != "0");
    let go_fake = std::env::var_os("BENCH_GO_FAKE").is_some_and(|value| value != "0");
    let mut contenders = vec![Contender::UpstreamTuned, Contender::WasmCcm { faults: json!({}), go: false }];
    if !skip_defaults {
        contenders.insert(0, Contender::UpstreamDefaults);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let clusters = Cluster::from_env()?;
    let mut runs_of = vec![(Scenario::Existing, clusters[0]), (Scenario::Arriving, clusters[0])];
    runs_of.extend(clusters[1..].iter().map(|cluster| (Scenario::Existing, *cluster)));
    runtime.block_on(async {
        for (scenario, cluster) in runs_of {
            let mut runs = Vec::new();
            let mut contenders = contenders.clone();
            if scenario == Scenario::Existing && cluster == clusters[0] {
                contenders.push(Contender::WasmCcm { faults: json!({"load-balancer.ensure": {"latencyMs": 50}}), go: false });
                if go_fake {
                    contenders.push(Contender::WasmCcm { faults: json!({}), go: true });
                }
            }
            for pair in 0..*PAIRS {
                for contender in contenders.iter().filter(|contender| pair == 0 || paired(contender)) {
                    let run = run(&assets, contender, scenario, cluster).await?;
                    runs.push((contender.clone(), run));
                }
            }
            match scenario {
                Scenario::Existing => println!(
                    "## {} Services and {} existing before the start, then {STORM} Ready nodes added\n",
                    *SERVICES,
                    cluster.label()
                ),
                Scenario::Arriving => {
                    println!("## {} Services created while the controller runs, {}\n", *SERVICES, cluster.label())
                }
            }
            println!(
                "| controller | controllers started after | Cranelift's code after | all ingress after | services/s | CPU | CPU per Service | API server + etcd CPU | peak RSS | API requests per Service | {STORM}-node storm |"
            );
            println!("|---|---|---|---|---|---|---|---|---|---|---|");
            for (contender, run) in &runs {
                row(contender, run, *SERVICES);
            }
            ratios(&runs);
            println!();
            for (contender, run) in &runs {
                println!("{}, API requests:\n\n```\n{}```\n", contender.label(), run.breakdown);
            }
        }
        anyhow::Ok(())
    })
}
