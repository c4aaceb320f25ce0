//! What the API server spends to fill a cache of nodes, by how the watch
//! lists: as the caches do ([`watch_config`], one list from the API
//! server's watch cache), or at kube-rs's default (quorum reads from etcd,
//! in pages of 500).
//!
//! On a real kube-apiserver: `BENCH_NODES` Ready nodes (default 5000),
//! then rounds in which each way fills a cache `FILLS` times in turn.
//! Reported: the time and the API server's and etcd's CPU seconds per
//! fill, by round and their mean per way.
//!
//! Needs etcd and kube-apiserver (`KUBEBUILDER_ASSETS` or
//! `TEST_ASSET_KUBE_APISERVER`/`TEST_ASSET_ETCD`); `BENCH_ROUNDS` sets the
//! rounds (default 3).

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::watcher;
use wasm_ccm_bench::services::create_all;
use wasm_ccm_bench::{cpu_time, nodes};
use wasm_ccm_envtest::{Assets, ControlPlane, Identity, Options};
use wasm_ccm_kube::informer::watch_config;

/// Cache fills of each way per round.
const FILLS: u32 = 20;

/// How the watch lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// As the caches do.
    Caches,
    /// kube-rs's default.
    KubeDefault,
}

impl Listing {
    fn config(self) -> watcher::Config {
        match self {
            Listing::Caches => watch_config(),
            Listing::KubeDefault => watcher::Config::default(),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Listing::Caches => "the caches' (watch cache, one list)",
            Listing::KubeDefault => "kube-rs's default (etcd, pages of 500)",
        }
    }
}

fn from_env(name: &str, default: usize) -> anyhow::Result<usize> {
    match std::env::var(name) {
        Ok(value) => value.parse().map_err(|_| anyhow::anyhow!("{name}: {value:?} is not a count")),
        Err(_) => Ok(default),
    }
}

/// Watches `api` until the cache would hold every node, and says how many
/// it listed.
async fn fill(api: &Api<Node>, listing: Listing) -> anyhow::Result<usize> {
    let mut stream = std::pin::pin!(watcher(api.clone(), listing.config()));
    let mut listed = 0;
    while let Some(event) = stream.next().await {
        match event? {
            watcher::Event::InitApply(_) => listed += 1,
            watcher::Event::InitDone => return Ok(listed),
            _ => {}
        }
    }
    anyhow::bail!("the watch ended before the list did")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let assets = Assets::find_or_skip("the cache lists benchmark")?
        .ok_or_else(|| anyhow::anyhow!("set KUBEBUILDER_ASSETS or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD"))?;
    let (count, rounds) = (from_env("BENCH_NODES", 5000)?, from_env("BENCH_ROUNDS", 3)?);
    let plane = ControlPlane::start(&assets, Options { audit: false }).await?;
    let api = Api::<Node>::all(plane.client(Identity::Admin).await?);
    let created = nodes(count)
        .into_iter()
        .map(|mut node| {
            (node.metadata.uid, node.metadata.resource_version) = (None, None);
            node
        })
        .collect();
    create_all(&api, created).await?;
    let server_cpu = || {
        let apiserver = plane.apiserver_pid().map(|pid| cpu_time(&pid.to_string())).unwrap_or_default();
        apiserver + cpu_time(&plane.etcd_pid().to_string())
    };
    println!("## Filling a cache of {count} nodes, {FILLS} times per round\n");
    println!("| round | listing | time per fill | API server + etcd CPU per fill |\n|---|---|---|---|");
    let mut totals =
        [(Listing::Caches, Duration::ZERO, Duration::ZERO), (Listing::KubeDefault, Duration::ZERO, Duration::ZERO)];
    for round in 1..=rounds {
        for (listing, time, cpu) in &mut totals {
            let (started, cpu_before) = (Instant::now(), server_cpu());
            for _ in 0..FILLS {
                let listed = fill(&api, *listing).await?;
                anyhow::ensure!(listed == count, "{} listed {listed} of {count} nodes", listing.label());
            }
            let (elapsed, used) = (started.elapsed() / FILLS, (server_cpu() - cpu_before) / FILLS);
            (*time, *cpu) = (*time + elapsed, *cpu + used);
            println!("| {round} | {} | {:.1} ms | {:.1} ms |", listing.label(), ms(elapsed), ms(used));
        }
    }
    let rounds = u32::try_from(rounds)?.max(1);
    println!();
    for (listing, time, cpu) in totals {
        println!(
            "{}: {:.1} ms per fill, {:.1} ms of API server + etcd CPU",
            listing.label(),
            ms(time / rounds),
            ms(cpu / rounds)
        );
    }
    Ok(())
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
