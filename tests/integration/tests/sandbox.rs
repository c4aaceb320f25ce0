//! A hostile provider against the sandbox: each attack is stopped with a
//! clear error, and the next call works.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeSpec, NodeStatus, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prometheus_client::registry::Registry;
use wasm_ccm_cloud::{Cloud, NodeSet, NodeSnapshot, ProviderError};
use wasm_ccm_envtest::pki::LoopbackTls;
use wasm_ccm_host::{
    Allocation, AllowList, Credentials, Engine, EngineSettings, Limits, LoadedProvider, ProviderHandle, Role, Seal,
    Start,
};
use wasm_ccm_tests::echo::EchoServer;
use wasm_ccm_tests::{allow, capture_logs, guest, load, resident_bytes, spec};

/// Slack for a loaded 2-core machine on top of a deadline and its tick.
const SCHEDULING_SLACK: Duration = Duration::from_millis(490);
const TICK: Duration = Duration::from_millis(10);

async fn hostile(limits: Limits, allow_list: AllowList, credentials: Credentials) -> ProviderHandle {
    let mut spec = spec("hostile", guest("guest-hostile"), b"");
    spec.limits = limits;
    spec.allow_list = allow_list;
    spec.credentials = credentials;
    ProviderHandle::new(load(spec).await)
}

fn attack(kind: &str, arg: &str) -> Service {
    use wasm_ccm_tests::ServiceFixture as _;
    Service::test("target").with_uid("uid-target").with_annotations(&[("hostile/attack", kind), ("hostile/arg", arg)])
}

/// Runs an attack; `Ok` carries what the guest observed.
async fn run(handle: &ProviderHandle, kind: &str, arg: &str) -> Result<String, ProviderError> {
    let status = handle.ensure_load_balancer(&attack(kind, arg), &NodeSet::of([])).await?;
    Ok(status.ingress.unwrap_or_default().remove(0).hostname.unwrap_or_default())
}

async fn assert_still_serves(handle: &ProviderHandle) {
    assert_eq!(run(handle, "", "").await.unwrap(), "ok-with-0-nodes.hostile.example");
}

/// The hostile provider, loaded with `config`.
async fn hostile_configured(config: &[u8]) -> ProviderHandle {
    ProviderHandle::new(load(spec("hostile", guest("guest-hostile"), config)).await)
}

#[tokio::test]
async fn every_call_starts_from_the_state_initialize_left_once() {
    let handle = hostile_configured(b"").await;
    let first = run(&handle, "born", "").await.unwrap();
    assert!(first.starts_with("born "), "{first}");
    for _ in 0..3 {
        assert_eq!(run(&handle, "born", "").await.unwrap(), first);
    }
    // What one call changes is not seen by the next.
    run(&handle, "grow", "8").await.unwrap();
    assert_eq!(run(&handle, "born", "").await.unwrap(), first);
}

/// Every call starts from what `initialize` read of the monotonic clock, in
/// the instance the snapshot was taken of: the clock a call reads does not
/// run back from it.
#[tokio::test]
async fn the_monotonic_clock_runs_on_from_the_snapshot() {
    let handle = hostile_configured(b"read-the-clock-late").await;
    for _ in 0..3 {
        let observed = run(&handle, "clock", "").await.unwrap();
        let (born_at, now) = observed.split_once(' ').unwrap();
        let (born_at, now): (u64, u64) = (born_at.parse().unwrap(), now.parse().unwrap());
        assert!(born_at >= 50_000_000, "initialize slept 50 ms before it read the clock: {born_at}");
        assert!(now > born_at, "the clock ran back from {born_at} ns to {now} ns");
    }
}

/// A provider given kept instances finds what its last call left in
/// memory; each call still has its own deadline, logs and lent nodes; an
/// instance that trapped or ran out its time is dropped; a reload starts
/// afresh; and another provider, kept too, shares none of it.
#[tokio::test]
async fn a_kept_instance_carries_its_provider_s_state_to_the_next_call_and_no_further() {
    let limits = |kept_instances| Limits { kept_instances, deadline: Duration::from_secs(2), ..Limits::default() };
    let kept = hostile(limits(1), AllowList::default(), Credentials::default()).await;
    let fresh = hostile(limits(0), AllowList::default(), Credentials::default()).await;
    let neighbour = hostile(limits(1), AllowList::default(), Credentials::default()).await;
    let count = async |handle: &ProviderHandle| run(handle, "count", "").await.unwrap();
    for expected in ["call 1", "call 2", "call 3"] {
        assert_eq!(count(&kept).await, expected);
        assert_eq!(count(&fresh).await, "call 1", "a fresh instance for every call");
    }
    assert_eq!(count(&neighbour).await, "call 1", "another provider's instance is its own");

    // The nodes lent to a call are taken back, and the instance kept.
    let nodes = NodeSet::new(Arc::new(NodeSnapshot::new(vec![node("a", Some("x://a"), Some("10.0.0.1"))])), None);
    let status = kept.ensure_load_balancer(&attack("read-nodes", ""), &nodes).await.unwrap();
    assert!(status.ingress.unwrap()[0].hostname.as_deref().unwrap().starts_with("read "));
    assert_eq!(count(&kept).await, "call 4");

    // Each call has its own logs.
    let (logs, guard) = capture_logs();
    run(&kept, "stdout", "first").await.unwrap();
    run(&kept, "stdout", "second").await.unwrap();
    drop(guard);
    let text = logs.text();
    let call_of = |printed: &str| {
        let line = text
            .lines()
            .find(|line| line.contains(printed) && line.contains("stdout"))
            .unwrap_or_else(|| panic!("{text}"));
        line.split("call=").nth(1).and_then(|rest| rest.split_whitespace().next()).map(str::to_owned).unwrap()
    };
    assert_ne!(call_of("first"), call_of("second"), "{text}");

    // A call past its deadline, and a trap, each drop the instance.
    let started = Instant::now();
    assert!(matches!(run(&kept, "spin", "").await, Err(ProviderError::DeadlineExceeded { .. })));
    assert!(started.elapsed() < Duration::from_secs(2) + TICK + SCHEDULING_SLACK, "{:?}", started.elapsed());
    assert_eq!(count(&kept).await, "call 1", "the instance that ran out its time is gone");
    assert_eq!(count(&kept).await, "call 2", "the next one is kept");
    let started = Instant::now();
    assert_eq!(count(&kept).await, "call 3");
    assert!(started.elapsed() < Duration::from_secs(1), "a kept call has its own deadline: {:?}", started.elapsed());
    assert!(matches!(run(&kept, "panic", "boom").await, Err(ProviderError::Panic { .. })));
    assert_eq!(count(&kept).await, "call 1", "the instance that trapped is gone");

    // A new version serves from new instances.
    kept.swap(load(spec_with(limits(1))).await);
    assert_eq!(count(&kept).await, "call 1", "a reload starts afresh");
    assert_eq!(count(&neighbour).await, "call 2");
}

fn spec_with(limits: Limits) -> wasm_ccm_host::ProviderSpec {
    let mut spec = spec("hostile", guest("guest-hostile"), b"");
    spec.limits = limits;
    spec
}

/// A pool slot keeps the pages its instance wrote resident, reset in place:
/// the next instance in it, of the same provider or another, reads nothing
/// of what the last one wrote.
#[tokio::test]
async fn an_instance_reads_nothing_an_earlier_one_wrote_in_its_pool_slot() {
    // One instance at a time: every call, whichever the provider, takes the
    // same slot and its memory.
    let settings = EngineSettings { allocation: Allocation::Pooling { instances: 1 }, ..EngineSettings::default() };
    let engine = Engine::new(settings).unwrap();
    let load_as = async |name: &str| {
        ProviderHandle::new(LoadedProvider::load(&engine, spec(name, guest("guest-hostile"), b"")).await.unwrap())
    };
    let (writer, reader) = (load_as("writer").await, load_as("reader").await);
    // 64 KiB: fewer pages written than the slot resets in place; 2 MiB:
    // more, handed back to the kernel.
    for kibibytes in ["64", "2048"] {
        let scribbled = run(&writer, "scribble", kibibytes).await.unwrap();
        let marked = (kibibytes.parse::<usize>().unwrap() << 10).to_string();
        let address = scribbled.strip_prefix(&format!("{marked} marked at ")).unwrap_or_else(|| panic!("{scribbled}"));
        let peek = format!("{address} {kibibytes}");
        assert_eq!(run(&writer, "peek", &peek).await.unwrap(), "0 marked", "the same provider's next call");
        run(&writer, "scribble", kibibytes).await.unwrap();
        assert_eq!(run(&reader, "peek", &peek).await.unwrap(), "0 marked", "another provider's call");
    }
}

/// With a compile cache, the instance a provider is snapshotted from draws
/// its randomness from a seed of the cache's key, the provider's name, its
/// component and configuration, so that the cache keeps the snapshot for
/// the next load; without one, from the system.
#[tokio::test]
async fn a_snapshot_s_randomness_is_seeded_from_the_compile_cache_s_key() {
    let born_as = async |name: &str, compile_cache: Option<&std::path::Path>, config: &[u8]| {
        let settings = EngineSettings {
            allocation: Allocation::OnDemand,
            compile_cache: compile_cache.map(std::path::Path::to_owned),
            ..EngineSettings::default()
        };
        let engine = Engine::new(settings).unwrap();
        let loaded = LoadedProvider::load(&engine, spec(name, guest("guest-hostile"), config)).await.unwrap();
        run(&ProviderHandle::new(loaded), "born", "").await.unwrap()
    };
    let born =
        async |compile_cache: Option<&std::path::Path>, config: &[u8]| born_as("hostile", compile_cache, config).await;
    let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = born(Some(ours.path()), b"").await;
    assert_eq!(born(Some(ours.path()), b"").await, first, "the same key, component and configuration");
    assert_ne!(born(Some(theirs.path()), b"").await, first, "another key");
    assert_ne!(born(Some(ours.path()), b"another").await, first, "another configuration");
    assert_ne!(born_as("hostile-too", Some(ours.path()), b"").await, first, "another provider");
    assert_ne!(born(None, b"").await, born(None, b"").await, "no cache: the system's randomness");
}

#[tokio::test]
async fn a_provider_holding_host_resources_after_initialize_initialises_in_every_call() {
    let handle = hostile_configured(b"hold-a-resource-on-initialize").await;
    let first = run(&handle, "born", "").await.unwrap();
    let second = run(&handle, "born", "").await.unwrap();
    assert!(first.starts_with("born ") && second.starts_with("born "), "{first} / {second}");
    assert_ne!(first, second);
}

#[tokio::test]
async fn an_endless_loop_stops_at_its_deadline() {
    let deadline = Duration::from_millis(300);
    let handle = hostile(Limits { deadline, ..Limits::default() }, AllowList::default(), Credentials::default()).await;
    let started = Instant::now();
    let err = run(&handle, "spin", "").await.unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(err, ProviderError::DeadlineExceeded { deadline });
    assert!(elapsed >= deadline, "{elapsed:?}");
    assert!(elapsed < deadline + TICK + SCHEDULING_SLACK, "{elapsed:?}");
    assert_eq!(handle.usage().memory_bytes, 0, "the stopped instance's memory is given back");
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn a_sleep_in_a_host_call_stops_at_the_deadline() {
    let deadline = Duration::from_millis(300);
    let handle = hostile(Limits { deadline, ..Limits::default() }, AllowList::default(), Credentials::default()).await;
    let started = Instant::now();
    let err = run(&handle, "sleep", "").await.unwrap_err();
    assert_eq!(err, ProviderError::DeadlineExceeded { deadline });
    assert!(started.elapsed() < deadline + TICK + SCHEDULING_SLACK, "{:?}", started.elapsed());
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn memory_past_the_limit_fails_the_call_only() {
    let limit = 32 << 20;
    let handle =
        hostile(Limits { memory: limit, ..Limits::default() }, AllowList::default(), Credentials::default()).await;
    assert_eq!(run(&handle, "grow", "64").await, Err(ProviderError::MemoryLimit { limit }));
    assert_eq!(handle.usage().memory_bytes, 0, "the trapped instance's memory is given back");
    assert_eq!(run(&handle, "grow", "8").await.unwrap(), "grew 8 MiB");
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn a_panic_is_reported_with_its_message() {
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    let err = run(&handle, "panic", "the cloud is on fire").await.unwrap_err();
    let ProviderError::Panic { message } = &err else { panic!("not a panic: {err:?}") };
    assert!(message.starts_with("the cloud is on fire (at "), "{message}");
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn a_provider_s_error_text_is_cut_where_it_enters_the_host() {
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    for (arg, kind) in [("200", "cloud"), ("retry 200", "retry")] {
        let err = run(&handle, "error", arg).await.unwrap_err();
        assert_eq!(err.kind(), kind);
        let (ProviderError::Cloud(message) | ProviderError::Retry { message, .. }) = &err else { panic!("{err:?}") };
        // 200 KiB of text: 8 KiB kept, as of a log record, and what was cut
        // counted.
        assert!(message.len() <= 8192 + 32, "{arg}: {} bytes of error", message.len());
        assert!(message.ends_with(&format!("…[{} more bytes]", (200 << 10) - 8192)), "{arg}: {}", &message[8000..]);
    }
    assert_still_serves(&handle).await;
}

fn denied(result: Result<String, ProviderError>) -> String {
    match result {
        Err(ProviderError::Cloud(message)) if message.starts_with("HTTP request denied: ") => message,
        other => panic!("expected a denied request, got {other:?}"),
    }
}

#[tokio::test]
async fn http_reaches_only_the_allow_list() {
    let server = EchoServer::start().await.unwrap();
    let port = server.port();
    let handle = hostile(Limits::default(), allow(&[&server.url()]), Credentials::default()).await;

    let reached = run(&handle, "http", &format!("{}/hello", server.url())).await.unwrap();
    assert_eq!(reached, "status 200 body hello from loopback");
    let redirected = run(&handle, "http", &format!("{}/redirect?to=/hello", server.url())).await.unwrap();
    assert_eq!(redirected, "status 200 body hello from loopback", "redirects within the list are followed");

    let message = denied(run(&handle, "http", "https://api.example.com/").await);
    assert!(message.contains("https://api.example.com:443 is not on the provider's allow-list"), "{message}");
    let message = denied(run(&handle, "http", &format!("http://127.0.0.2:{port}/hello")).await);
    assert!(message.contains("not on the provider's allow-list"), "an IP literal outside the list: {message}");
    let message =
        denied(run(&handle, "http", &format!("{}/redirect?to=http://127.0.0.2:{port}/hello", server.url())).await);
    assert!(message.contains("redirect refused"), "{message}");
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn http_never_reaches_the_metadata_address() {
    let server = EchoServer::start().await.unwrap();
    let handle = hostile(Limits::default(), allow(&["*://*:*", &server.url()]), Credentials::default()).await;
    let message = denied(run(&handle, "http", "http://169.254.169.254/latest/meta-data/").await);
    assert!(message.contains("169.254.169.254") && message.contains("link-local"), "{message}");
    let message = denied(run(&handle, "http", &format!("{}/redirect?to=http://169.254.169.254/", server.url())).await);
    assert!(message.contains("redirect refused") && message.contains("link-local"), "{message}");
}

#[tokio::test]
async fn names_resolving_to_special_addresses_are_refused() {
    let server = EchoServer::start().await.unwrap();
    let by_name = format!("http://localhost:{}", server.port());
    let handle = hostile(Limits::default(), allow(&[&by_name]), Credentials::default()).await;
    let message = denied(run(&handle, "http", &format!("{by_name}/hello")).await);
    assert!(message.contains("loopback"), "{message}");

    let handle = hostile(Limits::default(), allow(&[&by_name, "http://127.0.0.0/8:*"]), Credentials::default()).await;
    let reached = run(&handle, "http", &format!("{by_name}/hello")).await.unwrap();
    assert_eq!(reached, "status 200 body hello from loopback", "an explicit network entry allows it");
}

#[tokio::test]
async fn responses_over_the_cap_fail() {
    let server = EchoServer::start().await.unwrap();
    let limits = Limits { http_response_body: 1024, ..Limits::default() };
    let handle = hostile(limits, allow(&[&server.url()]), Credentials::default()).await;
    assert!(run(&handle, "http", &format!("{}/big?bytes=1024", server.url())).await.is_ok());
    let err = run(&handle, "http", &format!("{}/big?bytes=4096", server.url())).await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if message.contains("over the 1024 byte cap")), "{err:?}");
}

#[tokio::test]
async fn a_stalled_server_cannot_outlast_the_deadline() {
    let server = EchoServer::start().await.unwrap();
    let deadline = Duration::from_millis(300);
    let handle =
        hostile(Limits { deadline, ..Limits::default() }, allow(&[&server.url()]), Credentials::default()).await;
    let started = Instant::now();
    let err = run(&handle, "http", &format!("{}/stall", server.url())).await.unwrap_err();
    assert!(started.elapsed() < deadline + TICK + SCHEDULING_SLACK, "{:?}", started.elapsed());
    let timed_out = matches!(&err, ProviderError::Cloud(message) if message == "HTTP request timed out");
    assert!(timed_out || err == ProviderError::DeadlineExceeded { deadline }, "{err:?}");
}

#[tokio::test]
async fn only_bound_credentials_are_readable() {
    let server = EchoServer::start().await.unwrap();
    let credentials = Credentials::from_pairs([("token", "s3cret\n")]);
    let handle = hostile(Limits::default(), allow(&[&server.url()]), credentials).await;
    assert_eq!(run(&handle, "credential", "token").await.unwrap(), "credential s3cret");
    for name in ["other", "../token", "/etc/passwd"] {
        let err = run(&handle, "credential", name).await.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Cloud(message) if message.contains("is not bound to this provider")),
            "{name}: {err:?}"
        );
    }
    let echoed = run(&handle, "http-auth", &format!("{}/headers", server.url())).await.unwrap();
    assert_eq!(echoed, "status 200 body authorization=Bearer s3cret", "the host attaches the bearer token");
}

/// The hostile provider with `credentials`, its HTTPS calls trusting
/// `tls`'s CA, allowed to reach `servers`.
async fn hostile_over_tls(tls: &LoopbackTls, servers: &[&EchoServer], credentials: Credentials) -> ProviderHandle {
    let urls: Vec<String> = servers.iter().map(|server| server.url()).collect();
    let mut spec = spec("hostile", guest("guest-hostile"), b"");
    spec.allow_list = allow(&urls.iter().map(String::as_str).collect::<Vec<_>>());
    spec.credentials = credentials;
    spec.trusted_certificates = Some(tls.ca_pem.clone().into_bytes().into());
    ProviderHandle::new(load(spec).await)
}

/// A credential sealed as `NAME=ROLE@ORIGIN`.
fn sealed(entry: &str) -> Seal {
    entry.parse().unwrap_or_else(|err| panic!("{err}"))
}

#[tokio::test]
async fn sealed_credentials_authenticate_requests_but_stay_out_of_the_guest() {
    const TOKEN: &str = "s3cret+bearer/token";
    let tls = LoopbackTls::generate("sandbox").unwrap();
    let (own, echo) = (EchoServer::start_tls(&tls).await.unwrap(), EchoServer::start_tls(&tls).await.unwrap());
    let http = EchoServer::start().await.unwrap();
    let credentials = Credentials::from_pairs([("token", format!("{TOKEN}\n").as_str()), ("region", "eu-west-1")])
        .seal([sealed(&format!("token=bearer@{}", own.url()))])
        .unwrap();
    let handle = hostile_over_tls(&tls, &[&own, &echo, &http], credentials).await;
    let err = run(&handle, "credential", "token").await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if !message.contains(TOKEN)), "{err:?}");
    assert_eq!(run(&handle, "credential", "region").await.unwrap(), "credential eu-west-1");

    // The host attaches it to requests to its origin...
    let check = format!("token {}/authorized?token=s3cret%2Bbearer%2Ftoken", own.url());
    assert_eq!(run(&handle, "bearer", &check).await.unwrap(), "status 200 body yes", "the host attaches the token");
    // ...and what the server echoes of it, in any of its usual encodings,
    // reaches the guest masked, in the body and in the headers.
    let masked = "*".repeat(TOKEN.len());
    let echoed = run(&handle, "bearer", &format!("token {}/headers", own.url())).await.unwrap();
    assert_eq!(echoed, format!("status 200 body authorization=Bearer {masked} header Bearer {masked}"));
    // In base64, the token's bytes start one byte into a 3-byte group: the
    // characters 10 to 33 are its own, those beside them share bits with
    // "Bearer " and with the padding.
    let in_base64 = |encoded: String| format!("{}{}{}", &encoded[..10], "*".repeat(24), &encoded[34..]);
    let bearer = format!("Bearer {TOKEN}");
    for (encoding, expected) in [
        ("base64", in_base64(STANDARD.encode(&bearer))),
        ("base64url", in_base64(URL_SAFE_NO_PAD.encode(&bearer))),
        ("percent", format!("Bearer%20{}", "*".repeat("s3cret%2Bbearer%2Ftoken".len()))),
    ] {
        let echoed = run(&handle, "bearer", &format!("token {}/headers?encoding={encoding}", own.url())).await.unwrap();
        assert_eq!(echoed, format!("status 200 body authorization={expected} header {expected}"), "{encoding}");
    }
    // An answer the host could not scrub is refused.
    let err = run(&handle, "bearer", &format!("token {}/encoded", own.url())).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Cloud(message) if message.contains("the answer is encoded (gzip)")),
        "{err:?}"
    );

    // Another origin on the allow-list, an echoing one, never gets it.
    let message = denied(run(&handle, "bearer", &format!("token {}/headers", echo.url())).await);
    let refusal = format!(r#"credential "token" is sealed for {} only, not {}"#, own.url(), echo.url());
    assert!(message.contains(&refusal), "{message}");
    let message = denied(run(&handle, "bearer", &format!("token {}/headers", http.url())).await);
    assert!(message.contains("is sealed for"), "{message}");
    assert_still_serves(&handle).await;

    let sealing = |value: &str, entry: &str| {
        let credentials = Credentials::from_pairs([("token", value)]);
        entry
            .parse::<Seal>()
            .map_err(|err| err.to_string())
            .and_then(|seal| credentials.seal([seal]).map(drop).map_err(|err| err.to_string()))
    };
    assert_eq!(
        sealing(TOKEN, "tokn=bearer@https://api.example").unwrap_err(),
        "cannot seal the credential tokn: there is no credential of that name",
    );
    for (value, entry, expected) in [
        (TOKEN, "token=bearer", "it names no origin"),
        (TOKEN, "token=bearer@https://*.example", "no wildcard, network or path"),
        (TOKEN, "token=bearer@https://10.0.0.0/8", "no wildcard, network or path"),
        (TOKEN, "token=bearer@http://api.example", "sent only over https"),
        ("s3cret", "token=bearer@https://api.example", "it is 6 bytes long"),
    ] {
        let err = sealing(value, entry).unwrap_err();
        assert!(err.contains(expected), "{entry}: {err}");
    }
}

/// What the guest's request in `slot` carries when it names `name` there:
/// a bearer token, or one of AWS Signature Version 4's three credentials.
async fn use_in_slot(
    handle: &ProviderHandle,
    server: &EchoServer,
    slot: Role,
    name: &str,
) -> Result<String, ProviderError> {
    let url = format!("{}/headers", server.url());
    let (mut key_id, mut secret, mut session) = ("plain-key-id", "plain-secret", "-");
    match slot {
        Role::Bearer => return run(handle, "bearer", &format!("{name} {url}")).await,
        Role::AwsAccessKeyId => key_id = name,
        Role::AwsSecretAccessKey => secret = name,
        Role::AwsSessionToken => session = name,
    }
    run(handle, "sigv4", &format!("{key_id} {secret} {session} eu-west-1 ec2 {url}")).await
}

#[tokio::test]
async fn a_sealed_credential_serves_its_role_only() {
    let roles = [Role::Bearer, Role::AwsAccessKeyId, Role::AwsSecretAccessKey, Role::AwsSessionToken];
    let names = ["sealed-bearer", "sealed-key-id", "sealed-secret", "sealed-session"];
    let tls = LoopbackTls::generate("roles").unwrap();
    let server = EchoServer::start_tls(&tls).await.unwrap();
    let mut pairs: Vec<(String, String)> =
        names.iter().map(|name| (name.to_string(), format!("value-of-{name}"))).collect();
    pairs.extend([("plain-key-id", "AKIDPLAIN"), ("plain-secret", "plain")].map(|(k, v)| (k.to_owned(), v.to_owned())));
    let seals = names.into_iter().zip(roles).map(|(name, role)| sealed(&format!("{name}={role}@{}", server.url())));
    let credentials = Credentials::from_pairs(pairs).seal(seals).unwrap();
    let handle = hostile_over_tls(&tls, &[&server], credentials).await;

    for (name, sealed_as) in names.into_iter().zip(roles) {
        for slot in roles {
            let result = use_in_slot(&handle, &server, slot, name).await;
            if slot == sealed_as {
                let echoed = result.unwrap_or_else(|err| panic!("{name} in its own role {slot}: {err:?}"));
                assert!(echoed.starts_with("status 200"), "{echoed}");
                // The access key ID comes back in the echoed signature,
                // masked; the secret key is never sent.
                assert!(!echoed.contains(&format!("value-of-{name}")), "{echoed}");
            } else {
                let message = denied(result);
                assert!(message.contains(&format!("sealed as {sealed_as} and cannot be used as {slot}")), "{message}");
            }
        }
    }
    assert_still_serves(&handle).await;
}

/// An AWS key ID, secret key and session token, the secret key and token
/// sealed for `cloud`.
fn sealed_aws_keys(cloud: &EchoServer) -> Credentials {
    Credentials::from_pairs([
        ("key-id", "AKIDEXAMPLE"),
        ("secret", wasm_ccm_tests::sigv4::SECRET_ACCESS_KEY),
        ("token", "session-token-of-the-cloud"),
    ])
    .seal([
        sealed(&format!("secret=aws-sigv4-secret-access-key@{}", cloud.url())),
        sealed(&format!("token=aws-sigv4-session-token@{}", cloud.url())),
    ])
    .unwrap()
}

/// A vendor SDK signs its own requests: run with placeholder keys in the
/// guest, its requests to the origin a secret key is sealed for are signed
/// again by the host with that key, which the guest never holds; elsewhere
/// they go as the guest signed them; and a placeholder naming the secret
/// key, which would send it in the clear, is refused.
#[tokio::test]
async fn a_request_the_provider_signed_itself_is_signed_again_with_the_sealed_key() {
    let tls = LoopbackTls::generate("self-signed").unwrap();
    let (cloud, elsewhere) = (EchoServer::start_tls(&tls).await.unwrap(), EchoServer::start_tls(&tls).await.unwrap());
    let handle = hostile_over_tls(&tls, &[&cloud, &elsewhere], sealed_aws_keys(&cloud)).await;
    let self_signed = async |key_id: &str, token: &str, url: String| {
        run(&handle, "self-signed", &format!("{key_id} {token} eu-west-1 ec2 {url}")).await
    };
    let checked = format!("{}/sigv4", cloud.url());
    assert_eq!(self_signed("key-id", "token", checked.clone()).await.unwrap(), "status 200 body valid");
    assert_eq!(self_signed("key-id", "-", checked.clone()).await.unwrap(), "status 200 body valid");

    let own = self_signed("key-id", "-", format!("{}/headers", elsewhere.url())).await.unwrap();
    assert!(own.contains(&format!("Signature={}", "0".repeat(64))), "sent as the guest signed it: {own}");
    let resigned = self_signed("key-id", "-", format!("{}/headers", cloud.url())).await.unwrap();
    assert!(!resigned.contains(&"0".repeat(64)) && resigned.contains("Signature="), "{resigned}");

    for (key_id, token, slot) in
        [("secret", "-", "aws-sigv4-access-key-id"), ("key-id", "secret", "aws-sigv4-session-token")]
    {
        let message = denied(self_signed(key_id, token, checked.clone()).await);
        assert!(
            message.contains(&format!("sealed as aws-sigv4-secret-access-key and cannot be used as {slot}")),
            "{message}"
        );
    }
    let err = run(&handle, "self-signed", &format!("key-id - eu-west-1;x ec2 {checked}")).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Cloud(message) if message.contains("\"eu-west-1;x\" is not a region or service name")),
        "{err:?}"
    );
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn signature_scopes_are_names() {
    let server = EchoServer::start().await.unwrap();
    let credentials = Credentials::from_pairs([("key-id", "AKIDEXAMPLE"), ("secret", "s3cret-key")])
        .seal([sealed(&format!("secret=aws-sigv4-secret-access-key@{}", server.url()))])
        .unwrap();
    let handle = hostile(Limits::default(), allow(&[&server.url()]), credentials).await;
    let url = format!("{}/headers", server.url());
    let signed = run(&handle, "sigv4", &format!("key-id secret - eu-west-1 ec2 {url}")).await.unwrap();
    assert!(signed.contains("Credential=AKIDEXAMPLE/") && signed.contains("/eu-west-1/ec2/aws4_request"), "{signed}");
    for (region, service) in [("eu-west-1\tx", "ec2"), ("eu-west-1", "ec2\u{7f}"), ("eu-west-1", "ec2,Signature=x")] {
        let err = run(&handle, "sigv4", &format!("key-id secret - {region} {service} {url}")).await.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Cloud(message) if message.contains("is not a region or service name")),
            "{region:?} {service:?}: {err:?}"
        );
    }
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn no_files_no_environment() {
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    let err = run(&handle, "file", "/etc/passwd").await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if message.starts_with("file: ")), "{err:?}");
    assert_eq!(run(&handle, "env", "").await.unwrap(), "0 variables, 0 arguments");
}

#[tokio::test]
async fn stdout_and_stderr_reach_the_log_tagged_with_the_provider() {
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    let (logs, _guard) = capture_logs();
    assert_eq!(run(&handle, "stdout", "a line from the guest").await.unwrap(), "printed");
    let text = logs.text();
    let line = text
        .lines()
        .find(|line| line.contains("a line from the guest") && line.contains("stdout"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("provider=\"hostile\""), "{line}");
    assert!(line.contains("call="), "{line}");
    assert!(
        text.lines().any(|line| line.contains("a line from the guest on stderr") && line.contains("stderr")),
        "{text}"
    );
}

#[tokio::test]
async fn a_log_flood_costs_the_host_a_bounded_log_and_memory() {
    // The process's memory is measured: alone in a process.
    if !wasm_ccm_tests::in_own_process!(a_log_flood_costs_the_host_a_bounded_log_and_memory) {
        return;
    }
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    let (logs, _guard) = capture_logs();
    let before = resident_bytes("self");
    assert_eq!(run(&handle, "log-flood", "50").await.unwrap(), "logged");
    let grown = resident_bytes("self").saturating_sub(before);
    let text = logs.text();
    // 50 MiB of NULs as one message, 100 fields of 64 KiB, 2000 lines of
    // 64 KiB: the log keeps 8 KiB of each record, 1000 records a call.
    assert!(text.len() < 1000 * 8 * 8192, "{} bytes of log", text.len());
    assert!(
        text.contains("dropped log lines past 1000 in one call") && text.contains("dropped=1002"),
        "{}",
        &text[text.len().saturating_sub(500)..]
    );
    assert!(text.contains("more fields]"), "fields beyond 16 are counted, not logged");
    // The guest's own 64 MiB and the 50 MiB message lifted into the host;
    // escaping the NULs in full would take another 300 MiB.
    assert!(grown < 200 << 20, "the host grew by {} MiB", grown >> 20);
    assert_still_serves(&handle).await;
}

/// What the host logs about a call's refused requests and credentials
/// takes from the call's line budget, as the guest's own lines do.
#[tokio::test]
async fn refusals_the_host_logs_for_a_call_count_against_its_lines() {
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    let (logs, _guard) = capture_logs();
    assert_eq!(run(&handle, "refused-many", "3000 http://blocked.example/").await.unwrap(), "refused 6000");
    let text = logs.text();
    let refusals = text
        .lines()
        .filter(|line| line.contains("refused a provider's HTTP request") || line.contains("not bound to it"))
        .count();
    assert_eq!(refusals, 1000, "a call's budget of lines");
    assert!(text.contains("dropped log lines past 1000 in one call") && text.contains("dropped=5000"), "{refusals}");
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn a_guest_cannot_fill_the_host_s_resource_table() {
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    let err = run(&handle, "resources", "").await.unwrap_err();
    assert!(matches!(&err, ProviderError::Trap { message } if message.contains("resource table")), "{err:?}");
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn host_names_and_urls_past_their_limits_are_refused() {
    let handle = hostile(Limits::default(), allow(&["https://*"]), Credentials::default()).await;
    let long_host = format!("https://{}example.com/", "a.".repeat(200));
    let message = denied(run(&handle, "http", &long_host).await);
    assert!(message.contains("longer than DNS allows"), "{message}");
    let long_url = format!("https://api.example.com/{}", "a".repeat(10_000));
    let err = run(&handle, "http", &long_url).await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if message.contains("longer than 8192")), "{err:?}");
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn a_network_entry_lets_its_addresses_through_for_its_own_scheme_and_port_only() {
    let server = EchoServer::start().await.unwrap();
    let port = server.port();
    let list = allow(&["http://127.0.0.0/8:1", &format!("http://localhost:{port}")]);
    let handle = hostile(Limits::default(), list, Credentials::default()).await;
    let message = denied(run(&handle, "http", &format!("http://localhost:{port}/hello")).await);
    assert!(message.contains("loopback"), "the network entry names another port: {message}");
}

#[tokio::test]
async fn a_provider_keeps_few_idle_connections_per_host() {
    let server = EchoServer::start().await.unwrap();
    let handle = hostile(Limits::default(), allow(&[&server.url()]), Credentials::default()).await;
    let url = format!("{}/slow", server.url());
    let calls = (0..16).map(|_| run(&handle, "http", &url));
    for answer in futures::future::join_all(calls).await {
        assert_eq!(answer.unwrap(), "status 200 body slow");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let open = server.open_connections();
    assert!((1..=4).contains(&open), "{open} idle connections kept after 16 at once");
}

#[tokio::test]
async fn http_metrics_label_allowed_hosts_and_status_classes_only() {
    let server = EchoServer::start().await.unwrap();
    // An engine of its own, so that its metrics are this provider's alone.
    let engine = Engine::new(EngineSettings { allocation: Allocation::OnDemand, ..EngineSettings::default() }).unwrap();
    let mut spec = spec("labelled", guest("guest-hostile"), b"");
    spec.allow_list = allow(&[&server.url()]);
    let handle = ProviderHandle::new(LoadedProvider::load(&engine, spec).await.unwrap());
    for code in [200, 201, 204, 404, 418, 451, 500, 503] {
        let answered = run(&handle, "http", &format!("{}/status?code={code}", server.url())).await.unwrap();
        assert!(answered.starts_with(&format!("status {code} ")), "{answered}");
    }
    for host in 0..20 {
        denied(run(&handle, "http", &format!("https://made-up-{host}.example.com/")).await);
    }
    let long_host = format!("https://{}.example.com/", "a".repeat(300));
    assert!(run(&handle, "http", &long_host).await.is_err());

    let mut registry = Registry::default();
    engine.metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let mut series: Vec<&str> = text.lines().filter(|line| line.starts_with("provider_http_requests_total{")).collect();
    series.sort_unstable();
    let host = format!("127.0.0.1:{}", server.port());
    assert_eq!(
        series,
        [
            r#"provider_http_requests_total{provider="labelled",host="-",status="denied"} 21"#.to_owned(),
            format!(r#"provider_http_requests_total{{provider="labelled",host="{host}",status="2xx"}} 3"#),
            format!(r#"provider_http_requests_total{{provider="labelled",host="{host}",status="4xx"}} 3"#),
            format!(r#"provider_http_requests_total{{provider="labelled",host="{host}",status="5xx"}} 2"#),
        ],
        "{text}"
    );
    assert_still_serves(&handle).await;
}

/// A Go provider reaches WASI through the preview1 adapter, which the host
/// links to the same empty interfaces.
async fn hostile_go(limits: Limits) -> ProviderHandle {
    let mut spec = spec("hostile-go", guest("guest-hostile-go"), b"");
    spec.limits = limits;
    ProviderHandle::new(load(spec).await)
}

/// A Go provider signing with aws-sdk-go-v2's own signer and placeholder
/// keys, through Go's default client: its requests reach the cloud signed
/// with the sealed key, which no answer or error brings back to it.
#[tokio::test]
async fn a_go_provider_s_own_aws_signature_is_replaced_with_the_sealed_key_s() {
    let tls = LoopbackTls::generate("aws-sdk-go").unwrap();
    let cloud = EchoServer::start_tls(&tls).await.unwrap();
    let mut spec = spec("hostile-go", guest("guest-hostile-go"), b"");
    spec.allow_list = allow(&[&cloud.url()]);
    spec.credentials = sealed_aws_keys(&cloud);
    spec.trusted_certificates = Some(tls.ca_pem.clone().into_bytes().into());
    let handle = ProviderHandle::new(load(spec).await);
    let signed = async |key_id: &str, token: &str, path: &str| {
        run(&handle, "aws-signed", &format!("{key_id} {token} {}{path}", cloud.url())).await
    };
    assert_eq!(signed("key-id", "token", "/sigv4").await.unwrap(), "status 200 body valid");
    assert_eq!(signed("key-id", "-", "/sigv4").await.unwrap(), "status 200 body valid");
    let echoed = signed("key-id", "token", "/headers").await.unwrap();
    assert!(echoed.contains("Credential=AKIDEXAMPLE/") && !echoed.contains("placeholder"), "{echoed}");
    let refused = signed("secret", "-", "/sigv4").await.unwrap_err();
    assert!(
        matches!(&refused, ProviderError::Cloud(message)
            if message.contains("sealed as aws-sigv4-secret-access-key and cannot be used as aws-sigv4-access-key-id")),
        "{refused:?}"
    );
    for answer in [echoed, format!("{refused:?}")] {
        assert!(!answer.contains(wasm_ccm_tests::sigv4::SECRET_ACCESS_KEY), "{answer}");
    }
}

#[tokio::test]
async fn a_go_guest_has_no_files_environment_arguments_stdin_or_sockets() {
    let handle = hostile_go(Limits::default()).await;
    for (attack, arg) in
        [("file", "/etc/passwd"), ("file", "go.mod"), ("create", "/tmp/written"), ("dir", "/"), ("dir", ".")]
    {
        let err = run(&handle, attack, arg).await.unwrap_err();
        assert!(
            matches!(&err, ProviderError::Cloud(message) if message.starts_with(&format!("{attack}: "))),
            "{attack} {arg}: {err:?}"
        );
    }
    assert_eq!(run(&handle, "env", "").await.unwrap(), "0 variables, 0 arguments, HOME false \"\"");
    assert_eq!(run(&handle, "stdin", "").await.unwrap(), "stdin 0 bytes, <nil>");
    let err = run(&handle, "dial", "127.0.0.1:80").await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if message.starts_with("dial: ")), "{err:?}");
    assert_eq!(run(&handle, "", "").await.unwrap(), "ok with 0 nodes");
}

#[tokio::test]
async fn a_go_panic_is_reported_with_its_message_and_fails_the_call_only() {
    let handle = hostile_go(Limits::default()).await;
    let err = run(&handle, "panic", "the cloud is on fire").await.unwrap_err();
    let ProviderError::Panic { message } = &err else { panic!("not a panic: {err:?}") };
    assert!(message.starts_with("the cloud is on fire (at "), "{message}");
    assert!(message.contains("main.go:"), "{message}");
    assert_eq!(run(&handle, "", "").await.unwrap(), "ok with 0 nodes");
}

#[tokio::test]
async fn a_go_loop_stops_at_its_deadline() {
    let deadline = Duration::from_millis(300);
    let handle = hostile_go(Limits { deadline, ..Limits::default() }).await;
    let started = Instant::now();
    assert_eq!(run(&handle, "spin", "").await, Err(ProviderError::DeadlineExceeded { deadline }));
    assert!(started.elapsed() < deadline + TICK + SCHEDULING_SLACK, "{:?}", started.elapsed());
    assert_eq!(run(&handle, "", "").await.unwrap(), "ok with 0 nodes");
}

/// A Go provider releases the streams the WASI adapter opened once it is
/// built, so the host snapshots it after `initialize`: every call starts
/// from that copy, and the factory runs once.
#[tokio::test]
async fn a_go_guest_is_initialised_once() {
    let loaded = load(spec("hostile-go", guest("guest-hostile-go"), b"")).await;
    assert_eq!(loaded.start_kind(), Start::FromSnapshot);
    let handle = ProviderHandle::new(loaded);
    let first = run(&handle, "born", "").await.unwrap();
    let second = run(&handle, "born", "").await.unwrap();
    assert!(first.starts_with("born "), "{first}");
    assert_eq!(first, second, "both calls start from the one initialised instance");
}

fn node(name: &str, provider_id: Option<&str>, internal_ip: Option<&str>) -> Arc<Node> {
    Arc::new(Node {
        metadata: ObjectMeta { name: Some(name.into()), uid: Some(format!("uid-{name}")), ..Default::default() },
        spec: Some(NodeSpec { provider_id: provider_id.map(str::to_owned), ..Default::default() }),
        status: Some(NodeStatus {
            addresses: internal_ip.map(|ip| vec![NodeAddress { type_: "InternalIP".into(), address: ip.into() }]),
            ..Default::default()
        }),
    })
}

/// The SDK leaves free heap in the snapshot: a call that reads the names,
/// provider IDs and addresses of 5000 nodes (over 300 KB) grows no memory,
/// which would cost it an `mprotect` each way and a TLB shootdown.
#[tokio::test]
async fn a_call_reading_5000_nodes_grows_no_memory() {
    let handle = hostile_configured(b"").await;
    let nodes: Vec<_> = (0..5000)
        .map(|index| {
            let provider_id = format!("aws:///us-east-1a/i-{index:017}");
            node(&format!("ip-10-0-{index:05}.ec2.internal"), Some(&provider_id), Some(&format!("10.0.{index}")))
        })
        .collect();
    let nodes = NodeSet::new(Arc::new(NodeSnapshot::new(nodes)), None);
    let status = handle.ensure_load_balancer(&attack("read-nodes", ""), &nodes).await.unwrap();
    let observed = status.ingress.unwrap().remove(0).hostname.unwrap();
    let (bytes, pages) = observed.strip_prefix("read ").and_then(|rest| rest.split_once(" bytes, memory ")).unwrap();
    assert!(bytes.parse::<usize>().unwrap() > 300_000, "{observed}");
    let (before, after) = pages.split_once(" pages then ").unwrap();
    assert_eq!(before, after, "{observed}");
}

/// Every view of the node set the host lends a Go provider reads as the
/// host holds it.
#[tokio::test]
async fn a_go_guest_reads_every_view_of_the_node_set() {
    let handle = hostile_go(Limits::default()).await;
    let current = NodeSnapshot::new(vec![node("c", None, None), node("a", Some("x://a"), Some("10.0.0.1"))]);
    let previous = NodeSnapshot::new(vec![node("a", Some("x://a"), None), node("b", Some("x://b"), None)]);
    let nodes = NodeSet::new(Arc::new(current), Some(Arc::new(previous)));
    let status = handle.ensure_load_balancer(&attack("nodes", ""), &nodes).await.unwrap();
    assert_eq!(
        status.ingress.unwrap()[0].hostname.as_deref(),
        Some("names a,c ids x://a, internal 10.0.0.1, uids uid-a,uid-c previous true added [1] removed [{b x://b}]")
    );
    assert_eq!(
        run(&handle, "nodes", "").await.unwrap(),
        "names  ids  internal  uids  previous false added [] removed []"
    );
}
