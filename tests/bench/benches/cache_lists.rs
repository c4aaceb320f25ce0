//! What a cache of nodes costs to fill, by how its watch lists: in pages
//! of 500 read from etcd, as the caches do ([`watch_config`], kube-rs's
//! default), or whole from the API server's watch cache
//! (`resourceVersion=0`), as upstream's informers do.
//!
//! On a real kube-apiserver: `BENCH_NODES` nodes (default 5000), each with
//! 50 images in its status, as kubelets report by default
//! (`--node-status-max-images`). Reported for each way:
//! - the resident memory a process's peak grows by while it fills a cache
//!   of every node, trimmed as the caches trim them; each way in a process
//!   of its own, this benchmark run again with `BENCH_FILL`;
//! - rounds (`BENCH_ROUNDS`, default 3) in which each way fills a cache
//!   `FILLS` times in turn: the time and the API server's and etcd's CPU
//!   seconds per fill.
//!
//! Needs etcd and kube-apiserver (`KUBEBUILDER_ASSETS` or
//! `TEST_ASSET_KUBE_APISERVER`/`TEST_ASSET_ETCD`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ContainerImage, Node};
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use wasm_ccm_bench::services::create_all;
use wasm_ccm_bench::{cpu_time, nodes, peak_memory_kib};
use wasm_ccm_envtest::{Assets, ControlPlane, Identity, Options};
use wasm_ccm_kube::informer::{Trim, watch_config};

/// Cache fills of each way per round.
const FILLS: u32 = 20;

/// Images in each node's status, kubelet's default maximum.
const IMAGES: usize = 50;

/// How the watch lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// As the caches do: kube-rs's default, pages from etcd.
    Pages,
    /// As upstream's informers do: whole, from the API server's watch
    /// cache.
    WatchCache,
}

impl Listing {
    const ALL: [Listing; 2] = [Listing::Pages, Listing::WatchCache];

    fn config(self) -> watcher::Config {
        match self {
            Listing::Pages => watch_config(),
            // kube-rs sends resourceVersion 0 only without a page size.
            Listing::WatchCache => watcher::Config { page_size: None, ..watcher::Config::default().any_semantic() },
        }
    }

    fn name(self) -> &'static str {
        match self {
            Listing::Pages => "pages",
            Listing::WatchCache => "watch-cache",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Listing::Pages => "the caches' (etcd, pages of 500)",
            Listing::WatchCache => "upstream's (watch cache, whole)",
        }
    }

    fn from_name(name: &str) -> anyhow::Result<Self> {
        Listing::ALL
            .into_iter()
            .find(|listing| listing.name() == name)
            .ok_or_else(|| anyhow::anyhow!("BENCH_FILL: {name:?} is neither pages nor watch-cache"))
    }
}

fn count_from_env(name: &str, default: usize) -> anyhow::Result<usize> {
    match std::env::var(name) {
        Ok(value) => value.parse().map_err(|_| anyhow::anyhow!("{name}: {value:?} is not a count")),
        Err(_) => Ok(default),
    }
}

/// `count` nodes, each with [`IMAGES`] images of two names.
fn nodes_with_images(count: usize) -> Vec<Node> {
    nodes(count)
        .into_iter()
        .map(|mut node| {
            (node.metadata.uid, node.metadata.resource_version) = (None, None);
            let images = (0..IMAGES)
                .map(|index| ContainerImage {
                    names: Some(vec![
                        format!("registry.example.com/team/image-{index}@sha256:{:064x}", index),
                        format!("registry.example.com/team/image-{index}:v1.2.{index}"),
                    ]),
                    size_bytes: Some(100_000_000),
                })
                .collect();
            node.status.get_or_insert_default().images = Some(images);
            node
        })
        .collect()
}

/// Watches `api` until its initial list is done, and says how many nodes
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

/// In a process of its own: fills a trimmed cache of every node as
/// `listing` lists, and prints how many KiB the peak resident memory grew
/// by, and how many nodes the cache holds.
async fn fill_alone(listing: Listing, kubeconfig: &Path) -> anyhow::Result<()> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let api = Api::<Node>::all(kube::Client::try_from(config)?);
    let before = peak_memory_kib(std::process::id());
    let (store, writer) = reflector::store();
    let mut stream = std::pin::pin!(reflector(writer, watcher(api, listing.config()).modify(Trim::trim)));
    while let Some(event) = stream.next().await {
        if let watcher::Event::InitDone = event? {
            break;
        }
    }
    println!("{} {}", peak_memory_kib(std::process::id()) - before, store.state().len());
    Ok(())
}

/// Runs this benchmark again to fill a cache as `listing` lists, and says
/// how many KiB its peak resident memory grew by.
fn peak_growth(listing: Listing, kubeconfig: &Path, count: usize) -> anyhow::Result<u64> {
    let output = Command::new(std::env::current_exe()?)
        .env("BENCH_FILL", listing.name())
        .env("BENCH_KUBECONFIG", kubeconfig)
        .output()?;
    anyhow::ensure!(output.status.success(), "the fill failed: {}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout)?;
    let (grown, held) = stdout.trim().split_once(' ').ok_or_else(|| anyhow::anyhow!("the fill said {stdout:?}"))?;
    anyhow::ensure!(held.parse::<usize>()? == count, "the cache held {held} of {count} nodes");
    Ok(grown.parse()?)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if let Ok(name) = std::env::var("BENCH_FILL") {
        let kubeconfig = std::env::var_os("BENCH_KUBECONFIG").ok_or_else(|| anyhow::anyhow!("no BENCH_KUBECONFIG"))?;
        return fill_alone(Listing::from_name(&name)?, Path::new(&kubeconfig)).await;
    }
    let assets = Assets::find_or_skip("the cache lists benchmark")?
        .ok_or_else(|| anyhow::anyhow!("set KUBEBUILDER_ASSETS or TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD"))?;
    let (count, rounds) = (count_from_env("BENCH_NODES", 5000)?, count_from_env("BENCH_ROUNDS", 3)?);
    let plane = ControlPlane::start(&assets, Options { audit: false }).await?;
    let api = Api::<Node>::all(plane.client(Identity::Admin).await?);
    create_all(&api, nodes_with_images(count)).await?;
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(Identity::Admin, &kubeconfig)?;

    println!("## Filling a cache of {count} nodes with {IMAGES} images each\n");
    println!("| listing | peak resident memory grown by |\n|---|---|");
    for listing in Listing::ALL {
        let grown = peak_growth(listing, &kubeconfig, count)?;
        println!("| {} | {:.1} MiB |", listing.label(), grown as f64 / 1024.0);
    }

    let server_cpu = || {
        let apiserver = plane.apiserver_pid().map(|pid| cpu_time(&pid.to_string())).unwrap_or_default();
        apiserver + cpu_time(&plane.etcd_pid().to_string())
    };
    println!("\n{FILLS} fills of each way per round:\n");
    println!("| round | listing | time per fill | API server + etcd CPU per fill |\n|---|---|---|---|");
    let mut totals = Listing::ALL.map(|listing| (listing, Duration::ZERO, Duration::ZERO));
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
        let (time, cpu) = (ms(time / rounds), ms(cpu / rounds));
        println!("{}: {time:.1} ms per fill, {cpu:.1} ms of API server + etcd CPU", listing.label());
    }
    Ok(())
}
