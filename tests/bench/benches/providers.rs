//! Several providers in one process, as `wasm-ccm run --providers-config`
//! runs them: the controllers in this process on the API server harness,
//! each provider a real fake-provider component with its own service
//! controller lane, its load balancers stateless (addresses derived from
//! the Service's UID, no cloud round trip), so that the controllers and the
//! sandbox are measured.
//!
//! Side by side in one run: the memory an idle provider takes beyond its
//! compiled code (RSS of this process with 1 and with 21 providers serving,
//! measured first, in a fresh process); 1000 Services served by 10
//! providers (100 each) against the same served by one (existing before
//! the controllers start; the clock starts with them); and a good
//! provider's 200 Services alone and beside a hostile provider whose
//! Services spin, grow memory and sleep past its 2 s deadline (created
//! while the controllers run; the clock starts with the first creation).
//!
//! Needs the fake provider and the hostile guest (`providers/build.sh`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_bench::services::create_all;
use wasm_ccm_bench::{load_optimized, resident_bytes};
use wasm_ccm_controllers::{
    ControllerManager, LoadBalancerPolicy, ManagerError, Member, Members, Metrics, Readiness, Serves, Settings,
    enabled_controllers,
};
use wasm_ccm_host::{Engine, EngineSettings, LoadedProvider, ProviderHandle};
use wasm_ccm_tests::{guest, spec};

/// Services of the throughput runs.
const SERVICES: usize = 1000;
/// Providers sharing them in the many-provider run.
const PROVIDERS: usize = 10;
/// Runs of each throughput setup, alternated.
const ROUNDS: usize = 2;
/// The good provider's Services per noisy-neighbour run.
const GOOD_SERVICES: usize = 200;
/// The hostile provider's Services per attack.
const HOSTILE_SERVICES: usize = 20;
/// Idle providers added to the first for the memory figure.
const IDLE: usize = 20;
const TIMEOUT: Duration = Duration::from_secs(300);

/// The class provider `name` serves.
fn class(name: &str) -> String {
    format!("{name}.example/lb")
}

/// The fake provider `name`, its stateless load balancers' addresses from
/// its own network `10.<index>.0.0/16`.
async fn fake(engine: &Engine, name: &str, index: usize) -> anyhow::Result<Member<ProviderHandle>> {
    let config = json!({"statelessLoadBalancers": true, "loadBalancerPool": [format!("10.{index}.0.0/16")]});
    let provider = load_optimized(engine, spec(name, guest("provider-fake"), config.to_string().as_bytes())).await?;
    Ok(member(provider, name))
}

fn member(provider: LoadedProvider, name: &str) -> Member<ProviderHandle> {
    let serves = Serves { load_balancer_classes: BTreeSet::from([class(name)]), ..Serves::default() };
    Member { cloud: ProviderHandle::new(provider), serves, load_balancers: LoadBalancerPolicy::default() }
}

/// A LoadBalancer Service of `class` with `annotations`.
fn service(name: &str, class: &str, annotations: &[(&str, &str)]) -> Service {
    let annotations: serde_json::Map<String, serde_json::Value> =
        annotations.iter().map(|(key, value)| ((*key).to_owned(), json!(value))).collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": class, "ports": [{"name": "http", "port": 80}]},
    }))
    .expect("a Service")
}

/// The controllers serving `members` on `api`, until dropped.
struct Controllers {
    providers: watch::Sender<Members<ProviderHandle>>,
    readiness: Readiness,
    stop: CancellationToken,
    task: JoinHandle<Result<(), ManagerError>>,
}

impl Controllers {
    async fn start(api: &ApiServer, members: Members<ProviderHandle>) -> anyhow::Result<Self> {
        let settings = Settings {
            controllers: enabled_controllers(&["service".to_owned()]).map_err(anyhow::Error::msg)?,
            ..Settings::default()
        };
        let (providers, followed) = watch::channel(members);
        let manager = ControllerManager::with_providers(api.client().await, followed, settings, Metrics::default());
        let (stop, readiness) = (CancellationToken::new(), Readiness::default());
        let task = tokio::spawn(manager.run(stop.clone(), readiness.clone()));
        Ok(Controllers { providers, readiness, stop, task })
    }

    async fn ready(&self) -> anyhow::Result<()> {
        let started = Instant::now();
        while !self.readiness.is_ready() {
            anyhow::ensure!(!self.task.is_finished(), "the controllers stopped");
            anyhow::ensure!(started.elapsed() < TIMEOUT, "the controllers did not get ready");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        Ok(self.task.await??)
    }
}

/// Waits until every Service of `names` has an ingress, and says how long
/// after `started` that was.
async fn all_ingress(api: &ApiServer, names: &[String], started: Instant) -> anyhow::Result<Duration> {
    let has_ingress = |name: &String| {
        api.object("services", Some("default"), name)
            .is_some_and(|service| service["status"]["loadBalancer"]["ingress"][0]["ip"].is_string())
    };
    let mut left: Vec<&String> = names.iter().collect();
    while !left.is_empty() {
        anyhow::ensure!(started.elapsed() < TIMEOUT, "{} Services have no ingress", left.len());
        left.retain(|name| !has_ingress(name));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(started.elapsed())
}

/// Creates `services`, 64 at once.
async fn create(api: &ApiServer, services: Vec<Service>) -> anyhow::Result<()> {
    create_all(&Api::<Service>::namespaced(api.client().await, "default"), services).await
}

/// Resident memory after the process settles.
async fn settled_resident_bytes() -> u64 {
    tokio::time::sleep(Duration::from_secs(2)).await;
    resident_bytes()
}

/// The resident memory of one idle provider beyond its compiled code: the
/// code's size, and the growth per provider from 1 to `1 + IDLE` providers
/// serving an idle lane each.
async fn idle_memory(engine: &Engine) -> anyhow::Result<(u64, u64)> {
    let code = {
        let component = wasm_ccm_host::compile::component::compile(engine, &guest("provider-fake"))?;
        let range = component.image_range();
        range.end as u64 - range.start as u64
    };
    let api = ApiServer::start().await?;
    let controllers =
        Controllers::start(&api, Members::from([(Arc::from("idle-00"), fake(engine, "idle-00", 0).await?)])).await?;
    controllers.ready().await?;
    let one = settled_resident_bytes().await;
    for index in 1..=IDLE {
        let name = format!("idle-{index:02}");
        let member = fake(engine, &name, index).await?;
        controllers.providers.send_modify(|members| {
            members.insert(Arc::from(name.as_str()), member);
        });
    }
    let many = settled_resident_bytes().await;
    controllers.stop().await?;
    Ok((code, many.saturating_sub(one) / IDLE as u64))
}

/// 1000 existing Services of `providers` providers' classes, in turn: the
/// time from the controllers' start until every one has an ingress.
async fn throughput(engine: &Engine, providers: usize) -> anyhow::Result<Duration> {
    let api = ApiServer::start().await?;
    let names: Vec<String> = (0..providers).map(|index| format!("vendor-{index:02}")).collect();
    let mut members = Members::new();
    for (index, name) in names.iter().enumerate() {
        members.insert(Arc::from(name.as_str()), fake(engine, name, index).await?);
    }
    let services: Vec<String> = (0..SERVICES).map(|index| format!("svc-{index:04}")).collect();
    create(
        &api,
        services
            .iter()
            .enumerate()
            .map(|(index, name)| service(name, &class(&names[index % providers]), &[]))
            .collect(),
    )
    .await?;
    let started = Instant::now();
    let controllers = Controllers::start(&api, members).await?;
    let time = all_ingress(&api, &services, started).await?;
    controllers.stop().await?;
    Ok(time)
}

/// The good provider's 200 Services created while the controllers run,
/// alone or beside a hostile provider under attack: the time from the first
/// creation until every one has an ingress.
async fn neighbour(engine: &Engine, hostile: bool) -> anyhow::Result<Duration> {
    let api = ApiServer::start().await?;
    let mut members = Members::from([(Arc::from("good"), fake(engine, "good", 0).await?)]);
    if hostile {
        let mut spec = spec("hostile", guest("guest-hostile"), b"");
        spec.limits.deadline = Duration::from_secs(2);
        spec.limits.memory = 16 << 20;
        members.insert(Arc::from("hostile"), member(load_optimized(engine, spec).await?, "hostile"));
    }
    let controllers = Controllers::start(&api, members).await?;
    controllers.ready().await?;
    if hostile {
        let attacks = ["spin", "grow", "sleep"].iter().flat_map(|attack| {
            (0..HOSTILE_SERVICES).map(move |index| {
                let annotations = [("hostile/attack", *attack), ("hostile/arg", "1024")];
                service(&format!("hostile-{attack}-{index:02}"), &class("hostile"), &annotations)
            })
        });
        create(&api, attacks.collect()).await?;
        // The hostile lane's workers are all busy attacking by now.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let names: Vec<String> = (0..GOOD_SERVICES).map(|index| format!("good-{index:03}")).collect();
    let started = Instant::now();
    create(&api, names.iter().map(|name| service(name, &class("good"), &[])).collect()).await?;
    let time = all_ingress(&api, &names, started).await?;
    controllers.stop().await?;
    Ok(time)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let engine = Engine::new(EngineSettings::default())?;

        let (code, per_provider) = idle_memory(&engine).await?;
        println!("### Memory per idle provider (1 and {} fake providers, each with an idle lane)\n", 1 + IDLE);
        println!("| compiled code | RSS per provider | beyond its compiled code |");
        println!("|---|---|---|");
        println!(
            "| {:.2} MiB | {:.2} MiB | {:.2} MiB |\n",
            mib(code),
            mib(per_provider),
            mib(per_provider.saturating_sub(code))
        );

        let mut one = Vec::new();
        let mut many = Vec::new();
        for _ in 0..ROUNDS {
            one.push(throughput(&engine, 1).await?);
            many.push(throughput(&engine, PROVIDERS).await?);
        }
        println!("### {SERVICES} existing Services: one provider against {PROVIDERS}\n");
        println!("| providers | Services each | all ingress after (each run) |");
        println!("|---|---|---|");
        for (providers, times) in [(1, &one), (PROVIDERS, &many)] {
            let times: Vec<String> = times.iter().map(|time| format!("{:.2} s", time.as_secs_f64())).collect();
            println!("| {providers} | {} | {} |", SERVICES / providers, times.join(", "));
        }
        let total = |times: &[Duration]| times.iter().sum::<Duration>().as_secs_f64();
        println!("\n{PROVIDERS} providers take {:.2} times one provider's time\n", total(&many) / total(&one));

        let alone = neighbour(&engine, false).await?;
        let beside = neighbour(&engine, true).await?;
        println!("### {GOOD_SERVICES} Services of a good provider, alone and beside a hostile one\n");
        println!("| good provider | all ingress after |");
        println!("|---|---|");
        println!("| alone | {:.2} s |", alone.as_secs_f64());
        println!("| beside the hostile provider | {:.2} s |", beside.as_secs_f64());
        println!("\nbeside / alone: {:.2}", beside.as_secs_f64() / alone.as_secs_f64());
        anyhow::Ok(())
    })
}
