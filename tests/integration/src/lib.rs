//! Helpers shared by wasm-ccm's integration tests: an engine, provider specs,
//! servers to aim providers at, the `wasm-ccm` binary as a child process; with
//! the builders, free ports and built components of `wasm-ccm-test-support`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

pub mod backend;
pub mod canned_aws;
pub mod clients;
pub mod cluster;
pub mod echo;
pub mod hostile_registry;
pub mod moto;
pub mod own_process;
pub mod process;
pub mod registry;
pub mod replicas;
pub mod sigv4;
pub mod tools;

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wasm_ccm_host::{AllowList, Credentials, Engine, EngineSettings, Limits, LoadedProvider, ProviderSpec};
pub use wasm_ccm_test_support::{
    NodeFixture, ServiceFixture, ServicePortFixture, free_port, guest, guest_path, kubectl, repository,
};

/// One engine for a test binary. It keeps compiled components in
/// `target/test-compile-cache`, as `--compile-cache` does, so that each
/// component is compiled once rather than by every test that loads it (the
/// Go fake takes seconds, and compiles wait for each other within the
/// compile timeout); the compile cache's own tests use engines of their own.
pub fn engine() -> Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let settings = EngineSettings {
                compile_cache: Some(repository().join("target/test-compile-cache")),
                compile_cache_max_bytes: 1 << 30,
                ..EngineSettings::default()
            };
            Engine::new(settings).expect("an engine")
        })
        .clone()
}

/// Makes ring rustls's crypto provider, as the `wasm-ccm` binary does, for
/// the TLS clients and servers of the tests and benchmarks.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Logs to the test's output when `RUST_LOG` asks for it.
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A spec for `wasm` with `config`, no credentials and no allow-list.
pub fn spec(name: &str, wasm: Arc<[u8]>, config: &[u8]) -> ProviderSpec {
    ProviderSpec {
        name: name.to_owned(),
        wasm,
        config: config.into(),
        cluster_name: "test-cluster".to_owned(),
        credentials: Credentials::default(),
        allow_list: AllowList::default(),
        trusted_certificates: None,
        limits: Limits::default(),
    }
}

/// Allows exactly `url`'s scheme, host and port.
pub fn allow(urls: &[&str]) -> AllowList {
    AllowList::parse(urls).expect("a valid allow-list")
}

/// Loads a provider, panicking with the error.
pub async fn load(spec: ProviderSpec) -> LoadedProvider {
    match LoadedProvider::load(&engine(), spec).await {
        Ok(provider) => provider,
        Err(err) => panic!("cannot load the provider: {err}"),
    }
}

/// Log lines written while a guard from [`capture_logs`] lives on this
/// thread.
#[derive(Clone, Default)]
pub struct CapturedLogs(Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLogs {
    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())).into_owned()
    }
}

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures this thread's log records at `info` and above.
pub fn capture_logs() -> (CapturedLogs, tracing::subscriber::DefaultGuard) {
    let logs = CapturedLogs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

/// Makes each listed test body, an `async fn(&Backend)`, two tests:
/// `harness::NAME` against the API server harness and `real_apiserver::NAME`
/// against kube-apiserver, which is skipped, and says so on the terminal,
/// when its binaries are missing and not required.
#[macro_export]
macro_rules! on_both_api_servers {
    ($($test:ident),+ $(,)?) => {
        mod harness {
            $(
                #[::tokio::test]
                async fn $test() {
                    super::$test(&$crate::backend::Backend::Harness).await;
                }
            )+
        }
        mod real_apiserver {
            $(
                #[::tokio::test]
                async fn $test() {
                    let test = concat!(module_path!(), "::", stringify!($test));
                    if let Some(backend) = $crate::backend::Backend::real(test) {
                        super::$test(&backend).await;
                    }
                }
            )+
        }
    };
}

/// Makes each listed test body, an `async fn(&str)` taking the crate of a
/// fake provider component, two tests: `rust_fake::NAME` with
/// `provider-fake` and `go_fake::NAME` with `provider-fake-go`, the same
/// provider written with the Go SDK.
#[macro_export]
macro_rules! on_both_fakes {
    ($($test:ident),+ $(,)?) => {
        mod rust_fake {
            $(
                #[::tokio::test]
                async fn $test() {
                    super::$test("provider-fake").await;
                }
            )+
        }
        mod go_fake {
            $(
                #[::tokio::test]
                async fn $test() {
                    super::$test("provider-fake-go").await;
                }
            )+
        }
    };
}

/// A server the tests start stopped before it answered, as when another
/// process took its port: worth another port.
#[derive(Debug)]
pub struct Exited(pub String);

impl std::fmt::Display for Exited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Exited {}

/// The resident memory of process `pid` (`self` for this one), in bytes,
/// from `/proc`.
///
/// # Panics
/// When `/proc` has no such process.
pub fn resident_bytes(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).expect("its resident memory");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()).expect("a number of KiB") * 1024
}

/// Polls `check` every 50 ms until it gives a value.
///
/// # Panics
/// When it gives none within `patience`, naming `what`.
pub async fn eventually<T>(what: &str, patience: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes `files` into `dir` as kubelet writes a mounted Secret or
/// ConfigMap: into a fresh directory `..v<version>`, each file a link
/// `name -> ..data/name`, then swaps the `..data` link to it in one rename.
pub fn publish(dir: &Path, version: usize, files: &[(&str, &[u8])]) {
    let versioned = dir.join(format!("..v{version}"));
    std::fs::create_dir_all(&versioned).unwrap();
    for (name, bytes) in files {
        std::fs::write(versioned.join(name), bytes).unwrap();
        let link = dir.join(name);
        if !link.exists() {
            std::os::unix::fs::symlink(Path::new("..data").join(name), &link).unwrap();
        }
    }
    let staged = dir.join("..data_tmp");
    std::os::unix::fs::symlink(format!("..v{version}"), &staged).unwrap();
    std::fs::rename(&staged, dir.join("..data")).unwrap();
}
