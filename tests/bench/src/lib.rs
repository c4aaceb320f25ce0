//! What wasm-ccm's benchmarks share: timing statistics, process memory, and the
//! nodes and Services they create.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use wasm_ccm_tests::NodeFixture;

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
/// from `/proc/<process>/stat` (in clock ticks of 10 ms, Linux's
/// `USER_HZ`): unlike wall time, it does not grow when other processes take
/// the cores.
pub fn cpu_time(process: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{process}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
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

/// A Ready node as the benchmarks register them: its host name label, a
/// provider ID and one internal address.
pub fn node(name: &str, provider_id: &str, address: &str) -> Node {
    Node::test(name)
        .with_labels(&[("kubernetes.io/hostname", name)])
        .with_provider_id(provider_id)
        .with_addresses(&[("InternalIP", address)])
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

/// The benchmarks' LoadBalancer Services, `svc-0000` and on, in `default`.
pub mod services {
    use std::process::Child;
    use std::time::{Duration, Instant};

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Api, PostParams};
    use wasm_ccm_apiserver::ApiServer;
    use wasm_ccm_tests::ServiceFixture;

    /// The name of Service `index`.
    pub fn name(index: usize) -> String {
        format!("svc-{index:04}")
    }

    /// Service `index`: one port, type LoadBalancer.
    pub fn service(index: usize) -> Service {
        Service::test(&name(index))
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
