//! A hostile provider against the sandbox: each attack is stopped with a
//! clear error, and the next call works.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use wasm_ccm_envtest::pki::LoopbackTls;
use wasm_ccm_host::{AllowList, Credentials, Limits, ProviderError, ProviderHandle, Role};
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
    use wasm_ccm_tests::ServiceFixture as _;
    Service::test("target").with_uid("uid-target").with_annotations(&[("hostile/attack", kind), ("hostile/arg", arg)])
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

#[tokio::test]
async fn sealed_credentials_authenticate_requests_but_stay_out_of_the_guest() {
    let tls = LoopbackTls::generate("sandbox").unwrap();
    let (https, http) = (EchoServer::start_tls(&tls).await.unwrap(), EchoServer::start().await.unwrap());
    let credentials = Credentials::from_pairs([("token", "s3cret\n"), ("region", "eu-west-1")])
        .seal([("token", Role::Bearer)])
        .unwrap();
    let handle = hostile_over_tls(&tls, &[&https, &http], credentials).await;
    let err = run(&handle, "credential", "token").await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if !message.contains("s3cret")), "{err:?}");
    assert_eq!(run(&handle, "credential", "region").await.unwrap(), "credential eu-west-1");
    let echoed = run(&handle, "bearer", &format!("token {}/headers", https.url())).await.unwrap();
    assert_eq!(echoed, "status 200 body authorization=Bearer s3cret", "the host still attaches it, over https");

    let message = denied(run(&handle, "bearer", &format!("token {}/headers", http.url())).await);
    assert!(message.contains(r#"credential "token" is sealed as bearer, which is sent only over https"#), "{message}");
    assert_still_serves(&handle).await;

    let typo = Credentials::from_pairs([("token", "s3cret")]).seal([("tokn", Role::Bearer)]).unwrap_err();
    assert_eq!(
        typo.to_string(),
        "cannot seal the credential tokn: there is no credential of that name (there are: token)"
    );
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
    let credentials = Credentials::from_pairs(pairs).seal(names.into_iter().zip(roles)).unwrap();
    let handle = hostile_over_tls(&tls, &[&server], credentials).await;

    for (name, sealed_as) in names.into_iter().zip(roles) {
        for slot in roles {
            let result = use_in_slot(&handle, &server, slot, name).await;
            if slot == sealed_as {
                let echoed = result.unwrap_or_else(|err| panic!("{name} in its own role {slot}: {err:?}"));
                assert!(echoed.starts_with("status 200"), "{echoed}");
                if slot == Role::AwsSecretAccessKey {
                    assert!(!echoed.contains("value-of-sealed-secret"), "the secret key is never sent: {echoed}");
                }
            } else {
                let message = denied(result);
                assert!(message.contains(&format!("sealed as {sealed_as} and cannot be used as {slot}")), "{message}");
            }
        }
    }
    assert_still_serves(&handle).await;
}

#[tokio::test]
async fn signature_scopes_are_names() {
    let server = EchoServer::start().await.unwrap();
    let credentials = Credentials::from_pairs([("key-id", "AKIDEXAMPLE"), ("secret", "s3cret")])
        .seal([("secret", Role::AwsSecretAccessKey)])
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

/// The process's resident memory, from `/proc/self/status`.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[tokio::test]
async fn a_log_flood_costs_the_host_a_bounded_log_and_memory() {
    // The process's memory is measured: alone in a process.
    if !wasm_ccm_tests::in_own_process!(a_log_flood_costs_the_host_a_bounded_log_and_memory) {
        return;
    }
    let handle = hostile(Limits::default(), AllowList::default(), Credentials::default()).await;
    let (logs, _guard) = capture_logs();
    let before = resident_bytes();
    assert_eq!(run(&handle, "log-flood", "50").await.unwrap(), "logged");
    let grown = resident_bytes().saturating_sub(before);
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
