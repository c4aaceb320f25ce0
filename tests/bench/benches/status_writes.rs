//! What the API server spends on the write the service controller makes
//! most, a Service's ingress written into its status, by the form of the
//! write: a JSON merge patch or a strategic merge patch (upstream's), to a
//! Service that carries wasm-ccm's ownership record (the finalizer, the
//! provider annotation and the owner condition) or only upstream's
//! finalizer.
//!
//! On a real kube-apiserver, as wasm-ccm's ServiceAccount: 1000 Services
//! of each kind, then rounds of 1000 patches, 20 at once, the four forms in
//! turn. Reported: the API server's and etcd's CPU seconds per round, and
//! their mean per form.
//!
//! Then the same by what the API server answers with, the whole object, its
//! metadata alone (`as=PartialObjectMetadata`) or the whole object in
//! protobuf (read, not decoded: kube-rs speaks JSON): for the claim of 1000
//! Services (the finalizer and the ownership record, released after each
//! round), for the strategic merge patch of the ingress, and for the
//! creation of 1000 events, as wasm-ccm's event writer creates them.
//!
//! Needs etcd and kube-apiserver (`KUBEBUILDER_ASSETS` or
//! `TEST_ASSET_KUBE_APISERVER`/`TEST_ASSET_ETCD`); `BENCH_ROUNDS` sets the
//! rounds of each form (default 6).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::collections::BTreeMap;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasm_ccm_bench::cpu_time;
use wasm_ccm_bench::services::{create_all, service};
use wasm_ccm_controllers::ownership::{claim_patch, release_patch};
use wasm_ccm_envtest::{Assets, ControlPlane, Identity, Options};

/// Services of each kind, and patches per round.
const SERVICES: usize = 1000;

/// Patches sent at once, as the service controller's 20 workers.
const AT_ONCE: usize = 20;

/// What a Service carries before its ingress is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Claim {
    /// wasm-ccm's: the finalizer, the provider annotation and the owner
    /// condition, as [`claim_patch`] writes them.
    OwnershipRecord,
    /// Upstream's: the finalizer alone.
    Finalizer,
}

/// How the ingress is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    /// A JSON merge patch.
    Merge,
    /// A strategic merge patch, as upstream writes it and wasm-ccm does.
    Strategic,
}

impl Form {
    fn patch(self, status: Value) -> Patch<Value> {
        match self {
            Form::Merge => Patch::Merge(status),
            Form::Strategic => Patch::Strategic(status),
        }
    }
}

impl Claim {
    /// The status patch that claims a Service.
    fn patch(self) -> Value {
        match self {
            Claim::OwnershipRecord => claim_patch("bench", Time(Timestamp::now())),
            Claim::Finalizer => json!({"metadata": {"finalizers": ["service.kubernetes.io/load-balancer-cleanup"]}}),
        }
    }

    /// The first index of its Services.
    fn first(self) -> usize {
        match self {
            Claim::OwnershipRecord => 0,
            Claim::Finalizer => SERVICES,
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let Some(assets) = Assets::find_or_skip("the status writes benchmark")? else {
        return Ok(());
    };
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().map(|rounds| rounds.parse()).transpose()?.unwrap_or(6);
    let plane = ControlPlane::start(&assets, Options { audit: false }).await?;
    let admin: Api<Service> = Api::namespaced(plane.client(Identity::Admin).await?, "default");
    let services: Api<Service> = Api::namespaced(plane.client(Identity::CloudControllerManager).await?, "default");
    create_all(&admin, (0..2 * SERVICES).map(service).collect()).await?;
    for claim in [Claim::OwnershipRecord, Claim::Finalizer] {
        patch_all(&services, claim, |_| Patch::Strategic(claim.patch())).await?;
    }

    let server_cpu = || {
        let apiserver = plane.apiserver_pid().map(|pid| cpu_time(&pid.to_string())).unwrap_or_default();
        (apiserver + cpu_time(&plane.etcd_pid().to_string())).as_secs_f64()
    };
    let mut spent: BTreeMap<(Claim, Form), Vec<f64>> = BTreeMap::new();
    for round in 0..rounds {
        for claim in [Claim::OwnershipRecord, Claim::Finalizer] {
            for form in [Form::Merge, Form::Strategic] {
                let (before, started) = (server_cpu(), Instant::now());
                patch_all(&services, claim, |index| {
                    let ip = format!("10.{}.{}.{}", round % 250, index / 250, index % 250);
                    form.patch(json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}))
                })
                .await?;
                let cpu = server_cpu() - before;
                println!("round {round}: {claim:?}, {form:?} patch: {cpu:.2} s of CPU in {:.2?}", started.elapsed());
                spent.entry((claim, form)).or_default().push(cpu);
            }
        }
    }

    let events: Api<Event> = Api::namespaced(plane.client(Identity::CloudControllerManager).await?, "default");
    let mut answered: BTreeMap<(&str, Answer), Vec<f64>> = BTreeMap::new();
    let unclaimed = 2 * SERVICES..3 * SERVICES;
    // A Service as the claim leaves it, whose release takes the record.
    let claimed: Service = serde_json::from_value(claim_patch("bench", Time(Timestamp::now())))?;
    create_all(&admin, unclaimed.clone().map(service).collect()).await?;
    for round in 0..rounds {
        for answer in [Answer::Object, Answer::Metadata, Answer::Protobuf] {
            let writes = unclaimed.clone().map(|index| {
                let name = service(index).metadata.name.unwrap_or_default();
                let request = status_patch(&services, &name, claim_patch("bench", Time(Timestamp::now())));
                let services = &services;
                async move { answer.send(services, request?).await }
            });
            let cpu = timed(round, "claim patch", answer, &server_cpu, writes).await?;
            answered.entry(("claim patch", answer)).or_default().push(cpu);
            write_all(unclaimed.clone().map(|index| {
                let name = service(index).metadata.name.unwrap_or_default();
                let (services, claimed) = (&services, &claimed);
                async move {
                    let release = Patch::Strategic(release_patch(claimed));
                    services.patch_status(&name, &PatchParams::default(), &release).await?;
                    Ok(())
                }
            }))
            .await?;

            let writes = (0..SERVICES).map(|index| {
                let name = service(index).metadata.name.unwrap_or_default();
                let ip = format!("10.{}.{}.{}", (round + 100) % 250, index / 250, index % 250);
                let request =
                    status_patch(&services, &name, json!({"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}));
                let services = &services;
                async move { answer.send(services, request?).await }
            });
            let cpu = timed(round, "ingress patch", answer, &server_cpu, writes).await?;
            answered.entry(("ingress patch", answer)).or_default().push(cpu);

            let writes = (0..SERVICES).map(|index| {
                let body = serde_json::to_vec(&event(round, index, answer));
                let events = &events;
                async move {
                    let request = kube::core::Request::new(events.resource_url()).create(&PostParams::default(), body?);
                    answer.send(events, request?).await
                }
            });
            let cpu = timed(round, "event creation", answer, &server_cpu, writes).await?;
            answered.entry(("event creation", answer)).or_default().push(cpu);
        }
    }

    println!("\n| Service carries | patch | API server + etcd CPU per {SERVICES} patches (mean) | rounds |");
    println!("|---|---|---|---|");
    for ((claim, form), cpu) in &spent {
        let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
        let each: Vec<String> = cpu.iter().map(|seconds| format!("{seconds:.2}")).collect();
        println!("| {claim:?} | {form:?} | {mean:.2} s | {} |", each.join(", "));
    }
    println!("\n| write | answered with | API server + etcd CPU per {SERVICES} writes (mean) | rounds |");
    println!("|---|---|---|---|");
    for ((write, answer), cpu) in &answered {
        let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
        let each: Vec<String> = cpu.iter().map(|seconds| format!("{seconds:.2}")).collect();
        println!("| {write} | {answer:?} | {mean:.2} s | {} |", each.join(", "));
    }
    Ok(())
}

/// What the API server answers a write with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    /// The whole object, as kube's `Api` asks.
    Object,
    /// Its metadata alone (`as=PartialObjectMetadata`).
    Metadata,
    /// The whole object in protobuf, read but not decoded.
    Protobuf,
}

impl Answer {
    /// Sends `request` through `api`'s client, asking for this answer, and
    /// reads the answer whole.
    async fn send<K: kube::Resource + Clone>(
        self,
        api: &Api<K>,
        mut request: http::Request<Vec<u8>>,
    ) -> anyhow::Result<()> {
        let accept = match self {
            Answer::Object => None,
            Answer::Metadata => Some(wasm_ccm_kube::writes::METADATA),
            Answer::Protobuf => Some("application/vnd.kubernetes.protobuf"),
        };
        if let Some(accept) = accept {
            request.headers_mut().insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
        }
        let client = api.clone().into_client();
        if self == Answer::Protobuf {
            let mut answer = Vec::new();
            futures::AsyncReadExt::read_to_end(&mut client.request_stream(request).await?, &mut answer).await?;
            anyhow::ensure!(answer.starts_with(b"k8s\0"), "not answered in protobuf");
            return Ok(());
        }
        let answer: Value = client.request(request).await?;
        let kind = answer["kind"].as_str().unwrap_or_default();
        anyhow::ensure!((kind == "PartialObjectMetadata") == (self == Answer::Metadata), "answered with a {kind}");
        Ok(())
    }
}

/// The request for a strategic merge patch of Service `name`'s status.
fn status_patch(
    services: &Api<Service>,
    name: &str,
    patch: Value,
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    let request = kube::core::Request::new(services.resource_url());
    request.patch_subresource("status", name, &PatchParams::default(), &Patch::Strategic(patch))
}

/// An event about Service `index`, as wasm-ccm's event writer makes them.
fn event(round: usize, index: usize, answer: Answer) -> Event {
    let service = service(index).metadata.name.unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{service}.{round}.{answer:?}").to_lowercase()),
            ..ObjectMeta::default()
        },
        action: Some("EnsuredLoadBalancer".into()),
        reason: Some("EnsuredLoadBalancer".into()),
        note: Some("Ensured load balancer".into()),
        type_: Some("Normal".into()),
        event_time: Some(MicroTime(Timestamp::now())),
        regarding: Some(ObjectReference {
            kind: Some("Service".into()),
            namespace: Some("default".into()),
            name: Some(service),
            api_version: Some("v1".into()),
            ..ObjectReference::default()
        }),
        reporting_controller: Some("service-controller".into()),
        reporting_instance: Some("bench/provider_fake".into()),
        ..Event::default()
    }
}

/// Runs `writes` of `round`, answered with `answer`, and says what they
/// cost the API server and etcd (`server_cpu`), in CPU seconds.
async fn timed(
    round: usize,
    write: &str,
    answer: Answer,
    server_cpu: &impl Fn() -> f64,
    writes: impl Iterator<Item = impl Future<Output = anyhow::Result<()>>>,
) -> anyhow::Result<f64> {
    let (before, started) = (server_cpu(), Instant::now());
    write_all(writes).await?;
    let cpu = server_cpu() - before;
    println!("round {round}: {write} answered with {answer:?}: {cpu:.2} s of CPU in {:.2?}", started.elapsed());
    Ok(cpu)
}

/// Runs `writes`, [`AT_ONCE`] at a time.
async fn write_all(writes: impl Iterator<Item = impl Future<Output = anyhow::Result<()>>>) -> anyhow::Result<()> {
    let results: Vec<_> = futures::stream::iter(writes).buffer_unordered(AT_ONCE).collect().await;
    results.into_iter().collect()
}

/// Patches the status of every Service of `claim`'s kind with `patch` of
/// its index, [`AT_ONCE`] at a time.
async fn patch_all(services: &Api<Service>, claim: Claim, patch: impl Fn(usize) -> Patch<Value>) -> anyhow::Result<()> {
    let patches = (claim.first()..claim.first() + SERVICES).map(|index| {
        let name = service(index).metadata.name.unwrap_or_default();
        let patch = patch(index);
        async move { services.patch_status(&name, &PatchParams::default(), &patch).await }
    });
    let results: Vec<_> = futures::stream::iter(patches).buffer_unordered(AT_ONCE).collect().await;
    results.into_iter().try_for_each(|result| result.map(drop))?;
    Ok(())
}
