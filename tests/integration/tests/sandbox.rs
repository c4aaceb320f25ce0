//! A hostile provider against the sandbox: each attack is stopped with a
//! clear error, and the next call works.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Service, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wasm_ccm_host::{AllowList, Credentials, Limits, ProviderError, ProviderHandle};
use wasm_ccm_tests::echo::EchoServer;
use wasm_ccm_tests::{allow, capture_logs, guest, load, spec};

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
    Service {
        metadata: ObjectMeta {
            name: Some("target".into()),
            namespace: Some("default".into()),
            uid: Some("uid-target".into()),
            annotations: Some(
                [("hostile/attack".to_owned(), kind.to_owned()), ("hostile/arg".to_owned(), arg.to_owned())].into(),
            ),
            ..Default::default()
        },
        spec: Some(ServiceSpec { type_: Some("LoadBalancer".into()), ..Default::default() }),
        ..Default::default()
    }
}

/// Runs an attack; `Ok` carries what the guest observed.
async fn run(handle: &ProviderHandle, kind: &str, arg: &str) -> Result<String, ProviderError> {
    let status = handle.ensure_load_balancer(&attack(kind, arg), &[]).await?;
    Ok(status.ingress.unwrap_or_default().remove(0).hostname.unwrap_or_default())
}

async fn assert_still_serves(handle: &ProviderHandle) {
    assert_eq!(run(handle, "", "").await.unwrap(), "ok with 0 nodes");
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

#[tokio::test]
async fn sealed_credentials_authenticate_requests_but_stay_out_of_the_guest() {
    let server = EchoServer::start().await.unwrap();
    let credentials =
        Credentials::from_pairs([("token", "s3cret\n"), ("region", "eu-west-1")]).seal(["token"]).unwrap();
    let handle = hostile(Limits::default(), allow(&[&server.url()]), credentials).await;
    let err = run(&handle, "credential", "token").await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if !message.contains("s3cret")), "{err:?}");
    assert_eq!(run(&handle, "credential", "region").await.unwrap(), "credential eu-west-1");
    let echoed = run(&handle, "http-auth", &format!("{}/headers", server.url())).await.unwrap();
    assert_eq!(echoed, "status 200 body authorization=Bearer s3cret", "the host still attaches it");

    let typo = Credentials::from_pairs([("token", "s3cret")]).seal(["tokn"]).unwrap_err();
    assert_eq!(
        typo.to_string(),
        "cannot seal the credential tokn: there is no credential of that name (there are: token)"
    );
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
