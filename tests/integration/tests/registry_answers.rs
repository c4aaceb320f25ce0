//! A hostile registry cannot make a pull read without bound or send the
//! client to loopback, a private network or the cloud's metadata service:
//! endless manifests, token answers and error bodies are cut at their caps,
//! and token realms and redirects to refused addresses fail with a typed
//! error. After each attempt the same process still pulls from a real
//! registry.

use std::net::{IpAddr, Ipv4Addr};

use wasm_ccm_distribution::{DistributionError, Reference, RegistryOptions, Verification, pull, push, resolve};
use wasm_ccm_tests::guest;
use wasm_ccm_tests::hostile_registry::{HostileRegistry, Hostility, ONE_GIB, primary_address};
use wasm_ccm_tests::registry::{Registry, Settings};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// What one hostile pull may add to the process's peak RSS: the caps are
/// 4 MiB (manifests), 1 MiB (tokens) and 64 KiB (error bodies).
const MEMORY_BOUND: u64 = 48 << 20;

fn options() -> RegistryOptions {
    RegistryOptions { plain_http: true, ..RegistryOptions::default() }
}

fn reference(registry: &HostileRegistry) -> Reference {
    format!("oci://{}/providers/acme:v1", registry.host()).parse().unwrap()
}

/// The process's peak resident set, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Pulls from `registry`, checks the error and that memory and the bytes
/// read stayed bounded.
async fn refused(registry: &HostileRegistry) -> DistributionError {
    refused_verifying(registry, &Verification::none()).await
}

/// As [`refused`], verifying as `verification` says.
async fn refused_verifying(registry: &HostileRegistry, verification: &Verification) -> DistributionError {
    let before = peak_rss();
    let err = pull(&reference(registry), &options(), verification).await.unwrap_err();
    let grown = peak_rss().saturating_sub(before);
    eprintln!("{}: peak RSS +{grown} bytes, {} bytes sent: {err}", registry.host(), registry.sent());
    assert!(grown < MEMORY_BOUND, "peak RSS grew by {grown} bytes: {err}");
    assert!(registry.sent() < 64 << 20, "{} of {ONE_GIB} bytes were sent before the client stopped", registry.sent());
    err
}

/// The same process still pulls from a well-behaved registry.
async fn still_pulls(registry: &Registry) {
    let wasm = guest("provider-fake").to_vec();
    let reference = registry.reference("well-behaved:v1");
    push(&wasm, &reference, &registry.options()).await.expect("push");
    assert!(pull(&reference, &registry.options(), &Verification::none()).await.expect("pull").wasm == wasm);
}

#[tokio::test]
async fn endless_answers_are_cut_at_their_caps() {
    // The process's peak memory is measured: alone in a process.
    if !wasm_ccm_tests::in_own_process!(endless_answers_are_cut_at_their_caps) {
        return;
    }
    let good = Registry::start(Settings::default()).expect("a registry");

    let manifest = HostileRegistry::start(LOOPBACK, Hostility::EndlessManifest).await.unwrap();
    let err = refused(&manifest).await;
    assert!(matches!(err, DistributionError::AnswerTooLarge { what: "the manifest", limit: 4194304 }), "{err}");
    assert_eq!(err.to_string(), "the manifest is larger than the limit of 4194304 bytes");
    let err = resolve(&reference(&manifest), &options()).await.unwrap_err();
    assert!(matches!(err, DistributionError::AnswerTooLarge { .. }), "resolving without a digest header: {err}");
    still_pulls(&good).await;

    // A signature is looked for among the referrers: their index is cut too.
    let referrers = HostileRegistry::start(LOOPBACK, Hostility::EndlessReferrers).await.unwrap();
    let key = wasm_ccm_distribution::SigningKey::generate().unwrap().public_key().unwrap();
    let signed = Verification { public_key: Some(key), ..Verification::none() };
    let err = refused_verifying(&referrers, &signed).await;
    assert_eq!(err.to_string(), "the referrers index is larger than the limit of 4194304 bytes");
    still_pulls(&good).await;

    let token = HostileRegistry::start(LOOPBACK, Hostility::EndlessToken).await.unwrap();
    let err = refused(&token).await;
    assert_eq!(err.to_string(), "the token answer is larger than the limit of 1048576 bytes");
    still_pulls(&good).await;

    let failing = HostileRegistry::start(LOOPBACK, Hostility::FailingToken).await.unwrap();
    let err = refused(&failing).await;
    assert!(matches!(err, DistributionError::Unauthorized { .. }), "{err}");
    let message = err.to_string();
    let (_, quoted) = message.split_once("the token realm answered 500 Internal Server Error: ").expect(&message);
    assert_eq!(quoted, format!("{{\"a\":\"{}...", "a".repeat(250)), "256 bytes of the realm's answer");
    still_pulls(&good).await;

    let error = HostileRegistry::start(LOOPBACK, Hostility::EndlessError).await.unwrap();
    let err = refused(&error).await;
    assert!(matches!(err, DistributionError::Registry { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("code: 500, message: {\"a\":\"aaaa"), "{message}");
    assert!(message.len() < 2048, "the message keeps 1 KiB of the 64 KiB read: {} bytes", message.len());
    still_pulls(&good).await;
}

#[tokio::test]
async fn token_realms_and_redirects_to_refused_addresses() {
    // The process's peak memory is measured: alone in a process.
    if !wasm_ccm_tests::in_own_process!(token_realms_and_redirects_to_refused_addresses) {
        return;
    }
    let good = Registry::start(Settings::default()).expect("a registry");

    let metadata =
        HostileRegistry::start(LOOPBACK, Hostility::Realm("http://169.254.169.254/".to_owned())).await.unwrap();
    let err = refused(&metadata).await;
    assert_eq!(
        err.to_string(),
        "refused the token realm http://169.254.169.254/: \
         169.254.169.254 is a link-local or metadata address, and the registry is not on one"
    );
    assert!(matches!(err, DistributionError::Refused { what: "the token realm", .. }));

    let redirect = HostileRegistry::start(
        LOOPBACK,
        Hostility::BlobRedirect("http://169.254.169.254/latest/meta-data/iam/".to_owned()),
    )
    .await
    .unwrap();
    let err = refused(&redirect).await;
    assert!(matches!(err, DistributionError::Refused { what: "a redirect to", .. }), "{err}");
    assert!(err.to_string().contains("169.254.169.254 is a link-local or metadata address"), "{err}");
    still_pulls(&good).await;

    // Private networks, by address or embedded in IPv6, and the metadata
    // address behind NAT64, 6to4 or Teredo.
    for (realm, kind) in [
        ("http://10.96.0.1/token", "a private address"),
        ("http://192.0.0.192/token", "a private address"),
        ("http://100.64.0.1/token", "a private address"),
        ("http://198.18.0.1/token", "a private address"),
        ("http://[fd00::1]/token", "a private address"),
        ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/token", "a private address"),
        ("http://[64:ff9b::a9fe:a9fe]/token", "a link-local or metadata address"),
        ("http://[2002:a9fe:a9fe::1]/token", "a link-local or metadata address"),
        ("http://[2001:0:a9fe:a9fe::1]/token", "a link-local or metadata address"),
    ] {
        let registry = HostileRegistry::start(LOOPBACK, Hostility::Realm(realm.to_owned())).await.unwrap();
        let err = refused(&registry).await;
        assert!(matches!(err, DistributionError::Refused { what: "the token realm", .. }), "{realm}: {err}");
        assert!(err.to_string().ends_with(&format!("is {kind}, and the registry is not on one")), "{realm}: {err}");
    }
    let private_redirect =
        HostileRegistry::start(LOOPBACK, Hostility::BlobRedirect("http://10.0.0.1/blob".to_owned())).await.unwrap();
    let err = refused(&private_redirect).await;
    assert!(matches!(err, DistributionError::Refused { what: "a redirect to", .. }), "{err}");
    assert!(err.to_string().contains("10.0.0.1 is a private address"), "{err}");
    still_pulls(&good).await;

    // A registry on loopback may keep its token service there (the real
    // registries of these tests do); one elsewhere may not send the client
    // to loopback, by address or by name.
    let Some(primary) = primary_address() else {
        eprintln!("warning: no address besides loopback; the loopback realm refusal was not tried");
        return;
    };
    for realm in ["http://127.0.0.1:9/token", "http://localhost:9/token", "http://[::1]:9/token"] {
        let elsewhere = HostileRegistry::start(primary, Hostility::Realm(realm.to_owned())).await.unwrap();
        let err = refused(&elsewhere).await;
        assert!(matches!(err, DistributionError::Refused { .. }), "{realm}: {err}");
        assert!(err.to_string().contains("a loopback address, and the registry is not on one"), "{realm}: {err}");
    }
    still_pulls(&good).await;
}
