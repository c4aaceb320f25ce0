//! Hot reload of providers through the `wasm-ccm` binary: new versions
//! from a registry, a ConfigMap and a file are swapped in while Services
//! are reconciled without a failed provider call; broken versions are
//! rejected with an event and a metric while the version serving keeps
//! serving.
//!
//! Versions differ observably without changing the configuration: the fake
//! provider falls back to its built-in load-balancer pool `192.0.2.0/24`
//! when the configuration names none, and that text sits once in the
//! component's data. A version is the same component with those twelve
//! bytes rewritten (`192.0.3.0/24`): a valid component with another digest
//! whose load balancers get other addresses. Rewriting it to `192.0.2.0/99`
//! gives a component whose `initialize` panics on the invalid network.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Service};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_distribution::{SigningKey, push, push_version, referrers_tag, resolve, sha256_digest, sign, sign_bytes};
use wasm_ccm_envtest::{Assets, ControlPlane, Identity, Options};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::clients::CosignKeys;
use wasm_ccm_tests::process::{Process, http_get};
use wasm_ccm_tests::registry::Registry;
use wasm_ccm_tests::tools::Tool;
use wasm_ccm_tests::{free_port, guest, publish};

/// How often the binary polls its source in these tests.
const POLL: Duration = Duration::from_millis(300);
/// How long a test waits for something before it fails.
const PATIENCE: Duration = Duration::from_secs(30);
/// The environment of every run.
const ENV: [(&str, &str); 3] = [("POD_NAME", "wasm-ccm-0"), ("POD_NAMESPACE", "kube-system"), ("RUST_LOG", "info")];
/// The fake provider's built-in pool, as its component holds it.
const BUILT_IN_POOL: &[u8] = b"192.0.2.0/24";

/// The fake provider with its built-in pool rewritten to `pool` (twelve
/// bytes, as the original).
fn fake_with_pool(pool: &str) -> Arc<[u8]> {
    assert_eq!(pool.len(), BUILT_IN_POOL.len(), "the same length keeps the component valid");
    let mut wasm = guest("provider-fake").to_vec();
    let found: Vec<usize> =
        wasm.windows(BUILT_IN_POOL.len()).enumerate().filter(|(_, w)| *w == BUILT_IN_POOL).map(|(i, _)| i).collect();
    assert_eq!(found.len(), 1, "the built-in pool appears once in the component");
    wasm[found[0]..found[0] + pool.len()].copy_from_slice(pool.as_bytes());
    wasm.into()
}

/// Everything the binary runs against, and the files it reads.
struct Setup {
    api: ApiServer,
    cloud: FakeCloud,
    client: kube::Client,
    dir: tempfile::TempDir,
    port: u16,
    key: SigningKey,
}

impl Setup {
    async fn start() -> Self {
        wasm_ccm_tests::init_logging();
        let api = ApiServer::start().await.unwrap();
        let cloud = FakeCloud::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        api.write_kubeconfig(&dir.path().join("kubeconfig")).unwrap();
        // No pool: the component's built-in one is used.
        std::fs::write(dir.path().join("fake.json"), json!({"cloud": cloud.url()}).to_string()).unwrap();
        let key = SigningKey::generate().unwrap();
        std::fs::write(dir.path().join("cosign.pub"), key.public_key_pem().unwrap()).unwrap();
        let client = api.client().await;
        Setup { api, cloud, client, dir, port: free_port().unwrap(), key }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// Starts `wasm-ccm run` with the provider at `location` and `extra`
    /// flags, and waits until it is ready.
    async fn run(&self, location: &str, extra: &[&str]) -> Process {
        let mut process = Process::start(crate::binary(), &self.args(location, extra), &ENV);
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = process.wait(Duration::from_millis(10)).await {
                panic!("wasm-ccm exited with {status}");
            }
            if http_get(self.admin(), "/readyz").await.is_some_and(|(status, _)| status == 200) {
                return process;
            }
            assert!(Instant::now() < deadline, "wasm-ccm did not get ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The arguments of `wasm-ccm run` with the provider at `location` and
    /// `extra` flags.
    fn args(&self, location: &str, extra: &[&str]) -> Vec<String> {
        let path = |file: &str| self.path(file).display().to_string();
        let mut args: Vec<String> = [
            "run",
            "--kubeconfig",
            &path("kubeconfig"),
            "--provider",
            location,
            "--cloud-config",
            &path("fake.json"),
            "--provider-allow",
            &self.cloud.url(),
            "--provider-poll-interval",
            &format!("{}ms", POLL.as_millis()),
            "--controllers",
            "service",
            "--leader-elect=false",
            "--secure-port",
            &self.port.to_string(),
            "--bind-address",
            "127.0.0.1",
            "--admin-plain-http",
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        args
    }

    fn admin(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The `/providers` entry of the provider `fake`.
    async fn provider(&self) -> Value {
        let (status, body) = http_get(self.admin(), "/providers").await.expect("/providers answers");
        assert_eq!(status, 200, "{body}");
        let providers: Vec<Value> = serde_json::from_str(&body).expect("JSON");
        assert_eq!(providers.len(), 1, "{body}");
        providers[0].clone()
    }

    /// Waits until `/providers` satisfies `check`.
    async fn wait_provider(&self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let provider = self.provider().await;
            if check(&provider) {
                return provider;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {provider:#}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The samples of the metrics text whose name is `name`, by their
    /// labels.
    async fn metric(&self, name: &str) -> BTreeMap<String, f64> {
        let (_, text) = http_get(self.admin(), "/metrics").await.expect("/metrics answers");
        text.lines()
            .filter_map(|line| {
                let rest = line.strip_prefix(name)?;
                let (labels, value) = rest.rsplit_once(' ')?;
                let labels = labels.strip_prefix('{')?.strip_suffix('}')?;
                Some((labels.to_owned(), value.parse().ok()?))
            })
            .collect()
    }

    /// Provider calls served, counted by outcome (`ok`, `cloud`, `trap`,
    /// ...). The start-up calls of candidates (`provider.start`) are left
    /// out: they test a version before it serves, and a broken one fails
    /// them on purpose.
    async fn calls(&self) -> BTreeMap<String, f64> {
        let mut calls = BTreeMap::new();
        for (labels, count) in self.metric("provider_call_duration_seconds_count").await {
            if label(&labels, "function") == "provider.start" {
                continue;
            }
            let outcome = label(&labels, "outcome");
            *calls.entry(outcome).or_insert(0.0) += count;
        }
        calls
    }

    /// `provider_rejections_total` by stage.
    async fn rejections(&self) -> BTreeMap<String, f64> {
        let samples = self.metric("provider_rejections_total").await;
        samples.into_iter().map(|(labels, count)| (label(&labels, "stage"), count)).collect()
    }

    async fn reloads(&self, outcome: &str) -> f64 {
        let samples = self.metric("provider_reloads_total").await;
        samples.into_iter().filter(|(labels, _)| label(labels, "outcome") == outcome).map(|(_, count)| count).sum()
    }

    fn services(&self) -> Api<Service> {
        Api::namespaced(self.client(), "default")
    }

    fn client(&self) -> kube::Client {
        self.client.clone()
    }

    async fn create_service(&self, name: &str) {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "selector": {"app": name}},
        }))
        .unwrap();
        self.services().create(&PostParams::default(), &service).await.unwrap();
    }

    fn ingress(&self, name: &str) -> Option<String> {
        let service = self.api.object("services", Some("default"), name)?;
        service["status"]["loadBalancer"]["ingress"][0]["ip"].as_str().map(str::to_owned)
    }

    /// Creates a Service and waits for its address.
    async fn fresh_ingress(&self, name: &str) -> String {
        self.create_service(name).await;
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(ip) = self.ingress(name) {
                return ip;
            }
            assert!(Instant::now() < deadline, "no ingress for {name}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The events with `reason`, as (type, regarding kind/namespace/name,
    /// note).
    async fn events(&self, reason: &str) -> Vec<(String, String, String)> {
        let events: Api<Event> = Api::all(self.client());
        let list = events.list(&ListParams::default()).await.unwrap();
        list.items
            .into_iter()
            .filter(|event| event.reason.as_deref() == Some(reason))
            .map(|event| {
                let regarding = event.involved_object;
                (
                    event.type_.unwrap_or_default(),
                    format!(
                        "{}/{}/{}",
                        regarding.kind.unwrap_or_default(),
                        regarding.namespace.unwrap_or_default(),
                        regarding.name.unwrap_or_default()
                    ),
                    event.message.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Waits until an event with `reason` whose note contains `text` exists.
    async fn wait_event(&self, reason: &str, text: &str) -> (String, String, String) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(event) = self.events(reason).await.into_iter().find(|(_, _, note)| note.contains(text)) {
                return event;
            }
            assert!(Instant::now() < deadline, "no {reason} event mentioning {text}: {:?}", self.events(reason).await);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn label(labels: &str, name: &str) -> String {
    labels
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"').to_owned())
        .unwrap_or_default()
}

/// Creates Services one after another until stopped, so that reconciles
/// run through every swap; returns their names.
struct Load {
    stop: Arc<AtomicBool>,
    created: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<Vec<String>>,
}

impl Load {
    fn start(services: Api<Service>, prefix: &'static str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let created = Arc::new(AtomicUsize::new(0));
        let task = {
            let (stop, created) = (stop.clone(), created.clone());
            tokio::spawn(async move {
                let mut names = Vec::new();
                // Bounded, so that the pool never runs out.
                while !stop.load(Ordering::Relaxed) && names.len() < 150 {
                    let name = format!("{prefix}-{}", names.len());
                    let service: Service = serde_json::from_value(json!({
                        "metadata": {"name": name},
                        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "selector": {"app": "load"}},
                    }))
                    .unwrap();
                    services.create(&PostParams::default(), &service).await.unwrap();
                    names.push(name);
                    created.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(40)).await;
                }
                names
            })
        };
        Load { stop, created, task }
    }

    async fn finish(self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap()
    }
}

/// Waits until every Service of `names` has an address.
async fn all_served(setup: &Setup, names: &[String]) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let addresses: Vec<Option<String>> = names.iter().map(|name| setup.ingress(name)).collect();
        if addresses.iter().all(Option::is_some) {
            return addresses.into_iter().flatten().collect();
        }
        let missing = addresses.iter().filter(|address| address.is_none()).count();
        assert!(Instant::now() < deadline, "{missing} of {} Services have no address", names.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Asserts that no provider call failed and some succeeded.
async fn no_failed_calls(setup: &Setup) {
    let calls = setup.calls().await;
    let failed: f64 = calls.iter().filter(|(outcome, _)| *outcome != "ok").map(|(_, count)| count).sum();
    assert!(calls.get("ok").copied().unwrap_or_default() > 0.0, "no successful calls: {calls:?}");
    assert_eq!(failed, 0.0, "failed provider calls: {calls:?}");
}

/// Waits until a rejection at `stage` is counted and shown, and returns
/// the `/providers` entry.
/// Creates Services continuously while `release` publishes `v2` (whose
/// pool is 192.0.3.0/24, v1's 192.0.2.0/24) until v2 serves; then checks
/// that Services were served on both sides of the swap and that no
/// provider call failed.
async fn swapped_under_load(setup: &Setup, v2: &[u8], release: impl Future<Output = ()>) {
    let load = Load::start(setup.services(), "load");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let released = Instant::now();
    release.await;
    setup.wait_provider("v2", |provider| provider["digest"] == sha256_digest(v2)).await;
    eprintln!("v2 swapped in {:.3} s after its release", released.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let names = load.finish().await;
    let addresses = all_served(setup, &names).await;
    assert!(
        addresses.iter().any(|ip| ip.starts_with("192.0.2.")) && addresses.iter().any(|ip| ip.starts_with("192.0.3."))
    );
    no_failed_calls(setup).await;
}

async fn rejected(setup: &Setup, stage: &str, before: f64) -> Value {
    let deadline = Instant::now() + PATIENCE;
    while setup.rejections().await.get(stage).copied().unwrap_or_default() <= before {
        assert!(Instant::now() < deadline, "no rejection at {stage}: {:?}", setup.rejections().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let provider = setup.provider().await;
    assert_eq!(provider["lastRejection"]["stage"], stage, "{provider:#}");
    provider
}

/// Releases `wasm` as a careful pipeline does: pushed to a staging tag,
/// signed there by digest, then pushed to the tag the binary follows (the
/// same bytes give the same manifest, so the signature applies).
async fn push_signed(registry: &Registry, wasm: &[u8], key: &SigningKey) -> String {
    let options = registry.options();
    let staging = registry.reference("providers/fake:staging");
    push(wasm, &staging, &options).await.unwrap();
    sign(&staging, key, &options).await.unwrap();
    push(wasm, &registry.reference("providers/fake:stable"), &options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn oci_versions_are_swapped_in_without_failed_calls_and_broken_ones_rejected() {
    let setup = Setup::start().await;
    let registry = Registry::plain().unwrap();
    let v1 = guest("provider-fake");
    push_signed(&registry, &v1, &setup.key).await;
    let public_key = setup.path("cosign.pub").display().to_string();
    let reference = registry.reference("providers/fake:stable").to_string();
    let _process = setup.run(&reference, &["--registry-plain-http", "--provider-public-key", &public_key]).await;

    let first = setup.provider().await;
    assert_eq!(first["digest"], sha256_digest(&v1));
    assert!(first["source"].as_str().unwrap().starts_with(&format!("{reference}@sha256:")), "{first}");
    assert!(setup.fresh_ingress("before").await.starts_with("192.0.2."));

    // v2 while Services keep coming.
    let load = Load::start(setup.services(), "load");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let v2 = fake_with_pool("192.0.3.0/24");
    push_signed(&registry, &v2, &setup.key).await;
    let pushed = Instant::now();
    let swapped = setup.wait_provider("v2", |provider| provider["digest"] == sha256_digest(&v2)).await;
    let swap_seconds = pushed.elapsed().as_secs_f64();
    eprintln!("v2 swapped in {swap_seconds:.3} s after the push (poll interval {POLL:?})");
    assert!(swap_seconds < POLL.as_secs_f64() + 5.0, "the swap took {swap_seconds} s");
    assert_eq!(swapped["reloads"], 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let created_during = load.created.load(Ordering::Relaxed);
    let names = load.finish().await;
    let addresses = all_served(&setup, &names).await;
    let (old, new) = (
        addresses.iter().filter(|ip| ip.starts_with("192.0.2.")).count(),
        addresses.iter().filter(|ip| ip.starts_with("192.0.3.")).count(),
    );
    eprintln!("{created_during} Services created across the swap: {old} served by v1, {new} by v2");
    assert!(old > 0 && new > 0, "Services on both sides of the swap: {old} on v1, {new} on v2");
    assert_eq!(old + new, names.len());
    no_failed_calls(&setup).await;
    let (kind, regarding, note) = setup.wait_event("ProviderReloaded", &sha256_digest(&v2)).await;
    assert_eq!((kind.as_str(), regarding.as_str()), ("Normal", "Pod/kube-system/wasm-ccm-0"));
    assert!(note.contains(&sha256_digest(&v1)), "{note}");

    // Broken versions: each rejected, v2 keeps serving.
    let other_key = SigningKey::generate().unwrap();
    let garbage = b"this is not a provider".to_vec();
    let cases: [(&str, Vec<u8>, &SigningKey, &str); 5] = [
        ("compile", garbage, &setup.key, "not a WebAssembly binary"),
        ("world", guest("guest-other-world").to_vec(), &setup.key, "not a wasm-ccm provider"),
        ("initialize", fake_with_pool("192.0.2.0/99").to_vec(), &setup.key, "failed to start"),
        ("verify", fake_with_pool("192.0.4.0/24").to_vec(), &other_key, "signature does not verify"),
        ("smoke", guest("guest-hostile").to_vec(), &setup.key, "calls itself \"hostile\""),
    ];
    for (index, (stage, wasm, key, reason)) in cases.into_iter().enumerate() {
        let before = setup.rejections().await.get(stage).copied().unwrap_or_default();
        if stage == "compile" {
            // `push` refuses bytes that are not WebAssembly: push the
            // artifact by hand, signed before it is tagged.
            let by_hand = |tag: &'static str| {
                let wasm = wasm.clone();
                let registry = &registry;
                async move {
                    registry
                        .push_by_hand(
                            &format!("providers/fake:{tag}"),
                            ("application/vnd.wasm.config.v0+json", b"{}"),
                            &[("application/wasm", &wasm, None)],
                        )
                        .await
                        .unwrap()
                }
            };
            let digest = by_hand("staging").await;
            sign(&registry.reference(&format!("providers/fake@{digest}")), key, &registry.options()).await.unwrap();
            assert_eq!(by_hand("stable").await, digest);
        } else {
            push_signed(&registry, &wasm, key).await;
        }
        let provider = rejected(&setup, stage, before).await;
        let rejection = &provider["lastRejection"];
        assert!(rejection["reason"].as_str().unwrap().contains(reason), "{stage}: {rejection:#}");
        if stage != "verify" {
            assert_eq!(rejection["digest"], sha256_digest(&wasm), "{stage}");
        }
        assert_eq!(provider["digest"], sha256_digest(&v2), "v2 keeps serving after the {stage} rejection");
        let (kind, regarding, note) = setup.wait_event("ProviderRejected", &format!("at {stage}:")).await;
        assert_eq!((kind.as_str(), regarding.as_str()), ("Warning", "Pod/kube-system/wasm-ccm-0"));
        assert!(note.contains(&format!("{} keeps serving", sha256_digest(&v2))), "{note}");
        let ip = setup.fresh_ingress(&format!("after-{index}")).await;
        assert!(ip.starts_with("192.0.3."), "served by v2 after the {stage} rejection: {ip}");
    }

    let durations = setup.metric("provider_reload_duration_seconds_sum").await;
    eprintln!("seconds from arrival to swap of v2 (compile, world check, smoke test): {durations:?}");
    // Each version was tried once, however many polls saw it.
    tokio::time::sleep(POLL * 4).await;
    assert_eq!(setup.reloads("reloaded").await, 1.0);
    assert_eq!(setup.reloads("rejected").await, 5.0);
    assert_eq!(setup.provider().await["rejections"], 5);
    no_failed_calls(&setup).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn oci_versions_that_miss_the_pin_are_rejected() {
    let setup = Setup::start().await;
    let registry = Registry::plain().unwrap();
    let v1 = guest("provider-fake");
    let options = registry.options();
    push(&v1, &registry.reference("providers/fake:stable"), &options).await.unwrap();
    let reference = registry.reference("providers/fake:stable").to_string();
    let pin = sha256_digest(&v1);
    let _process = setup.run(&reference, &["--registry-plain-http", "--provider-sha256", &pin]).await;
    assert_eq!(setup.provider().await["digest"], pin);

    let v2 = fake_with_pool("192.0.3.0/24");
    push(&v2, &registry.reference("providers/fake:stable"), &options).await.unwrap();
    let provider = rejected(&setup, "verify", 0.0).await;
    let reason = provider["lastRejection"]["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains(&format!("digest {} does not match the pin {pin}", sha256_digest(&v2))), "{reason}");
    assert_eq!(provider["digest"], pin, "v1 keeps serving");
    assert!(setup.fresh_ingress("after").await.starts_with("192.0.2."));
    setup.wait_event("ProviderRejected", "does not match the pin").await;
}

/// Releases `wasm` as [`push_signed`] does, stating `version` in the
/// manifest (which the signature of the manifest's digest then signs).
async fn push_signed_version(registry: &Registry, wasm: &[u8], version: &str, key: &SigningKey) -> String {
    let options = registry.options();
    let version = semver::Version::parse(version).unwrap();
    let staging = registry.reference("providers/fake:staging");
    push_version(wasm, &staging, Some(&version), &options).await.unwrap();
    sign(&staging, key, &options).await.unwrap();
    push_version(wasm, &registry.reference("providers/fake:stable"), Some(&version), &options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn signed_oci_versions_cannot_be_rolled_back() {
    let setup = Setup::start().await;
    let registry = Registry::plain().unwrap();
    let v2 = fake_with_pool("192.0.3.0/24");
    push_signed_version(&registry, &v2, "2.0.0", &setup.key).await;
    let public_key = setup.path("cosign.pub").display().to_string();
    let reference = registry.reference("providers/fake:stable").to_string();
    let flags = ["--registry-plain-http", "--provider-public-key", &public_key, "--provider-minimum-version", "1.0.0"];
    let _process = setup.run(&reference, &flags).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v2));

    // Whoever can write the tag moves it back to an older signed version.
    let v1 = guest("provider-fake");
    push_signed_version(&registry, &v1, "1.5.0", &setup.key).await;
    let provider = rejected(&setup, "verify", 0.0).await;
    let reason = provider["lastRejection"]["reason"].as_str().unwrap().to_owned();
    assert_eq!(reason, "version 1.5.0 is older than 2.0.0, the version serving: a roll-back is refused");
    assert_eq!(provider["digest"], sha256_digest(&v2), "2.0.0 keeps serving");
    assert!(setup.fresh_ingress("after-roll-back").await.starts_with("192.0.3."));
    setup.wait_event("ProviderRejected", "a roll-back is refused").await;

    // Below the minimum, and without a version at all: refused by the source.
    let old = fake_with_pool("192.0.5.0/24");
    push_signed_version(&registry, &old, "0.9.0", &setup.key).await;
    let provider = rejected(&setup, "verify", 1.0).await;
    let reason = provider["lastRejection"]["reason"].as_str().unwrap();
    assert_eq!(reason, "version 0.9.0 is older than 1.0.0, the oldest allowed: a roll-back is refused");
    let unversioned = fake_with_pool("192.0.6.0/24");
    push_signed(&registry, &unversioned, &setup.key).await;
    let provider = rejected(&setup, "verify", 2.0).await;
    let reason = provider["lastRejection"]["reason"].as_str().unwrap();
    assert!(reason.contains("has no org.opencontainers.image.version annotation"), "{reason}");
    assert_eq!(provider["digest"], sha256_digest(&v2), "2.0.0 still serves");

    // A newer signed version is swapped in.
    let v3 = fake_with_pool("192.0.7.0/24");
    push_signed_version(&registry, &v3, "3.0.0", &setup.key).await;
    setup.wait_provider("3.0.0", |provider| provider["digest"] == sha256_digest(&v3)).await;
    no_failed_calls(&setup).await;
}

/// Roll-back protection across restarts, on the real kube-apiserver with
/// deploy/'s RBAC: the highest version accepted is recorded in the Lease
/// `cloud-controller-manager-provider-versions`, and is the minimum on the
/// next start; deleting that Lease (the operator) resets it.
#[tokio::test(flavor = "multi_thread")]
async fn a_restart_does_not_forget_the_highest_version_accepted() {
    let Some(assets) = Assets::find_or_skip("a_restart_does_not_forget_the_highest_version_accepted").unwrap() else {
        return;
    };
    let plane = ControlPlane::start(&assets, Options::default()).await.expect("the real API server");
    let setup = Setup::start().await;
    plane.write_kubeconfig(Identity::CloudControllerManager, &setup.path("kubeconfig")).unwrap();
    let leases: Api<Lease> = Api::namespaced(plane.client(Identity::Admin).await.unwrap(), "kube-system");
    let registry = Registry::plain().unwrap();
    let public_key = setup.path("cosign.pub").display().to_string();
    let reference = registry.reference("providers/fake:stable").to_string();
    let flags = ["--registry-plain-http", "--provider-public-key", &public_key, "--provider-minimum-version", "1.0.0"];

    let v2 = fake_with_pool("192.0.3.0/24");
    push_signed_version(&registry, &v2, "2.0.0", &setup.key).await;
    let process = setup.run(&reference, &flags).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v2));
    let record = "cloud-controller-manager-provider-versions";
    let deadline = Instant::now() + PATIENCE;
    loop {
        let lease = leases.get_opt(record).await.unwrap();
        let annotations = lease.and_then(|lease| lease.metadata.annotations).unwrap_or_default();
        if annotations.get("provider-version.wasm-ccm.io/fake").map(String::as_str) == Some("2.0.0") {
            break;
        }
        assert!(Instant::now() < deadline, "2.0.0 was not recorded: {annotations:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(process);

    // Whoever can write the tag moves it back to an older signed version,
    // above the flag's minimum, while wasm-ccm is down: it does not start.
    let v1 = guest("provider-fake");
    push_signed_version(&registry, &v1, "1.5.0", &setup.key).await;
    let log = setup.path("restart.log");
    let mut restarted = Process::start_logged(crate::binary(), &setup.args(&reference, &flags), &ENV, &log);
    let status = restarted.wait(PATIENCE).await.expect("wasm-ccm exits");
    assert!(!status.success());
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("version 1.5.0 is older than 2.0.0, the oldest allowed: a roll-back is refused"),
        "{logged}"
    );

    // The operator resets the record by deleting the Lease.
    leases.delete(record, &Default::default()).await.unwrap();
    let _process = setup.run(&reference, &flags).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v1));
}

#[tokio::test]
async fn an_oci_provider_that_cannot_be_pulled_at_start_is_fatal() {
    let setup = Setup::start().await;
    let registry = Registry::plain().unwrap();
    let args: Vec<String> = [
        "run",
        "--kubeconfig",
        &setup.path("kubeconfig").display().to_string(),
        "--provider",
        &registry.reference("providers/missing:v1").to_string(),
        "--registry-plain-http",
        "--secure-port",
        "0",
        "--leader-elect=false",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let mut process = Process::start(crate::binary(), &args, &[]);
    let status = process.wait(PATIENCE).await.expect("wasm-ccm exits");
    assert!(!status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn file_versions_and_configuration_changes_are_validated_then_swapped() {
    let setup = Setup::start().await;
    let mounted = setup.path("mounted");
    std::fs::create_dir(&mounted).unwrap();
    let sign = |wasm: &[u8], key: &SigningKey| sign_bytes(wasm, key).unwrap().into_bytes();
    let v1 = guest("provider-fake");
    publish(&mounted, 1, &[("fake.wasm", &v1), ("fake.wasm.sig", &sign(&v1, &setup.key))]);
    let (wasm_path, signature_path) =
        (mounted.join("fake.wasm").display().to_string(), mounted.join("fake.wasm.sig").display().to_string());
    let public_key = setup.path("cosign.pub").display().to_string();
    let _process =
        setup.run(&wasm_path, &["--provider-public-key", &public_key, "--provider-signature", &signature_path]).await;
    assert_eq!(setup.provider().await["source"], wasm_path);
    assert!(setup.fresh_ingress("before").await.starts_with("192.0.2."));

    let v2 = fake_with_pool("192.0.3.0/24");
    swapped_under_load(&setup, &v2, async {
        publish(&mounted, 2, &[("fake.wasm", &v2), ("fake.wasm.sig", &sign(&v2, &setup.key))]);
    })
    .await;
    setup.wait_event("ProviderReloaded", &sha256_digest(&v2)).await;

    // Garbage, correctly signed: rejected when compiled.
    let garbage = b"\0asm garbage".to_vec();
    publish(&mounted, 3, &[("fake.wasm", &garbage), ("fake.wasm.sig", &sign(&garbage, &setup.key))]);
    rejected(&setup, "compile", 0.0).await;
    // A version signed by another key: rejected before it is compiled.
    let v3 = fake_with_pool("192.0.4.0/24");
    publish(&mounted, 4, &[("fake.wasm", &v3), ("fake.wasm.sig", &sign(&v3, &SigningKey::generate().unwrap()))]);
    let provider = rejected(&setup, "verify", 0.0).await;
    assert_eq!(provider["lastRejection"]["digest"], sha256_digest(&v3));
    assert_eq!(provider["digest"], sha256_digest(&v2));
    assert!(setup.fresh_ingress("after-rejections").await.starts_with("192.0.3."));

    // Back to v2's files, then a configuration whose initialize fails:
    // rejected, and the one serving keeps its configuration.
    publish(&mounted, 5, &[("fake.wasm", &v2), ("fake.wasm.sig", &sign(&v2, &setup.key))]);
    let failing = json!({"cloud": setup.cloud.url(), "faults": {"provider.initialize": {"error": {"kind": "other", "message": "refusing this configuration"}}}});
    std::fs::write(setup.path("fake.json"), failing.to_string()).unwrap();
    let provider = rejected(&setup, "initialize", 0.0).await;
    assert!(provider["lastRejection"]["reason"].as_str().unwrap().contains("refusing this configuration"));
    assert!(setup.fresh_ingress("after-bad-config").await.starts_with("192.0.3."));
    // A good configuration with its own pool: the same component
    // re-initialised.
    let good = json!({"cloud": setup.cloud.url(), "loadBalancerPool": ["198.51.100.0/24"]});
    std::fs::write(setup.path("fake.json"), good.to_string()).unwrap();
    let provider = setup
        .wait_provider("the new configuration", |provider| {
            provider["configDigest"] == sha256_digest(good.to_string().as_bytes())
        })
        .await;
    assert_eq!(provider["digest"], sha256_digest(&v2));
    assert!(setup.fresh_ingress("after-new-config").await.starts_with("198.51.100."));
    assert_eq!(setup.reloads("reloaded").await, 2.0);
    no_failed_calls(&setup).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn config_map_versions_are_swapped_in_and_broken_ones_rejected() {
    let setup = Setup::start().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(setup.client(), "kube-system");
    let data = |wasm: &[u8], key: &SigningKey| -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {"name": "wasm-ccm-provider", "namespace": "kube-system"},
            "binaryData": {
                "fake.wasm": ByteString(wasm.to_vec()),
                "fake.wasm.sig": ByteString(sign_bytes(wasm, key).unwrap().into_bytes()),
            },
        }))
        .unwrap()
    };
    let update = |config_map: ConfigMap| {
        let config_maps = config_maps.clone();
        async move {
            config_maps
                .patch(
                    "wasm-ccm-provider",
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::to_value(config_map).unwrap()),
                )
                .await
                .unwrap();
        }
    };
    let v1 = guest("provider-fake");
    config_maps.create(&PostParams::default(), &data(&v1, &setup.key)).await.unwrap();
    let public_key = setup.path("cosign.pub").display().to_string();
    let location = "configmap:kube-system/wasm-ccm-provider/fake.wasm";
    let _process = setup.run(location, &["--provider-public-key", &public_key]).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v1));

    let v2 = fake_with_pool("192.0.3.0/24");
    swapped_under_load(&setup, &v2, update(data(&v2, &setup.key))).await;
    let (kind, regarding, _) = setup.wait_event("ProviderReloaded", &sha256_digest(&v2)).await;
    assert_eq!((kind.as_str(), regarding.as_str()), ("Normal", "ConfigMap/kube-system/wasm-ccm-provider"));

    update(data(&b"\0asm garbage"[..], &setup.key)).await;
    rejected(&setup, "compile", 0.0).await;
    update(data(&guest("guest-other-world"), &setup.key)).await;
    rejected(&setup, "world", 0.0).await;
    update(data(&fake_with_pool("192.0.2.0/99"), &setup.key)).await;
    rejected(&setup, "initialize", 0.0).await;
    let v3 = fake_with_pool("192.0.4.0/24");
    update(data(&v3, &SigningKey::generate().unwrap())).await;
    let provider = rejected(&setup, "verify", 0.0).await;
    assert_eq!(provider["lastRejection"]["digest"], sha256_digest(&v3));
    assert_eq!(provider["digest"], sha256_digest(&v2));
    let (kind, regarding, _) = setup.wait_event("ProviderRejected", "at verify:").await;
    assert_eq!((kind.as_str(), regarding.as_str()), ("Warning", "ConfigMap/kube-system/wasm-ccm-provider"));
    assert!(setup.fresh_ingress("after-rejections").await.starts_with("192.0.3."));
    no_failed_calls(&setup).await;
}

#[test]
fn bad_flag_combinations_fail_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("cosign.pub");
    std::fs::write(&key, SigningKey::generate().unwrap().public_key_pem().unwrap()).unwrap();
    let key = key.display().to_string();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--provider", "/p.wasm", "--registry-plain-http"],
            "--registry-plain-http applies to an oci:// provider only",
        ),
        (
            &["--provider", "oci://127.0.0.1:1/p:v1", "--provider-public-key", &key, "--provider-signature", "/p.sig"],
            "a signature file applies to a file source only",
        ),
        (&["--provider", "/p.wasm", "--provider-signature", "/p.sig"], "--provider-public-key"),
        (&["--provider", "configmap:kube-system/p"], "expected configmap:NAMESPACE/NAME/KEY"),
        (&["--provider", "/p.wasm", "--provider-sha256", "sha256:1234"], "is not sha256:<64"),
        (&["--provider", "https://example.com/p.wasm"], "unsupported scheme https://"),
    ];
    for (flags, expected) in cases {
        let output = std::process::Command::new(crate::binary())
            .arg("run")
            .args(flags)
            .args(["--secure-port", "0", "--leader-elect=false", "--kubeconfig", "/nonexistent"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flags:?} started");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn oci_providers_behind_tls_and_basic_auth_are_polled_with_registry_credentials() {
    let setup = Setup::start().await;
    let registry = Registry::start(wasm_ccm_tests::registry::Settings {
        tls: true,
        basic_auth: Some(("puller".to_owned(), "s3cret".to_owned())),
    })
    .unwrap();
    let options = registry.options();
    let tag = registry.reference("providers/fake:stable");
    let v1 = guest("provider-fake");
    push(&v1, &tag, &options).await.unwrap();
    let docker_config = setup.path("dockerconfig.json");
    std::fs::write(&docker_config, wasm_ccm_tests::registry::docker_config(&registry.host(), "puller", "s3cret"))
        .unwrap();
    let ca = setup.path("registry-ca.pem");
    std::fs::write(&ca, registry.ca_pem().unwrap()).unwrap();
    let (docker_config, ca) = (docker_config.display().to_string(), ca.display().to_string());
    let _process = setup.run(&tag.to_string(), &["--registry-config", &docker_config, "--registry-ca-file", &ca]).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v1));

    let v2 = fake_with_pool("192.0.3.0/24");
    push(&v2, &tag, &options).await.unwrap();
    setup.wait_provider("v2", |provider| provider["digest"] == sha256_digest(&v2)).await;
    assert!(setup.fresh_ingress("after").await.starts_with("192.0.3."));
    assert_eq!(setup.reloads("unavailable").await, 0.0, "every poll authenticated");
}

#[tokio::test]
async fn a_restart_loads_the_provider_from_the_compile_cache() {
    let setup = Setup::start().await;
    let wasm_path = setup.path("fake.wasm");
    std::fs::write(&wasm_path, guest("provider-fake")).unwrap();
    let (wasm_path, cache) = (wasm_path.display().to_string(), setup.path("cache").display().to_string());
    for expected in ["miss", "hit"] {
        let mut process = setup.run(&wasm_path, &["--compile-cache", &cache, "--provider-name", "acme"]).await;
        assert_eq!(setup.provider().await["name"], "acme", "--provider-name names it");
        let loads = setup.metric("provider_loads_total").await;
        assert!(loads.keys().all(|labels| label(labels, "provider") == "acme"), "{loads:?}");
        let outcomes: Vec<(String, f64)> =
            loads.iter().map(|(labels, count)| (label(labels, "cache"), *count)).filter(|(_, n)| *n > 0.0).collect();
        assert_eq!(outcomes, [(expected.to_owned(), 1.0)], "{loads:?}");
        assert!(setup.fresh_ingress(&format!("after-{expected}")).await.starts_with("192.0.2."));
        // Cranelift's code of the snapshot is cached once compiled, after
        // the load.
        setup.wait_provider("Cranelift's code", |provider| provider["code"] == "optimizing").await;
        process.signal("TERM");
        assert!(process.wait(PATIENCE).await.is_some_and(|status| status.success()), "wasm-ccm stopped");
    }
}

/// A provider without routes or instances (the fake provider with stateless
/// load balancers and no cloud) runs on its own with the controllers it
/// supports, as upstream runs the controllers its cloud supports.
#[tokio::test]
async fn the_one_provider_runs_the_controllers_it_supports() {
    let setup = Setup::start().await;
    std::fs::write(setup.path("fake.json"), json!({"statelessLoadBalancers": true}).to_string()).unwrap();
    let wasm_path = setup.path("fake.wasm");
    std::fs::write(&wasm_path, guest("provider-fake")).unwrap();
    let _process = setup.run(&wasm_path.display().to_string(), &["--controllers", "*"]).await;
    let serves = &setup.provider().await["serves"];
    assert_eq!(serves["routes"], false, "{serves}");
    assert_eq!(serves["defaultLoadBalancer"], true, "{serves}");
    assert!(setup.fresh_ingress("stateless").await.starts_with("192.0.2."));
}

/// `cosign sign-blob --bundle` of `wasm` with `keys`, as cosign v3 writes
/// it offline.
fn cosign_bundle(keys: &CosignKeys, dir: &std::path::Path, wasm: &[u8]) -> Vec<u8> {
    let file = dir.join("blob.wasm");
    std::fs::write(&file, wasm).unwrap();
    keys.sign_blob_bundle(&file).expect("cosign sign-blob --bundle")
}

#[tokio::test(flavor = "multi_thread")]
async fn cosign_v3_blob_bundles_are_verified_and_refused_ones_leave_the_provider_serving() {
    let setup = Setup::start().await;
    let keys = CosignKeys::generate().expect("cosign generate-key-pair");
    let (mounted, work) = (setup.path("mounted"), setup.path("work"));
    std::fs::create_dir(&mounted).unwrap();
    std::fs::create_dir(&work).unwrap();
    let v1 = guest("provider-fake");
    publish(&mounted, 1, &[("fake.wasm", &v1), ("fake.wasm.sig", &cosign_bundle(&keys, &work, &v1))]);
    let (wasm_path, bundle_path) =
        (mounted.join("fake.wasm").display().to_string(), mounted.join("fake.wasm.sig").display().to_string());
    let public_key = keys.public_key().display().to_string();
    let _process =
        setup.run(&wasm_path, &["--provider-public-key", &public_key, "--provider-signature", &bundle_path]).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v1));

    let v2 = fake_with_pool("192.0.3.0/24");
    publish(&mounted, 2, &[("fake.wasm", &v2), ("fake.wasm.sig", &cosign_bundle(&keys, &work, &v2))]);
    setup.wait_provider("v2", |provider| provider["digest"] == sha256_digest(&v2)).await;
    assert!(setup.fresh_ingress("v2").await.starts_with("192.0.3."));

    // Each refused at verify, v2 serving on.
    let v3 = fake_with_pool("192.0.4.0/24");
    let impostor = CosignKeys::generate().unwrap();
    let tampered = {
        std::fs::write(work.join("v2.wasm"), &v2).unwrap();
        let attestation = keys.attest_blob_bundle(&work.join("v2.wasm")).expect("cosign attest-blob");
        let mut bundle: Value = serde_json::from_slice(&attestation).unwrap();
        let payload = STANDARD.decode(bundle["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap();
        let hex = |wasm: &[u8]| sha256_digest(wasm).strip_prefix("sha256:").unwrap().to_owned();
        let payload = String::from_utf8(payload).unwrap().replace(&hex(&v2), &hex(&v3));
        bundle["dsseEnvelope"]["payload"] = STANDARD.encode(payload).into();
        serde_json::to_vec(&bundle).unwrap()
    };
    let cases = [
        (
            "v2's bundle",
            cosign_bundle(&keys, &work, &v2),
            format!("it is for {}, not {}", sha256_digest(&v2), sha256_digest(&v3)),
        ),
        ("another key's", cosign_bundle(&impostor, &work, &v3), "signature does not verify".to_owned()),
        ("a tampered payload", tampered, "signature does not verify".to_owned()),
    ];
    for (index, (case, bundle, reason)) in cases.into_iter().enumerate() {
        let before = setup.rejections().await.get("verify").copied().unwrap_or_default();
        publish(&mounted, 3 + index, &[("fake.wasm", &v3), ("fake.wasm.sig", &bundle)]);
        let provider = rejected(&setup, "verify", before).await;
        let rejection = &provider["lastRejection"];
        assert!(rejection["reason"].as_str().unwrap().contains(&reason), "{case}: {rejection:#}");
        assert_eq!(rejection["digest"], sha256_digest(&v3), "{case}");
        assert_eq!(provider["digest"], sha256_digest(&v2), "v2 keeps serving after {case}");
        setup.wait_event("ProviderRejected", &reason).await;
        assert!(setup.fresh_ingress(&format!("after-{index}")).await.starts_with("192.0.3."), "{case}");
    }
    no_failed_calls(&setup).await;
}

/// Pushes `wasm` to `providers/fake:staging`, signs that digest with
/// cosign v3 (a referrer), then tags it `stable`; returns the digest.
async fn push_cosigned(registry: &Registry, keys: &CosignKeys, wasm: &[u8]) -> String {
    let options = registry.options();
    let digest = push(wasm, &registry.reference("providers/fake:staging"), &options).await.unwrap();
    keys.sign_image(&format!("{}/providers/fake@{digest}", registry.host()), false).expect("cosign sign");
    assert_eq!(push(wasm, &registry.reference("providers/fake:stable"), &options).await.unwrap(), digest);
    digest
}

#[tokio::test(flavor = "multi_thread")]
async fn cosign_v3_referrers_are_verified_and_one_of_another_manifest_leaves_the_provider_serving() {
    let setup = Setup::start().await;
    let registry = Registry::plain().unwrap();
    let keys = CosignKeys::generate().expect("cosign generate-key-pair");
    let v1 = guest("provider-fake");
    push_cosigned(&registry, &keys, &v1).await;
    let public_key = keys.public_key().display().to_string();
    let reference = registry.reference("providers/fake:stable").to_string();
    let _process = setup.run(&reference, &["--registry-plain-http", "--provider-public-key", &public_key]).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v1));

    let v2 = fake_with_pool("192.0.3.0/24");
    let v2_digest = push_cosigned(&registry, &keys, &v2).await;
    setup.wait_provider("v2", |provider| provider["digest"] == sha256_digest(&v2)).await;
    assert!(setup.fresh_ingress("v2").await.starts_with("192.0.3."));

    // v3 with v2's referrers index under its own referrers tag.
    let options = registry.options();
    let v3 = fake_with_pool("192.0.4.0/24");
    let v3_digest = push(&v3, &registry.reference("providers/fake:staging"), &options).await.unwrap();
    let index_tag = registry.reference(&format!("providers/fake:{}", referrers_tag(&v2_digest)));
    let index = registry.stored(&resolve(&index_tag, &options).await.unwrap()).unwrap();
    let index_path = format!("providers/fake:{}", referrers_tag(&v3_digest));
    registry.put_by_hand(&index_path, "application/vnd.oci.image.index.v1+json", &index, &[]).await.unwrap();
    push(&v3, &registry.reference("providers/fake:stable"), &options).await.unwrap();
    let provider = rejected(&setup, "verify", 0.0).await;
    let reason = provider["lastRejection"]["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains(&format!("is of {v2_digest}, not of {v3_digest}")), "{reason}");
    assert_eq!(provider["digest"], sha256_digest(&v2), "v2 keeps serving");
    assert!(setup.fresh_ingress("after-elsewhere").await.starts_with("192.0.3."));

    // v4 signed by another key.
    let v4 = fake_with_pool("192.0.5.0/24");
    push_cosigned(&registry, &CosignKeys::generate().unwrap(), &v4).await;
    let provider = rejected(&setup, "verify", 1.0).await;
    assert!(provider["lastRejection"]["reason"].as_str().unwrap().contains("signature does not verify"));
    assert_eq!(provider["digest"], sha256_digest(&v2), "v2 keeps serving");
    assert!(setup.fresh_ingress("after-impostor").await.starts_with("192.0.3."));
    no_failed_calls(&setup).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn components_oras_and_wkg_push_are_served_with_their_cosign_v3_signature() {
    let setup = Setup::start().await;
    let registry = Registry::plain().unwrap();
    let keys = CosignKeys::generate().expect("cosign generate-key-pair");
    let work = setup.path("work");
    std::fs::create_dir(&work).unwrap();
    let (host, options) = (registry.host(), registry.options());
    let stable = format!("{host}/providers/fake:stable");
    let sign_stable = || async {
        let digest = resolve(&registry.reference("providers/fake:stable"), &options).await.unwrap();
        keys.sign_image(&format!("{host}/providers/fake@{digest}"), false).expect("cosign sign");
    };

    // v1 by oras, as the CNCF WebAssembly format's guide pushes.
    let v1 = guest("provider-fake");
    std::fs::write(work.join("v1.wasm"), &v1).unwrap();
    std::fs::write(work.join("config.json"), r#"{"architecture":"wasm","os":"wasip2"}"#).unwrap();
    Tool::Oras
        .run(
            &work,
            &[
                "push",
                "--plain-http",
                &stable,
                "--config",
                "config.json:application/vnd.wasm.config.v0+json",
                "v1.wasm:application/wasm",
            ],
            &[],
        )
        .expect("oras push");
    sign_stable().await;
    let public_key = keys.public_key().display().to_string();
    let reference = format!("oci://{stable}");
    let _process = setup.run(&reference, &["--registry-plain-http", "--provider-public-key", &public_key]).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v1));
    assert!(setup.fresh_ingress("by-oras").await.starts_with("192.0.2."));

    // v2 by wkg: served once signed.
    let v2 = fake_with_pool("192.0.3.0/24");
    std::fs::write(work.join("v2.wasm"), &v2).unwrap();
    Tool::Wkg.run(&work, &["oci", "push", "--insecure", &host, &stable, "v2.wasm"], &[]).expect("wkg oci push");
    sign_stable().await;
    setup.wait_provider("v2", |provider| provider["digest"] == sha256_digest(&v2)).await;
    assert!(setup.fresh_ingress("by-wkg").await.starts_with("192.0.3."));
    assert_eq!(setup.reloads("rejected").await, 0.0, "nothing was refused on the way");
    no_failed_calls(&setup).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_map_s_cosign_v3_bundle_key_is_verified_and_a_bundle_of_other_bytes_refused() {
    let setup = Setup::start().await;
    let keys = CosignKeys::generate().expect("cosign generate-key-pair");
    let work = setup.path("work");
    std::fs::create_dir(&work).unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(setup.client(), "kube-system");
    let data = |wasm: &[u8], bundle: Vec<u8>| -> Value {
        json!({
            "metadata": {"name": "wasm-ccm-provider", "namespace": "kube-system"},
            "binaryData": {
                "fake.wasm": ByteString(wasm.to_vec()),
                "fake.wasm.sigstore.json": ByteString(bundle),
            },
        })
    };
    let v1 = guest("provider-fake");
    let created: ConfigMap = serde_json::from_value(data(&v1, cosign_bundle(&keys, &work, &v1))).unwrap();
    config_maps.create(&PostParams::default(), &created).await.unwrap();
    let public_key = keys.public_key().display().to_string();
    let _process =
        setup.run("configmap:kube-system/wasm-ccm-provider/fake.wasm", &["--provider-public-key", &public_key]).await;
    assert_eq!(setup.provider().await["digest"], sha256_digest(&v1));

    let v2 = fake_with_pool("192.0.3.0/24");
    let patch = data(&v2, cosign_bundle(&keys, &work, &v1));
    config_maps.patch("wasm-ccm-provider", &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let provider = rejected(&setup, "verify", 0.0).await;
    let reason = provider["lastRejection"]["reason"].as_str().unwrap();
    assert!(reason.contains(&format!("it is for {}, not {}", sha256_digest(&v1), sha256_digest(&v2))), "{reason}");
    assert_eq!(provider["digest"], sha256_digest(&v1), "v1 keeps serving");
    assert!(setup.fresh_ingress("after").await.starts_with("192.0.2."));
}
