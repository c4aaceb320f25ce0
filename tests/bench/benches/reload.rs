//! Reloading a provider: verify (sha256 pin and signature) + compile +
//! smoke test (`initialize`) + swap, for the fake and the AWS provider,
//! compiled (at Cranelift's `speed` and `none` levels) and from the compile
//! cache, side by side, with the time until calls run Cranelift's code
//! (compiled after the swap, while Winch's serves); then failed calls while
//! 100 reloads swap a provider that calls run on continuously.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use wasm_ccm_bench::{Samples, cpu_time};
use wasm_ccm_cloud::Cloud;
use wasm_ccm_distribution::{SigningKey, Verification, sign_bytes, verify_bytes};
use wasm_ccm_host::OptLevel;
use wasm_ccm_host::{CacheOutcome, Engine, EngineSettings, LoadedProvider, ProviderHandle, ProviderSpec, Tier};
use wasm_ccm_tests::{guest, spec};

/// Reloads timed per provider without the cache (each compiles).
const COMPILING_RELOADS: usize = 5;
/// Reloads timed per provider with the cache (each hits).
const CACHED_RELOADS: usize = 20;
/// Reloads while calls run.
const RELOADS_UNDER_LOAD: usize = 100;
/// Tasks calling the provider continuously during those reloads.
const CALLERS: usize = 8;

/// A provider as a reload sees it: its bytes, their signature, and what to
/// check them against.
struct Candidate {
    name: &'static str,
    wasm: Arc<[u8]>,
    config: Vec<u8>,
    signature: String,
    verification: Verification,
    /// What a load through a filled compile cache finds.
    cached: CacheOutcome,
}

impl Candidate {
    fn new(name: &'static str, wasm: Arc<[u8]>, config: serde_json::Value, key: &SigningKey) -> anyhow::Result<Self> {
        let signature = sign_bytes(&wasm, key)?;
        let verification = Verification {
            pin: Some(wasm_ccm_distribution::sha256_digest(&wasm)),
            public_key: Some(key.public_key()?),
            ..Verification::none()
        };
        let config = config.to_string().into_bytes();
        Ok(Candidate { name, wasm, config, signature, verification, cached: CacheOutcome::Hit })
    }

    fn spec(&self) -> ProviderSpec {
        spec(self.name, self.wasm.clone(), &self.config)
    }
}

/// The time of each step of one reload.
struct Steps {
    verify: Duration,
    load: Duration,
    /// CPU time of the process (all threads) from the load until calls run
    /// Cranelift's code.
    load_cpu: Duration,
    swap: Duration,
    /// From the swap until calls run Cranelift's code.
    tier_up: Duration,
    outcome: CacheOutcome,
}

impl Steps {
    fn total(&self) -> Duration {
        self.verify + self.load + self.swap
    }
}

/// One reload of `candidate` into `handle`: verify, compile (or load from
/// the cache), check the world, `initialize`, swap; then waits until calls
/// run Cranelift's code.
async fn reload(engine: &Engine, handle: &ProviderHandle, candidate: &Candidate) -> anyhow::Result<Steps> {
    let started = Instant::now();
    verify_bytes(&candidate.wasm, Some(candidate.signature.as_bytes()), &candidate.verification)?;
    let verified = Instant::now();
    let cpu = cpu_time("self");
    let provider = LoadedProvider::load(engine, candidate.spec()).await?;
    let loaded = Instant::now();
    let outcome = provider.cache_outcome();
    drop(handle.swap(provider));
    let swapped = Instant::now();
    let code = handle.current().settled_code().await;
    anyhow::ensure!(code == Tier::Optimizing, "{}'s calls run {} code for good", candidate.name, code.as_str());
    Ok(Steps {
        verify: verified - started,
        load: loaded - verified,
        load_cpu: cpu_time("self").saturating_sub(cpu),
        swap: swapped - loaded,
        tier_up: swapped.elapsed(),
        outcome,
    })
}

/// Medians of each step over `count` reloads.
struct Medians {
    verify: Duration,
    load: Duration,
    load_cpu: Duration,
    swap: Duration,
    tier_up: Duration,
    total: Duration,
}

async fn reloads(
    engine: &Engine,
    handle: &ProviderHandle,
    candidate: &Candidate,
    count: usize,
    expected: CacheOutcome,
) -> anyhow::Result<Medians> {
    let mut steps = Vec::with_capacity(count);
    for _ in 0..count {
        let step = reload(engine, handle, candidate).await?;
        anyhow::ensure!(step.outcome == expected, "expected {expected:?}, got {:?}", step.outcome);
        steps.push(step);
    }
    let median = |part: fn(&Steps) -> Duration| Samples::new(steps.iter().map(part).collect()).median();
    Ok(Medians {
        verify: median(|s| s.verify),
        load: median(|s| s.load),
        load_cpu: median(|s| s.load_cpu),
        swap: median(|s| s.swap),
        tier_up: median(|s| s.tier_up),
        total: median(Steps::total),
    })
}

fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

fn micros(duration: Duration) -> String {
    wasm_ccm_bench::micros(duration)
}

/// The component with a custom section appended: other bytes, another
/// digest, the same code: a new version as far as a reload can tell.
fn with_version(wasm: &[u8], version: &str) -> Arc<[u8]> {
    let name = b"wasm-ccm-bench-version";
    let mut payload = vec![u8::try_from(name.len()).expect("a short name")];
    payload.extend_from_slice(name);
    payload.extend_from_slice(version.as_bytes());
    let mut bytes = wasm.to_vec();
    bytes.push(0); // a custom section
    let mut size = payload.len();
    loop {
        let byte = (size & 0x7f) as u8;
        size >>= 7;
        if size == 0 {
            bytes.push(byte);
            break;
        }
        bytes.push(byte | 0x80);
    }
    bytes.extend_from_slice(&payload);
    bytes.into()
}

/// What calls saw while reloads ran.
#[derive(Default)]
struct CallCounts {
    ok: AtomicU64,
    failed: AtomicU64,
    /// Answers of each version, told apart by the clusters it lists.
    v1: AtomicU64,
    v2: AtomicU64,
}

/// 100 reloads, alternating two versions, while `CALLERS` tasks call the
/// handle without pause; every error counts as a failed call.
async fn under_load(engine: &Engine, v1: &Candidate, v2: &Candidate) -> anyhow::Result<()> {
    let handle = ProviderHandle::new(LoadedProvider::load(engine, v1.spec()).await?);
    let counts = Arc::new(CallCounts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut callers = Vec::new();
    for _ in 0..CALLERS {
        let (handle, counts, stop) = (handle.clone(), counts.clone(), stop.clone());
        callers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                match handle.list_clusters().await {
                    Ok(clusters) => {
                        latencies.push(started.elapsed());
                        counts.ok.fetch_add(1, Ordering::Relaxed);
                        let version = if clusters == ["v1"] { &counts.v1 } else { &counts.v2 };
                        version.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(err) => {
                        counts.failed.fetch_add(1, Ordering::Relaxed);
                        eprintln!("failed call: {err}");
                    }
                }
            }
            latencies
        }));
    }
    let mut steps = Vec::with_capacity(RELOADS_UNDER_LOAD);
    let started = Instant::now();
    for i in 0..RELOADS_UNDER_LOAD {
        let candidate = if i % 2 == 0 { v2 } else { v1 };
        steps.push(reload(engine, &handle, candidate).await?);
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for caller in callers {
        latencies.extend(caller.await?);
    }
    let latencies = Samples::new(latencies);
    let totals = Samples::new(steps.iter().map(Steps::total).collect());
    let hits = steps.iter().filter(|step| step.outcome == CacheOutcome::Hit).count();
    println!(
        "| reloads | calls | failed calls | answered by v1 / v2 | reload median | reload p99 | call median | call p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| {RELOADS_UNDER_LOAD} in {:.1} s ({hits} cache hits) | {} | {} | {} / {} | {} | {} | {} | {} |",
        elapsed.as_secs_f64(),
        counts.ok.load(Ordering::Relaxed) + counts.failed.load(Ordering::Relaxed),
        counts.failed.load(Ordering::Relaxed),
        counts.v1.load(Ordering::Relaxed),
        counts.v2.load(Ordering::Relaxed),
        millis(totals.median()),
        millis(totals.p99()),
        micros(latencies.median()),
        micros(latencies.p99()),
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let key = SigningKey::generate()?;
        let candidates = [
            Candidate::new("fake", guest("provider-fake"), json!({"clusters": ["v1"]}), &key)?,
            Candidate::new("aws", guest("provider-aws"), json!({"region": "eu-west-1"}), &key)?,
            // Go's runtime reads the clocks while it starts: its snapshot
            // differs from load to load, and is compiled in every one.
            Candidate {
                cached: CacheOutcome::Miss,
                ..Candidate::new("fake-go", guest("provider-fake-go"), json!({"clusters": ["v1"]}), &key)?
            },
        ];
        let cache = tempfile::tempdir()?;
        let compiling = Engine::new(EngineSettings::default())?;
        let unoptimised = Engine::new(EngineSettings { opt_level: OptLevel::None, ..EngineSettings::default() })?;
        let cached = Engine::new(EngineSettings {
            compile_cache: Some(cache.path().join("compiled")),
            ..EngineSettings::default()
        })?;

        println!("## Reload: verify + compile + smoke test + swap (medians)\n");
        println!(
            "Without the cache: {COMPILING_RELOADS} reloads each; with the cache: {CACHED_RELOADS} reloads each, \
             after one that fills it. Total: until the new version serves. Then Cranelift's code: from the swap \
             until calls run it. CPU: the process's CPU time (all threads) from the compile until then.\n"
        );
        println!(
            "| provider | size | compiled code | verify | compile + smoke test | swap | total | total / cached \
             | then Cranelift's code | CPU |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for candidate in &candidates {
            let handle = ProviderHandle::new(LoadedProvider::load(&compiling, candidate.spec()).await?);
            let cold = reloads(&compiling, &handle, candidate, COMPILING_RELOADS, CacheOutcome::Disabled).await?;
            let quick = reloads(&unoptimised, &handle, candidate, COMPILING_RELOADS, CacheOutcome::Disabled).await?;
            // The first load through the cache compiles and stores.
            reloads(&cached, &handle, candidate, 1, CacheOutcome::Miss).await?;
            let warm = reloads(&cached, &handle, candidate, CACHED_RELOADS, candidate.cached).await?;
            let size = candidate.wasm.len();
            let through_cache =
                if candidate.cached == CacheOutcome::Hit { "from the cache" } else { "cache, snapshot compiled" };
            for (label, medians) in
                [("compiled, speed", &cold), ("compiled, opt-level none", &quick), (through_cache, &warm)]
            {
                println!(
                    "| {} | {size} B ({:.2} MB) | {label} | {} | {} | {} | {} | {:.1} | {} | {} |",
                    candidate.name,
                    size as f64 / 1e6,
                    millis(medians.verify),
                    millis(medians.load),
                    millis(medians.swap),
                    millis(medians.total),
                    medians.total.as_secs_f64() / warm.total.as_secs_f64(),
                    millis(medians.tier_up),
                    millis(medians.load_cpu),
                );
            }
        }

        println!("\n## Failed calls during {RELOADS_UNDER_LOAD} reloads under load\n");
        println!(
            "The fake provider, swapped {RELOADS_UNDER_LOAD} times between two versions (other bytes, other \
             config) with the cache, while {CALLERS} tasks call `list-clusters` without pause.\n"
        );
        let fake = guest("provider-fake");
        let v1 = Candidate::new("fake", with_version(&fake, "1"), json!({"clusters": ["v1"]}), &key)?;
        let v2 = Candidate::new("fake", with_version(&fake, "2"), json!({"clusters": ["v2"]}), &key)?;
        under_load(&cached, &v1, &v2).await?;
        Ok(())
    })
}
