//! What the host refuses to load, and why it says so.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::binary;
use wasm_ccm_cloud::{Cloud, ProviderError};
use wasm_ccm_host::{
    Allocation, ChildCompiler, Compiler, Engine, EngineSettings, LoadError, LoadedProvider, ProviderHandle, Tier,
};
use wasm_ccm_tests::{engine, guest, spec};

async fn load_error(wasm: &[u8], config: &[u8]) -> LoadError {
    match LoadedProvider::load(&engine(), spec("candidate", wasm.into(), config)).await {
        Ok(_) => panic!("the candidate loaded"),
        Err(err) => err,
    }
}

#[tokio::test]
async fn garbage_bytes() {
    let err = load_error(b"this is not WebAssembly", b"").await;
    assert!(matches!(err, LoadError::NotWasm(_)), "{err:?}");
    assert!(err.to_string().starts_with("not a WebAssembly binary"), "{err}");
}

#[tokio::test]
async fn a_core_module() {
    let module = wat::parse_str("(module (func (export \"ensure\")))").unwrap();
    let err = load_error(&module, b"").await;
    assert!(matches!(err, LoadError::CoreModule), "{err:?}");
    assert!(err.to_string().contains("not a component"), "{err}");
}

#[tokio::test]
async fn a_truncated_component() {
    let fake = guest("provider-fake");
    let err = load_error(&fake[..fake.len() / 2], b"").await;
    assert!(matches!(err, LoadError::Invalid(_)), "{err:?}");
}

#[tokio::test]
async fn a_component_of_another_world() {
    let err = load_error(&guest("guest-other-world"), b"").await;
    let LoadError::WrongWorld { missing, .. } = &err else { panic!("{err:?}") };
    for interface in ["provider", "load-balancer", "instances-v2", "instances", "zones", "clusters", "routes"] {
        assert!(missing.contains(&format!("missing export wasm-ccm:provider/{interface}@0.2.2")), "{missing}");
    }
    assert!(!missing.contains("instances-batch"), "an optional export: {missing}");
}

/// A provider built against the first contract, which took nodes by value.
#[tokio::test]
async fn another_contract_version() {
    let component = wat::parse_str(
        r#"(component
            (instance $provider)
            (export "wasm-ccm:provider/provider@0.1.0" (instance $provider)))"#,
    )
    .unwrap();
    let err = load_error(&component, b"").await.to_string();
    assert!(err.contains("not a wasm-ccm provider (contract wasm-ccm:provider@0.2.2)"), "{err}");
    assert!(err.contains("exports wasm-ccm:provider/provider@0.1.0, built against another contract version"), "{err}");
}

#[tokio::test]
async fn imports_the_host_does_not_provide() {
    let component = wat::parse_str(
        r#"(component
            (import "wasi:sockets/tcp@0.2.0" (instance))
            (import "wasi:http/outgoing-handler@0.2.0" (instance)))"#,
    )
    .unwrap();
    let err = load_error(&component, b"").await;
    assert!(matches!(err, LoadError::UnsupportedImports(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("wasi:sockets/tcp@0.2.0") && message.contains("wasi:http/outgoing-handler@0.2.0"),
        "{message}"
    );
}

#[tokio::test]
async fn a_provider_whose_initialize_traps() {
    let err = load_error(&guest("guest-hostile"), b"trap-on-initialize").await;
    let LoadError::Startup(ProviderError::Panic { message }) = &err else { panic!("{err:?}") };
    assert!(message.contains("initialize refuses to start"), "{message}");
}

/// `initialize` runs in an instance of code the baseline compiler made,
/// outside the pool: the deadline and the memory limit stop it there too.
#[tokio::test]
async fn an_initialize_past_its_deadline_or_memory_limit_fails_the_load() {
    let mut spinning = spec("spinning", guest("guest-hostile"), b"spin-on-initialize");
    spinning.limits.deadline = Duration::from_millis(300);
    let err = LoadedProvider::load(&engine(), spinning).await.err().expect("refused");
    assert!(matches!(err, LoadError::Startup(ProviderError::DeadlineExceeded { .. })), "{err:?}");
    let err = load_error(&guest("guest-hostile"), b"grow-on-initialize").await;
    assert!(matches!(err, LoadError::Startup(ProviderError::MemoryLimit { .. })), "{err:?}");
}

/// An engine on the default pooling allocator, but a small one, with these
/// compile limits.
fn limited_engine(max_component_size: usize, compile_timeout: Duration) -> Engine {
    let settings = EngineSettings {
        allocation: Allocation::Pooling { instances: 4 },
        max_component_size,
        compile_timeout,
        ..EngineSettings::default()
    };
    Engine::new(settings).expect("an engine")
}

#[tokio::test]
async fn a_component_over_the_size_limit_is_not_compiled() {
    let fake = guest("provider-fake");
    let engine = limited_engine(fake.len() - 1, Duration::from_secs(60));
    let err = LoadedProvider::load(&engine, spec("large", fake.clone(), b"")).await.err().expect("refused");
    assert!(matches!(err, LoadError::TooLarge { limit, .. } if limit == fake.len() - 1), "{err:?}");
    assert!(err.to_string().contains("over the"), "{err}");
}

#[tokio::test]
async fn a_compile_past_its_timeout_is_given_up() {
    let engine = limited_engine(32 << 20, Duration::from_millis(1));
    let err = LoadedProvider::load(&engine, spec("slow", guest("provider-aws"), b"")).await.err().expect("refused");
    assert!(matches!(err, LoadError::CompileTimeout { .. }), "{err:?}");
    assert_eq!(err.to_string(), "compiling the component took longer than 1ms");
}

/// An engine on a small pool, as `run`'s, that compiles in `child`, one
/// compile at a time, giving up after `compile_timeout`.
fn child_engine(child: ChildCompiler, compile_timeout: Duration) -> Engine {
    let settings = EngineSettings {
        allocation: Allocation::Pooling { instances: 4 },
        compiler: Compiler::Child(child),
        compile_parallelism: 1,
        compile_timeout,
        ..EngineSettings::default()
    };
    Engine::new(settings).expect("an engine")
}

/// A compiler that is a shell script: `$0` is `log`, which it appends to.
fn script(script: &str, log: &Path) -> ChildCompiler {
    ChildCompiler::new("/bin/sh", ["-c", script, &log.display().to_string()])
}

#[tokio::test]
async fn a_provider_compiled_in_a_child_process_serves() {
    let engine = child_engine(ChildCompiler::new(binary(), ["compile-worker"]), Duration::from_secs(60));
    let provider = LoadedProvider::load(&engine, spec("fake", guest("provider-fake"), b"")).await.expect("it loads");
    assert_eq!(provider.info().name, "fake");
    let err = LoadedProvider::load(&engine, spec("other", guest("guest-other-world"), b"")).await.err().unwrap();
    assert!(matches!(err, LoadError::WrongWorld { .. }), "checked as ever: {err:?}");
}

#[tokio::test]
async fn a_component_that_failed_to_compile_is_not_compiled_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("compiles");
    let failing = script(r#"echo compiled >> "$0"; echo "the code is broken" >&2; exit 3"#, &log);
    let engine = child_engine(failing, Duration::from_secs(60));
    let compiles = || std::fs::read_to_string(&log).unwrap().lines().count();
    for load in 0..3 {
        let err = LoadedProvider::load(&engine, spec("broken", guest("provider-fake"), b"")).await.err().unwrap();
        assert!(matches!(&err, LoadError::Invalid(reason) if reason == "the code is broken"), "{err:?}");
        // Refused by the baseline compiler, then by Cranelift.
        assert_eq!(compiles(), 2, "the same bytes are compiled in one load only, not in load {load}");
    }
    let err = LoadedProvider::load(&engine, spec("other", guest("guest-hostile"), b"")).await.err().unwrap();
    assert!(matches!(err, LoadError::Invalid(_)), "{err:?}");
    assert_eq!(compiles(), 4, "other bytes are compiled");
}

/// Whether the process `pid` has ended (or only its exit status is left).
fn ended(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_or(true, |stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
}

#[tokio::test]
async fn a_compile_given_up_kills_its_process_and_gives_its_turn_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("pids");
    let stuck = script(r#"echo $$ >> "$0"; exec /bin/sleep 600"#, &log);
    let timeout = Duration::from_millis(300);
    let engine = child_engine(stuck, timeout);
    let pids = || std::fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_owned).collect::<Vec<_>>();

    let err = LoadedProvider::load(&engine, spec("stuck", guest("provider-fake"), b"")).await.err().unwrap();
    assert!(matches!(err, LoadError::CompileTimeout { limit } if limit == timeout), "{err:?}");
    let first = pids().pop().expect("the compiler process started");
    let given_up = Instant::now();
    while !ended(&first) {
        assert!(given_up.elapsed() < Duration::from_secs(5), "the compiler process {first} was not killed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // With one compile at a time, the next one starts at once: the turn of
    // the one given up on came back with it.
    let started = Instant::now();
    let err = LoadedProvider::load(&engine, spec("next", guest("guest-hostile"), b"")).await.err().unwrap();
    assert!(matches!(err, LoadError::CompileTimeout { .. }), "{err:?}");
    assert!(started.elapsed() < timeout + Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(pids().len(), 2);
    // A component given up on is not compiled again.
    let err = LoadedProvider::load(&engine, spec("stuck", guest("provider-fake"), b"")).await.err().unwrap();
    assert!(matches!(err, LoadError::CompileTimeout { .. }), "{err:?}");
    assert_eq!(pids().len(), 2, "no third compiler process");
}

/// A compiler that is a shell script: it runs `optimizing`, with `$0` the
/// path of `log`, for Cranelift's compiles, and the real compiler process
/// for Winch's.
fn cranelift_replaced_by(optimizing: &str, log: &Path) -> ChildCompiler {
    let script = format!(
        r#"read -r header; case "$header" in *" optimizing "*) {optimizing} ;; esac
        {{ printf '%s\n' "$header"; cat; }} | exec "{}" compile-worker"#,
        binary().display()
    );
    ChildCompiler::new("/bin/sh", ["-c", &script, &log.display().to_string()])
}

const CLUSTERS: &[u8] = br#"{"clusters": ["blue", "green"]}"#;

#[tokio::test]
async fn a_provider_serves_on_winchs_code_until_cranelifts_replaces_it() {
    let engine = child_engine(ChildCompiler::new(binary(), ["compile-worker"]), Duration::from_secs(60));
    let handle = ProviderHandle::new(
        LoadedProvider::load(&engine, spec("fake", guest("provider-fake"), CLUSTERS)).await.unwrap(),
    );
    assert_eq!(handle.current().code(), Tier::Baseline, "the load did not wait for Cranelift");
    assert_eq!(handle.list_clusters().await.unwrap(), ["blue", "green"]);
    assert_eq!(handle.current().settled_code().await, Tier::Optimizing);
    assert_eq!(handle.current().code(), Tier::Optimizing);
    assert_eq!(handle.list_clusters().await.unwrap(), ["blue", "green"], "the same answer from Cranelift's code");
}

#[tokio::test]
async fn a_provider_keeps_winchs_code_when_cranelift_fails() {
    let dir = tempfile::tempdir().unwrap();
    let failing = cranelift_replaced_by(r#"echo "out of luck" >&2; exit 3"#, &dir.path().join("log"));
    let engine = child_engine(failing, Duration::from_secs(60));
    let handle = ProviderHandle::new(
        LoadedProvider::load(&engine, spec("fake", guest("provider-fake"), CLUSTERS)).await.unwrap(),
    );
    assert_eq!(handle.current().settled_code().await, Tier::Baseline);
    assert_eq!(handle.list_clusters().await.unwrap(), ["blue", "green"], "it serves on");
}

#[tokio::test]
async fn a_provider_dropped_before_cranelifts_code_is_ready_stops_its_compile() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("pids");
    let engine =
        child_engine(cranelift_replaced_by(r#"echo $$ >> "$0"; exec /bin/sleep 600"#, &log), Duration::from_secs(600));
    let provider = LoadedProvider::load(&engine, spec("fake", guest("provider-fake"), CLUSTERS)).await.unwrap();
    let started = Instant::now();
    let compiler = loop {
        if let Some(pid) = std::fs::read_to_string(&log).unwrap_or_default().lines().next() {
            break pid.to_owned();
        }
        assert!(started.elapsed() < Duration::from_secs(10), "Cranelift's compile did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    drop(provider);
    while !ended(&compiler) {
        assert!(started.elapsed() < Duration::from_secs(10), "the compiler process {compiler} was not killed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // One compile at a time: the next load has its turn back.
    let next = LoadedProvider::load(&engine, spec("next", guest("provider-fake"), CLUSTERS)).await.expect("it loads");
    assert_eq!(next.code(), Tier::Baseline);
}

/// A component whose one function of 400,000 multiply-adds takes Cranelift
/// about 300 MiB and 2 to 3 s of CPU time to compile. It makes a tail call,
/// which the baseline compiler refuses, so that Cranelift compiles it.
fn heavy_component() -> Vec<u8> {
    let body = "local.get 0 i32.const 7 i32.mul local.get 1 i32.add local.set 1\n".repeat(400_000);
    let text = format!(
        "(component (core module (func (export \"f\") (param i32) (result i32) (local i32)\n{body} local.get 1)
           (func $again (export \"again\") return_call $again)))"
    );
    wat::parse_str(text).unwrap()
}

#[tokio::test]
async fn a_compile_past_its_memory_or_cpu_time_fails_and_the_next_provider_loads() {
    let heavy: std::sync::Arc<[u8]> = heavy_component().into();
    let limits = [
        (
            ChildCompiler { memory: 128 << 20, ..ChildCompiler::new(binary(), ["compile-worker"]) },
            "its memory of 134217728 bytes",
        ),
        (
            ChildCompiler { cpu_time: Duration::from_secs(1), ..ChildCompiler::new(binary(), ["compile-worker"]) },
            "its CPU time of 1s",
        ),
    ];
    for (child, limit) in limits {
        let engine = child_engine(child, Duration::from_secs(120));
        let err = LoadedProvider::load(&engine, spec("heavy", heavy.clone(), b"")).await.err().unwrap();
        assert!(matches!(&err, LoadError::CompileLimit(what) if what == limit), "{err:?}");
        assert_eq!(err.to_string(), format!("compiling the component went past {limit}"));
        let next = LoadedProvider::load(&engine, spec("next", guest("guest-hostile"), b"")).await.expect("it loads");
        assert_eq!(next.info().name, "hostile");
    }
}
