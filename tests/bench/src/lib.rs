//! What wasm-ccm's benchmarks share: timing statistics and process memory.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeStatus, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wasm_ccm_host::{Engine, LoadedProvider, ProviderSpec, Tier};

/// Durations of repeated runs.
pub struct Samples(Vec<Duration>);

impl Samples {
    /// Collects `samples`.
    pub fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        Samples(samples)
    }

    /// The `q`-quantile, `q` in `[0, 1]`.
    pub fn quantile(&self, q: f64) -> Duration {
        let last = self.0.len().saturating_sub(1);
        let index = ((last as f64) * q).round() as usize;
        self.0.get(index).copied().unwrap_or_default()
    }

    /// The median.
    pub fn median(&self) -> Duration {
        self.quantile(0.5)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }
}

/// Microseconds, for tables.
pub fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

/// The process's resident memory, in bytes, from `/proc/self/statm`.
pub fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|pages| pages.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// The user and system CPU time of `process` (a PID, or `self`) so far,
/// its children that ended included (wasm-ccm compiles providers in child
/// processes), from `/proc/<process>/stat` (in clock ticks of 10 ms,
/// Linux's `USER_HZ`): unlike wall time, it does not grow when other
/// processes take the cores.
pub fn cpu_time(process: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{process}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses: utime,
    // stime, cutime and cstime.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = [11, 12, 13, 14].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    Duration::from_millis(ticks * 10)
}

/// The peak resident memory of process `pid`, in KiB, from `/proc`.
pub fn peak_memory_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The release `wasm-ccm` binary in the target directory cargo uses
/// (`CARGO_TARGET_DIR`, relative to the repository when relative, else
/// `target/`).
///
/// # Errors
/// When it has not been built.
pub fn release_binary() -> anyhow::Result<std::path::PathBuf> {
    let repository = wasm_ccm_tests::repository();
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if std::path::Path::new(&dir).is_absolute() => std::path::PathBuf::from(dir),
        Some(dir) => repository.join(dir),
        None => repository.join("target"),
    };
    let binary = target.join("release/wasm-ccm");
    anyhow::ensure!(binary.exists(), "build {} first: cargo build --release -p wasm-ccm", binary.display());
    Ok(binary)
}

/// `wasm-ccm run` of the [release binary](release_binary) against
/// `kubeconfig`, logging warnings only, its standard input closed.
///
/// # Errors
/// When the binary has not been built.
pub fn wasm_ccm_run(kubeconfig: &std::path::Path) -> anyhow::Result<std::process::Command> {
    let mut command = std::process::Command::new(release_binary()?);
    command.args(["run", "--log-level", "warn", "--kubeconfig"]).arg(kubeconfig).stdin(std::process::Stdio::null());
    Ok(command)
}

/// Upstream's `cloud-controller-manager` (`UPSTREAM_CCM`, else beside
/// kube-apiserver) with its fake provider on `kubeconfig`, as the
/// benchmarks run it: no admin server, no routes, leader election on, as for
/// wasm-ccm and as both run in production.
///
/// # Errors
/// When the binary is missing.
pub fn upstream_ccm_run(kubeconfig: &std::path::Path) -> anyhow::Result<std::process::Command> {
    let assets = wasm_ccm_envtest::Assets::find_or_skip("the benchmarks")?
        .ok_or_else(|| anyhow::anyhow!("no envtest assets"))?;
    let binary = assets
        .upstream_ccm()
        .ok_or_else(|| anyhow::anyhow!("upstream's cloud-controller-manager is missing; set UPSTREAM_CCM"))?;
    let mut command = std::process::Command::new(binary);
    command.arg(format!("--kubeconfig={}", kubeconfig.display())).args([
        "--cloud-provider=fake",
        "--secure-port=0",
        "--allocate-node-cidrs=false",
        "--configure-cloud-routes=false",
        "--controllers=*,-route",
    ]);
    Ok(command)
}

/// Upstream tuned as a careful operator tunes it: 20 Service syncs, 1000
/// requests per second with bursts of 2000.
pub const UPSTREAM_TUNED: [&str; 3] = ["--concurrent-service-syncs=20", "--kube-api-qps=1000", "--kube-api-burst=2000"];

/// The sum of the series of the plain-HTTP `/metrics` at `port` on
/// loopback whose lines start with `prefix`.
///
/// # Errors
/// When the admin server cannot be reached.
pub fn metric_sum(port: u16, prefix: &str) -> anyhow::Result<f64> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    Ok(text
        .lines()
        .filter(|line| line.starts_with(prefix))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// The node lifecycle's passes that asked the cloud, answered or refused,
/// from the `/metrics` at `port`.
///
/// # Errors
/// As [`metric_sum`].
pub fn lifecycle_passes(port: u16) -> anyhow::Result<f64> {
    let asked = ["answered", "refused"]
        .map(|outcome| metric_sum(port, &format!("cloud_node_lifecycle_passes_total{{outcome=\"{outcome}\"")));
    asked.into_iter().sum()
}

/// `count` nodes `node-0000`..., each with an internal IP.
pub fn nodes(count: usize) -> Vec<Node> {
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

/// The LoadBalancer Service `bench/web` with one port.
pub fn service() -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("bench".into()),
            uid: Some("9d0b5d7e-0000-4000-8000-000000000001".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: 80,
                node_port: Some(30080),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Loads `spec` and waits until its calls run Cranelift's code, as they do
/// once a load's background compile is done: what a benchmark of calls
/// measures.
///
/// # Errors
/// When it does not load, or its calls keep Winch's code.
pub async fn load_optimized(engine: &Engine, spec: ProviderSpec) -> anyhow::Result<LoadedProvider> {
    let provider = LoadedProvider::load(engine, spec).await?;
    let code = provider.settled_code().await;
    anyhow::ensure!(code == Tier::Optimizing, "its calls run {} code for good", code.as_str());
    Ok(provider)
}

/// The fake provider components, in Rust (`provider-fake`) and Go
/// (`provider-fake-go`), loaded and measured alike.
pub mod fakes {
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};
    use wasm_ccm_cloud::Cloud;
    use wasm_ccm_fake_cloud::FakeCloud;
    use wasm_ccm_host::{Engine, Limits, ProviderHandle, ProviderSpec};
    use wasm_ccm_tests::{allow, guest, spec};

    use crate::{Samples, nodes, resident_bytes};

    /// The fake provider `component` with `config`, allowed to reach
    /// `cloud`.
    pub fn fake_spec(component: &str, config: &Value, cloud: Option<&FakeCloud>, limits: Limits) -> ProviderSpec {
        let mut spec = spec("fake", guest(component), config.to_string().as_bytes());
        spec.limits = limits;
        if let Some(cloud) = cloud {
            spec.allow_list = allow(&[&cloud.url()]);
        }
        spec
    }

    /// Loads the fake provider `component` with `config`, allowed to reach
    /// `cloud`, and waits until its calls run Cranelift's code.
    ///
    /// # Errors
    /// When it does not load.
    pub async fn load(
        engine: &Engine,
        component: &str,
        config: Value,
        cloud: Option<&FakeCloud>,
        limits: Limits,
    ) -> anyhow::Result<ProviderHandle> {
        let spec = fake_spec(component, &config, cloud, limits);
        Ok(ProviderHandle::new(crate::load_optimized(engine, spec).await?))
    }

    /// `count` calls of `call`, one at a time, after 200 to warm up.
    ///
    /// # Errors
    /// The first call that fails.
    pub async fn timed<F: AsyncFn() -> anyhow::Result<()>>(count: usize, call: F) -> anyhow::Result<Samples> {
        for _ in 0..200 {
            call().await?;
        }
        let mut samples = Vec::with_capacity(count);
        for _ in 0..count {
            let started = Instant::now();
            call().await?;
            samples.push(started.elapsed());
        }
        Ok(Samples::new(samples))
    }

    /// Resident memory per instance of `component` while `live` instances
    /// are alive at once, each held by a slow call.
    ///
    /// # Errors
    /// When the provider does not load or a call fails.
    pub async fn memory_per_instance(engine: &Engine, component: &str, live: usize) -> anyhow::Result<u64> {
        let config = json!({
            "instances": [{"name": "node-a", "id": "i-a"}],
            "faults": {"instances-v2.exists": {"latencyMs": 1500}},
        });
        let limits = Limits { concurrency: live, ..Limits::default() };
        let handle = load(engine, component, config, None, limits).await?;
        let node = nodes(1).remove(0);
        handle.probe().await?;
        let before = resident_bytes();
        let calls: Vec<_> = (0..live)
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
        Ok(during.saturating_sub(before) / live as u64)
    }
}

/// The benchmarks' LoadBalancer Services, `svc-0000` and on, in `default`.
pub mod services {
    use std::process::Child;
    use std::time::{Duration, Instant};

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Api, PostParams};
    use serde_json::json;
    use wasm_ccm_apiserver::ApiServer;

    /// The name of Service `index`.
    pub fn name(index: usize) -> String {
        format!("svc-{index:04}")
    }

    /// Service `index`: one port, type LoadBalancer.
    pub fn service(index: usize) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name(index)},
            "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80}], "selector": {"app": "bench"}},
        }))
        .expect("a service")
    }

    /// Creates `objects`, 64 requests at once.
    ///
    /// # Errors
    /// The first creation that failed.
    pub async fn create_all<K>(api: &Api<K>, objects: Vec<K>) -> anyhow::Result<()>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
    {
        let results: Vec<_> = futures::stream::iter(objects)
            .map(|object| async move { api.create(&PostParams::default(), &object).await })
            .buffer_unordered(64)
            .collect()
            .await;
        for result in results {
            result?;
        }
        Ok(())
    }

    /// Waits until the first `count` Services have an ingress while `child`
    /// (wasm-ccm) runs, and says how long after `started` that was.
    ///
    /// # Errors
    /// When `child` exits, or `timeout` after `started`.
    pub async fn wait_for_ingress(
        api: &ApiServer,
        count: usize,
        started: Instant,
        timeout: Duration,
        child: &mut Child,
    ) -> anyhow::Result<Duration> {
        while with_ingress(api, count) < count {
            anyhow::ensure!(started.elapsed() < timeout, "only {} services have an ingress", with_ingress(api, count));
            anyhow::ensure!(child.try_wait()?.is_none(), "wasm-ccm exited");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(started.elapsed())
    }

    /// How many of the first `count` Services have an ingress, an IP or a
    /// host name.
    fn with_ingress(api: &ApiServer, count: usize) -> usize {
        (0..count)
            .filter(|index| {
                api.object("services", Some("default"), &name(*index)).is_some_and(|service| {
                    let ingress = &service["status"]["loadBalancer"]["ingress"][0];
                    ingress["ip"].is_string() || ingress["hostname"].is_string()
                })
            })
            .count()
    }
}
