//! The fake provider written in Go beside the same provider in Rust: the
//! component's size and compile time, instantiation plus a trivial call (Go
//! starts its runtime, garbage collector and scheduler in every fresh
//! instance), a call through `initialize`, ensure-load-balancer with 1, 100
//! and 1000 nodes against the fake cloud, and memory per live instance.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::time::{Duration, Instant};

use serde_json::json;
use wasm_ccm_bench::{Samples, fakes, micros, nodes, service};
use wasm_ccm_cloud::{Cloud, NodeSet};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_host::compile::component;
use wasm_ccm_host::{Engine, EngineSettings, Limits};
use wasm_ccm_tests::guest;

const FAKES: [(&str, &str); 2] = [("Rust", "provider-fake"), ("Go", "provider-fake-go")];
const COMPILES: usize = 3;
const PROBES: usize = 2000;
const ENSURES: usize = 300;
const LIVE_INSTANCES: usize = 100;

fn millis(duration: Duration) -> String {
    format!("{:.0} ms", duration.as_secs_f64() * 1e3)
}

/// Compiling the component, `COMPILES` times, without a cache.
fn compile(engine: &Engine, wasm: &[u8]) -> anyhow::Result<Samples> {
    let mut samples = Vec::with_capacity(COMPILES);
    for _ in 0..COMPILES {
        let started = Instant::now();
        component::compile(engine, wasm)?;
        samples.push(started.elapsed());
    }
    Ok(Samples::new(samples))
}

/// Instantiation plus `name()`, and instantiation plus `initialize` (the
/// provider's configuration parsed) plus `instances-v2.exists` answered
/// from it.
async fn calls(engine: &Engine, component: &str) -> anyhow::Result<(Samples, Samples)> {
    let config = json!({"instances": [{"name": "node-0000", "id": "i-0"}]});
    let handle = fakes::load(engine, component, config, None, Limits::default()).await?;
    let name = fakes::timed(PROBES, async || Ok(handle.probe().await?)).await?;
    let node = nodes(1).remove(0);
    let exists = fakes::timed(PROBES, async || {
        anyhow::ensure!(handle.instance_exists(&node).await?, "node-0000 exists");
        Ok(())
    })
    .await?;
    Ok((name, exists))
}

/// ensure-load-balancer on an existing load balancer: two round trips to
/// the fake cloud and the node list written to it.
async fn ensure(engine: &Engine, component: &str, node_count: usize) -> anyhow::Result<Samples> {
    let cloud = FakeCloud::start().await?;
    let config = json!({"cloud": cloud.url(), "loadBalancerPool": ["198.18.0.0/16"]});
    let handle = fakes::load(engine, component, config, Some(&cloud), Limits::default()).await?;
    let (service, nodes) = (service(), NodeSet::of(nodes(node_count)));
    let mut samples = Vec::with_capacity(ENSURES);
    handle.ensure_load_balancer(&service, &nodes).await?;
    for _ in 0..ENSURES {
        let started = Instant::now();
        handle.ensure_load_balancer(&service, &nodes).await?;
        samples.push(started.elapsed());
    }
    Ok(Samples::new(samples))
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let engine = Engine::new(EngineSettings::default())?;

        println!("## Size and compile time (median of {COMPILES} compiles, Cranelift, no cache)\n");
        println!("| provider | component | compile |\n|---|---|---|");
        for (label, crate_name) in FAKES {
            let wasm = guest(crate_name);
            let compiled = compile(&engine, &wasm)?;
            println!("| {label} | {:.0} KB | {} |", wasm.len() as f64 / 1000.0, millis(compiled.median()));
        }

        println!("\n## Calls, each in a fresh instance ({PROBES} calls, one at a time)\n");
        println!(
            "| provider | instantiate + `name` median | p99 | instantiate + `initialize` + `exists` median | p99 |"
        );
        println!("|---|---|---|---|---|");
        let mut medians = Vec::new();
        for (label, crate_name) in FAKES {
            let (name, exists) = calls(&engine, crate_name).await?;
            println!(
                "| {label} | {} | {} | {} | {} |",
                micros(name.median()),
                micros(name.p99()),
                micros(exists.median()),
                micros(exists.p99())
            );
            medians.push((name.median(), exists.median()));
        }
        let ((rust_name, rust_exists), (go_name, go_exists)) = (medians[0], medians[1]);
        println!(
            "\nGo's extra per call: {} with `name` alone (its runtime's start-up), {} with `initialize` and a call.",
            micros(go_name.saturating_sub(rust_name)),
            micros(go_exists.saturating_sub(rust_exists))
        );

        println!("\n## ensure-load-balancer against the fake cloud ({ENSURES} calls each, medians)\n");
        println!("| nodes | Rust | Go | Go / Rust |\n|---|---|---|---|");
        for count in [1, 100, 1000] {
            let rust = ensure(&engine, FAKES[0].1, count).await?.median();
            let go = ensure(&engine, FAKES[1].1, count).await?.median();
            println!("| {count} | {} | {} | {:.2} |", micros(rust), micros(go), go.as_secs_f64() / rust.as_secs_f64());
        }

        println!("\n## Memory per live instance ({LIVE_INSTANCES} instances alive at once)\n");
        println!("| provider | resident per instance |\n|---|---|");
        for (label, crate_name) in FAKES {
            let per_instance = fakes::memory_per_instance(&engine, crate_name, LIVE_INSTANCES).await?;
            println!("| {label} | {:.0} KiB |", per_instance as f64 / 1024.0);
        }
        anyhow::Ok(())
    })
}
