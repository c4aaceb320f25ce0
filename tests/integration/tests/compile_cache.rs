//! The compile cache through provider loads: hits after a first load and
//! across engines, misses when the engine's code generation changes, and
//! entries this host did not write (tampered, planted, copied from another
//! cache) refused, compiled again and overwritten.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use wasm_ccm_cloud::Cloud;
use wasm_ccm_host::OptLevel;
use wasm_ccm_host::compile::component;
use wasm_ccm_host::{
    Allocation, CacheOutcome, Engine, EngineSettings, LoadError, LoadedProvider, ProviderHandle, Tier,
};
use wasm_ccm_tests::{CapturedLogs, guest, spec};

/// Warnings of every thread of this process: compilation, and so the
/// cache's warnings, runs on a blocking thread, not on the test's.
fn warnings() -> &'static CapturedLogs {
    static LOGS: OnceLock<CapturedLogs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = CapturedLogs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        logs
    })
}

fn engine_with_cache(dir: &Path, opt_level: OptLevel) -> Engine {
    Engine::new(EngineSettings {
        allocation: Allocation::OnDemand,
        compile_cache: Some(dir.to_owned()),
        opt_level,
        ..EngineSettings::default()
    })
    .expect("an engine with a compile cache")
}

fn uncached() -> Engine {
    Engine::new(EngineSettings { allocation: Allocation::OnDemand, ..EngineSettings::default() }).unwrap()
}

/// Loads the fake provider and waits until its calls run their final code,
/// so that Cranelift's code of its snapshot, compiled after the load, is in
/// the cache.
async fn load(engine: &Engine, wasm: &[u8]) -> LoadedProvider {
    let provider = LoadedProvider::load(engine, spec("fake", wasm.into(), br#"{"clusters": ["blue", "green"]}"#))
        .await
        .expect("the provider loads");
    assert_eq!(provider.settled_code().await, Tier::Optimizing);
    provider
}

/// The cache's entries (`*.cwasm`), in name order.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cwasm"))
        .collect();
    entries.sort();
    entries
}

/// Writes `bytes` over every entry of the cache.
fn overwrite_all(dir: &Path, bytes: &[u8]) {
    for entry in entries(dir) {
        std::fs::write(entry, bytes).unwrap();
    }
}

#[tokio::test]
async fn a_second_load_hits_the_cache_and_serves() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = guest("provider-fake");
    let engine = engine_with_cache(dir.path(), OptLevel::Speed);
    let first = load(&engine, &wasm).await;
    assert_eq!(first.cache_outcome(), CacheOutcome::Miss);
    let cached = entries(dir.path());
    assert_eq!(cached.len(), 2, "the component instrumented for its snapshot, and the snapshot");
    // An entry is named `<component's sha256>-<engine's>.cwasm`.
    let engines: Vec<String> = cached
        .iter()
        .map(|path| path.file_stem().unwrap().to_str().unwrap().split_once('-').unwrap().1.to_owned())
        .collect();
    assert_ne!(engines[0], engines[1], "the code that runs once and the code calls run come from two compilers");
    let calls_engine =
        engine.compile_cache().unwrap().entry_path(b"").file_stem().unwrap().to_str().unwrap().to_owned();
    assert_eq!(engines.iter().filter(|engine| calls_engine.ends_with(engine.as_str())).count(), 1);

    let second = LoadedProvider::load(&engine, spec("fake", wasm.clone(), br#"{"clusters": ["blue", "green"]}"#))
        .await
        .expect("the provider loads");
    assert_eq!(second.cache_outcome(), CacheOutcome::Hit);
    assert_eq!(second.code(), Tier::Optimizing, "from its first call: Cranelift's code of the snapshot was cached");
    // Another engine with the same settings, as after a restart.
    let restarted = engine_with_cache(dir.path(), OptLevel::Speed);
    let third = load(&restarted, &wasm).await;
    assert_eq!(third.cache_outcome(), CacheOutcome::Hit);
    assert_eq!(entries(dir.path()), cached, "the snapshot's randomness is seeded: the same snapshot, cached");
    let from_cache = ProviderHandle::new(third);
    assert_eq!(from_cache.info().name, "fake");
    let compiled = load(&uncached(), &wasm).await;
    assert_eq!(compiled.cache_outcome(), CacheOutcome::Disabled);
    let compiled = ProviderHandle::new(compiled);
    let clusters = from_cache.list_clusters().await.expect("a call on code from the cache");
    assert_eq!(clusters, ["blue", "green"]);
    assert_eq!(clusters, compiled.list_clusters().await.unwrap());
    drop(first);

    let mut registry = prometheus_client::registry::Registry::default();
    engine.metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains(r#"provider_loads_total{provider="fake",cache="miss"} 1"#), "{text}");
    assert!(text.contains(r#"provider_loads_total{provider="fake",cache="hit"} 1"#), "{text}");
}

#[tokio::test]
async fn changing_how_code_is_generated_misses() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = guest("provider-fake");
    let fast = engine_with_cache(dir.path(), OptLevel::Speed);
    assert_eq!(load(&fast, &wasm).await.cache_outcome(), CacheOutcome::Miss);
    assert_eq!(load(&fast, &wasm).await.cache_outcome(), CacheOutcome::Hit);

    let unoptimised = engine_with_cache(dir.path(), OptLevel::None);
    assert_ne!(
        unoptimised.compile_cache().unwrap().entry_path(&wasm),
        fast.compile_cache().unwrap().entry_path(&wasm),
        "the engine's compatibility is part of the entry's name"
    );
    assert_eq!(load(&unoptimised, &wasm).await.cache_outcome(), CacheOutcome::Miss, "its snapshot is compiled");
    assert_eq!(load(&unoptimised, &wasm).await.cache_outcome(), CacheOutcome::Hit);
    assert_eq!(
        entries(dir.path()).len(),
        3,
        "one snapshot per optimisation level; the baseline compiler's instrumented component is shared"
    );
    // The first engine's entry is still there and still its own.
    assert_eq!(load(&fast, &wasm).await.cache_outcome(), CacheOutcome::Hit);

    // Another component is another entry.
    let other = guest("guest-hostile");
    let hostile = LoadedProvider::load(&fast, spec("hostile", other, b"")).await.unwrap();
    assert_eq!(hostile.cache_outcome(), CacheOutcome::Miss);
    assert_eq!(hostile.settled_code().await, Tier::Optimizing);
    assert_eq!(entries(dir.path()).len(), 5);
}

#[tokio::test]
async fn a_tampered_entry_is_refused_compiled_again_and_overwritten() {
    // Sets the process's global log subscriber: alone in a process.
    if !wasm_ccm_tests::in_own_process!(a_tampered_entry_is_refused_compiled_again_and_overwritten) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wasm = guest("provider-fake");
    let engine = engine_with_cache(dir.path(), OptLevel::Speed);
    assert_eq!(load(&engine, &wasm).await.cache_outcome(), CacheOutcome::Miss);
    let paths = entries(dir.path());
    let genuine: Vec<Vec<u8>> = paths.iter().map(|path| std::fs::read(path).unwrap()).collect();

    // One bit of the machine code, in the middle of each entry.
    let tampered: Vec<Vec<u8>> = genuine
        .iter()
        .map(|bytes| {
            let mut tampered = bytes.clone();
            let middle = tampered.len() / 2;
            tampered[middle] ^= 0x01;
            tampered
        })
        .collect();
    for (path, bytes) in paths.iter().zip(&tampered) {
        std::fs::write(path, bytes).unwrap();
    }
    let logs = warnings();
    let provider = load(&engine, &wasm).await;
    assert_eq!(provider.cache_outcome(), CacheOutcome::Rejected);
    assert_eq!(ProviderHandle::new(provider).info().name, "fake");
    for path in &paths {
        let warning = logs.text().lines().find(|line| line.contains(&path.display().to_string())).map(str::to_owned);
        let warning = warning.unwrap_or_else(|| panic!("no warning names {}:\n{}", path.display(), logs.text()));
        assert!(warning.contains("compile cache entry refused; compiling again"), "{warning}");
        assert!(warning.contains("the entry's tag does not verify with the cache's key"), "{warning}");
    }
    // Compiling the same component twice need not give the same bytes.
    for (path, bytes) in paths.iter().zip(&tampered) {
        assert!(
            std::fs::read(path).unwrap() != *bytes,
            "{} was written again from a fresh compilation",
            path.display()
        );
    }
    assert_eq!(load(&engine, &wasm).await.cache_outcome(), CacheOutcome::Hit);

    // Truncated, as by a full disk.
    for (path, bytes) in paths.iter().zip(&genuine) {
        std::fs::write(path, &bytes[..bytes.len() / 3]).unwrap();
    }
    assert_eq!(load(&engine, &wasm).await.cache_outcome(), CacheOutcome::Rejected);
    assert_eq!(load(&engine, &wasm).await.cache_outcome(), CacheOutcome::Hit);
}

#[tokio::test]
async fn entries_this_host_did_not_write_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fake = guest("provider-fake");
    let engine = engine_with_cache(dir.path(), OptLevel::Speed);
    assert_eq!(load(&engine, &fake).await.cache_outcome(), CacheOutcome::Miss);
    let genuine = std::fs::read(&entries(dir.path())[0]).unwrap();
    let header_len = genuine.iter().position(|&b| b == b'\n').unwrap() + 1;
    let header = &genuine[..header_len];

    // Another provider's real machine code, planted under the fake
    // provider's names: bare, as wasmtime serialises it, and dressed with
    // the cache's header and a made-up tag.
    let hostile = component::compile(&engine, &guest("guest-hostile")).unwrap().serialize().unwrap();
    let mut dressed = header.to_vec();
    dressed.extend_from_slice(&[0x5a; 32]);
    dressed.extend_from_slice(&hostile);
    for planted in [hostile.clone(), dressed] {
        overwrite_all(dir.path(), &planted);
        let provider = load(&engine, &fake).await;
        assert_eq!(provider.cache_outcome(), CacheOutcome::Rejected);
        assert_eq!(ProviderHandle::new(provider).info().name, "fake", "the planted code did not run");
        for path in entries(dir.path()) {
            assert!(std::fs::read(&path).unwrap() != planted, "{} was overwritten", path.display());
        }
    }

    // Genuine entries of another cache, with its own key: on another
    // machine, from a backup, or from an image.
    let elsewhere = tempfile::tempdir().unwrap();
    let other_engine = engine_with_cache(elsewhere.path(), OptLevel::Speed);
    assert_eq!(load(&other_engine, &fake).await.cache_outcome(), CacheOutcome::Miss);
    for foreign in entries(elsewhere.path()) {
        let path = dir.path().join(foreign.file_name().unwrap());
        assert!(std::fs::read(&foreign).unwrap() != std::fs::read(&path).unwrap(), "another key, another tag");
        std::fs::copy(&foreign, &path).unwrap();
    }
    assert_eq!(load(&engine, &fake).await.cache_outcome(), CacheOutcome::Rejected);
    assert_eq!(load(&engine, &fake).await.cache_outcome(), CacheOutcome::Hit);
}

#[tokio::test]
async fn a_cache_others_can_write_to_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let settings = EngineSettings { compile_cache: Some(shared.clone()), ..EngineSettings::default() };
    let err = Engine::new(settings).err().expect("the engine refuses the cache");
    assert!(matches!(err, LoadError::CompileCache(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("compile cache {} is refused: mode 777 makes it writable by its group or others", shared.display())
    );
}
