//! The process's own metrics, as Go components expose them: the build
//! (`wasm_ccm_build_info`, as `kubernetes_build_info`) and client_golang's
//! `process_*` metrics, read from `/proc/self` at each scrape.

use procfs::process::LimitValue;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric as _};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

/// Labels of `wasm_ccm_build_info`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    /// The crate's version.
    version: String,
    /// The commit built, or `unknown` when the build had no Git checkout.
    git_commit: String,
    /// The compiler's version.
    rust_version: String,
    /// The operating system and architecture, as `linux/x86_64`.
    platform: String,
}

/// Registers `wasm_ccm_build_info` and the `process_*` metrics.
pub(crate) fn register(registry: &mut Registry) {
    let build = Family::<BuildLabels, Gauge>::default();
    build
        .get_or_create(&BuildLabels {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            git_commit: option_env!("WASM_CCM_GIT_COMMIT").unwrap_or("unknown").to_owned(),
            rust_version: option_env!("WASM_CCM_RUST_VERSION").unwrap_or("unknown").to_owned(),
            platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        })
        .set(1);
    registry.register("wasm_ccm_build_info", "The version and commit wasm-ccm was built from; always 1", build);
    registry.register_collector(Box::new(ProcessCollector));
}

/// What `/proc/self` says at one moment.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    cpu_seconds: f64,
    open_fds: u64,
    max_fds: f64,
    virtual_memory_bytes: u64,
    virtual_memory_max_bytes: f64,
    resident_memory_bytes: u64,
    start_time_seconds: f64,
}

/// As client_golang (with prometheus/procfs) reports an unlimited resource.
fn limit(value: LimitValue) -> f64 {
    match value {
        LimitValue::Value(value) => value as f64,
        LimitValue::Unlimited => u64::MAX as f64,
    }
}

impl Sample {
    fn read() -> procfs::ProcResult<Sample> {
        let process = procfs::process::Process::myself()?;
        let stat = process.stat()?;
        let limits = process.limits()?;
        let ticks = procfs::ticks_per_second() as f64;
        Ok(Sample {
            cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
            open_fds: process.fd_count()? as u64,
            max_fds: limit(limits.max_open_files.soft_limit),
            virtual_memory_bytes: stat.vsize,
            virtual_memory_max_bytes: limit(limits.max_address_space.soft_limit),
            resident_memory_bytes: stat.rss * procfs::page_size(),
            start_time_seconds: procfs::boot_time_secs()? as f64 + stat.starttime as f64 / ticks,
        })
    }
}

/// Encodes a [`Sample`] at each scrape, under client_golang's names and
/// help texts.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sample = match Sample::read() {
            Ok(sample) => sample,
            Err(err) => {
                tracing::debug!(error = %err, "cannot read /proc/self for the process metrics");
                return Ok(());
            }
        };
        let counter = ConstCounter::new(sample.cpu_seconds);
        counter.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            counter.metric_type(),
        )?)?;
        let gauges: [(&str, &str, f64); 6] = [
            ("process_open_fds", "Number of open file descriptors.", sample.open_fds as f64),
            ("process_max_fds", "Maximum number of open file descriptors.", sample.max_fds),
            ("process_virtual_memory_bytes", "Virtual memory size in bytes.", sample.virtual_memory_bytes as f64),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                sample.virtual_memory_max_bytes,
            ),
            ("process_resident_memory_bytes", "Resident memory size in bytes.", sample.resident_memory_bytes as f64),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                sample.start_time_seconds,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::*;

    /// The samples of `registry` by name (labels left out), as scraped.
    fn scrape(registry: &Registry) -> (String, BTreeMap<String, f64>) {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                let name = series.split('{').next()?;
                Some((name.to_owned(), value.parse().ok()?))
            })
            .collect();
        (text, samples)
    }

    #[test]
    fn the_process_metrics_are_client_golang_s_and_read_this_process() {
        let mut registry = Registry::default();
        register(&mut registry);
        let (text, samples) = scrape(&registry);
        let names: Vec<&str> = samples.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "process_cpu_seconds_total",
                "process_max_fds",
                "process_open_fds",
                "process_resident_memory_bytes",
                "process_start_time_seconds",
                "process_virtual_memory_bytes",
                "process_virtual_memory_max_bytes",
                "wasm_ccm_build_info",
            ],
            "{text}"
        );
        assert!(text.contains("# TYPE process_cpu_seconds counter"), "{text}");
        assert!(text.contains("# TYPE process_resident_memory_bytes gauge"), "{text}");

        // The values are this test process's.
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
        let started = samples["process_start_time_seconds"];
        assert!(started <= now + 1.0 && started > now - 3600.0, "started at {started}, now {now}");
        let resident = samples["process_resident_memory_bytes"];
        assert!(resident > 1024.0 * 1024.0, "{resident} bytes resident");
        assert!(samples["process_virtual_memory_bytes"] >= resident);
        // Other tests of this process open and close files meanwhile: 64
        // more open show as most of 64.
        let open = samples["process_open_fds"];
        let files: Vec<std::fs::File> = (0..64).map(|_| std::fs::File::open("/proc/self/status").unwrap()).collect();
        let (_, again) = scrape(&registry);
        assert!(again["process_open_fds"] >= open + 48.0, "{open} then {} open", again["process_open_fds"]);
        drop(files);
        assert!(samples["process_max_fds"] >= open);
        assert!(samples["process_cpu_seconds_total"] > 0.0);
    }

    #[test]
    fn build_info_names_the_version_and_commit() {
        let mut registry = Registry::default();
        register(&mut registry);
        let (text, samples) = scrape(&registry);
        assert_eq!(samples["wasm_ccm_build_info"], 1.0);
        let line = text.lines().find(|line| line.starts_with("wasm_ccm_build_info{")).expect("one series");
        assert!(line.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))), "{line}");
        // The tests build from a Git checkout: the commit is known.
        let commit = line.split("git_commit=\"").nth(1).and_then(|rest| rest.split('"').next()).unwrap();
        assert!(commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()), "{line}");
        assert!(line.contains("rust_version=\"rustc 1."), "{line}");
        assert!(line.contains(&format!("platform=\"linux/{}\"", std::env::consts::ARCH)), "{line}");
    }
}
