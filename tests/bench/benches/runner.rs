//! The controllers' runner against kube-runtime's `Controller`: how many
//! keys each reconciles per second at 20 at once, with a reconcile that
//! does nothing and with one that waits 1 ms (as for the API server), on
//! 20 000 objects already in a cache. This is the measurement behind the
//! choice of runner (docs/bench-log).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wasm_ccm_controllers::Metrics;
use wasm_ccm_controllers::framework::runner::{self, Reconcile, Retry, Runner};

const OBJECTS: usize = 20_000;
const CONCURRENCY: usize = 20;

fn object(index: usize) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": format!("cm-{index:05}"), "namespace": "default"}}))
        .expect("a ConfigMap")
}

/// A cache holding every object.
fn store() -> Store<ConfigMap> {
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for index in 0..OBJECTS {
        writer.apply_watcher_event(&watcher::Event::InitApply(object(index)));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}

/// What both runners do with a key: look it up, wait, count.
struct Work {
    store: Store<ConfigMap>,
    wait: Option<Duration>,
    done: AtomicUsize,
}

impl Work {
    async fn run(&self, name: &str) {
        let key = reflector::ObjectRef::new(name).within("default");
        assert!(self.store.get(&key).is_some());
        if let Some(wait) = self.wait {
            tokio::time::sleep(wait).await;
        }
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

impl Reconcile for Work {
    type Key = String;

    const NAME: &'static str = "bench";
    const QUEUE: &'static str = "bench";
    fn retry(&self, _key: &Self::Key) -> Retry {
        Retry::NextTrigger
    }

    async fn reconcile(&self, name: &String) -> Result<runner::Action, wasm_ccm_controllers::Error> {
        self.run(name).await;
        Ok(runner::Action::AwaitChange)
    }
}

async fn ours(wait: Option<Duration>) -> Duration {
    let runner = Runner::new(Work { store: store(), wait, done: AtomicUsize::new(0) }, CONCURRENCY, Metrics::default());
    let work = runner.reconciler();
    let queue = runner.queue();
    let started = Instant::now();
    for index in 0..OBJECTS {
        queue.add(format!("cm-{index:05}"));
    }
    let stop = CancellationToken::new();
    let running = tokio::spawn(runner.run(stop.clone()));
    while work.done.load(Ordering::Relaxed) < OBJECTS {
        tokio::task::yield_now().await;
    }
    let elapsed = started.elapsed();
    stop.cancel();
    running.await.expect("the runner ends").expect("no worker failed");
    elapsed
}

async fn kube_runtime(wait: Option<Duration>) -> Duration {
    let store = store();
    let work = Arc::new(Work { store: store.clone(), wait, done: AtomicUsize::new(0) });
    // Triggers that never end, as a watch's: the controller runs until the
    // last reconcile is counted.
    let triggers = futures::stream::iter((0..OBJECTS).map(|index| Ok::<_, watcher::Error>(object(index))))
        .chain(futures::stream::pending());
    let started = Instant::now();
    Controller::for_stream(triggers, store)
        .with_config(Config::default().concurrency(CONCURRENCY as u16))
        .run(
            |object: Arc<ConfigMap>, work: Arc<Work>| async move {
                work.run(object.metadata.name.as_deref().unwrap_or_default()).await;
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
            |_, _, _| Action::await_change(),
            work.clone(),
        )
        .take_while(|_| std::future::ready(work.done.load(Ordering::Relaxed) < OBJECTS))
        .for_each(|_| async {})
        .await;
    assert_eq!(work.done.load(Ordering::Relaxed), OBJECTS);
    started.elapsed()
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        println!("## {OBJECTS} keys, {CONCURRENCY} at once\n");
        println!("| reconcile | project runner | kube-runtime Controller | ratio |");
        println!("|---|---|---|---|");
        for (label, wait) in [("no work", None), ("waits 1 ms", Some(Duration::from_millis(1)))] {
            let (mine, theirs) = (ours(wait).await, kube_runtime(wait).await);
            let rate = |elapsed: Duration| OBJECTS as f64 / elapsed.as_secs_f64();
            println!(
                "| {label} | {:.0} keys/s | {:.0} keys/s | {:.2} |",
                rate(mine),
                rate(theirs),
                rate(mine) / rate(theirs)
            );
        }
    });
    Ok(())
}
