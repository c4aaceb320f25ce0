//! A provider's outbound HTTP request rate, against a real server counting
//! what arrives: requests over the rate wait, within their call's deadline,
//! in one bucket shared by the provider's calls and kept across a swap.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use prometheus_client::registry::Registry;
use wasm_ccm_cloud::{Cloud, NodeSet, ProviderError};
use wasm_ccm_host::{Limits, LoadedProvider, ProviderHandle, Rate};
use wasm_ccm_tests::echo::EchoServer;
use wasm_ccm_tests::{ServiceFixture, allow, engine, guest, load, spec};

/// Slack for a loaded 2-core machine on top of a deadline and its tick.
const SCHEDULING_SLACK: Duration = Duration::from_millis(490);
const TICK: Duration = Duration::from_millis(10);

fn rate(per_second: u32, burst: u32) -> Rate {
    Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() }
}

/// The hostile provider under `name`, allowed to reach `server`.
async fn hostile(name: &str, limits: Limits, server: &EchoServer) -> LoadedProvider {
    let mut spec = spec(name, guest("guest-hostile"), b"");
    spec.limits = limits;
    spec.allow_list = allow(&[&server.url()]);
    load(spec).await
}

/// A Service asking the hostile provider for `count` requests to `server`.
fn requests(count: usize, server: &EchoServer) -> Service {
    let arg = format!("{count} {}/hello", server.url());
    Service::test("target")
        .with_uid("uid-target")
        .with_annotations(&[("hostile/attack", "http-many"), ("hostile/arg", &arg)])
}

/// Makes `count` requests to `server` in one call; what the guest saw.
async fn send(handle: &ProviderHandle, count: usize, server: &EchoServer) -> Result<String, ProviderError> {
    let status = handle.ensure_load_balancer(&requests(count, server), &NodeSet::of([])).await?;
    Ok(status.ingress.unwrap_or_default().remove(0).hostname.unwrap_or_default())
}

/// Asserts that no more requests reached `server` by each arrival than a
/// full bucket of `rate` at `start` lets through, plus one for rounding.
fn assert_within(rate: Rate, start: Instant, server: &EchoServer) {
    for (index, arrived) in server.arrivals().into_iter().enumerate() {
        let elapsed = arrived.saturating_duration_since(start).as_secs_f64();
        let allowed = f64::from(rate.burst.get()) + f64::from(rate.per_second.get()) * elapsed + 1.0;
        assert!((index + 1) as f64 <= allowed, "request {} arrived {elapsed:.3} s in, over {rate:?}", index + 1);
    }
}

/// The value of the metric `name` of `provider`.
fn metric(name: &str, provider: &str) -> Option<f64> {
    let mut registry = Registry::default();
    engine().metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let prefix = format!("{name}{{provider=\"{provider}\"}} ");
    text.lines().find_map(|line| line.strip_prefix(&prefix)).map(|value| value.parse().unwrap())
}

#[tokio::test]
async fn requests_over_the_rate_wait_and_the_calls_succeed() {
    let server = EchoServer::start().await.unwrap();
    let limit = rate(10, 5);
    let limits = Limits { http_requests: Some(limit), ..Limits::default() };
    let handle = ProviderHandle::new(hostile("http-rate", limits, &server).await);
    let start = Instant::now();
    // Two calls at once share the provider's bucket.
    let (first, second) = tokio::join!(send(&handle, 15, &server), send(&handle, 15, &server));
    let elapsed = start.elapsed();
    assert_eq!(first.unwrap(), "15 of 15 ok");
    assert_eq!(second.unwrap(), "15 of 15 ok");
    assert_eq!(server.arrivals().len(), 30);
    assert_within(limit, start, &server);
    // Five at once, then twenty-five at ten a second.
    assert!(elapsed >= Duration::from_millis(2400), "{elapsed:?}");
    let throttled = metric("provider_http_throttled_total", "http-rate").unwrap();
    assert!(throttled >= 20.0, "{throttled} requests waited");
    let waited = metric("provider_http_throttled_seconds_total", "http-rate").unwrap();
    assert!(waited > 2.0, "{waited} s of waits");
}

#[tokio::test]
async fn a_wait_past_the_deadline_ends_the_call_at_its_deadline() {
    let server = EchoServer::start().await.unwrap();
    let deadline = Duration::from_millis(500);
    let limits = Limits { deadline, http_requests: Some(rate(1, 1)), ..Limits::default() };
    let handle = ProviderHandle::new(hostile("http-rate-deadline", limits, &server).await);
    let start = Instant::now();
    // The second request could go only a second after the first.
    let err = send(&handle, 3, &server).await.unwrap_err();
    let elapsed = start.elapsed();
    assert_eq!(err, ProviderError::DeadlineExceeded { deadline });
    assert!(elapsed >= deadline && elapsed < deadline + TICK + SCHEDULING_SLACK, "{elapsed:?}");
    assert_eq!(server.arrivals().len(), 1);
    assert_eq!(handle.usage().memory_bytes, 0, "the ended call's memory is given back");
}

#[tokio::test]
async fn a_swap_keeps_the_bucket_of_the_same_rate_only() {
    let server = EchoServer::start().await.unwrap();
    let kept = rate(4, 3);
    let handle = ProviderHandle::new(
        hostile("http-rate-swap", Limits { http_requests: Some(kept), ..Limits::default() }, &server).await,
    );
    let same = hostile("http-rate-swap", Limits { http_requests: Some(kept), ..Limits::default() }, &server).await;
    let other =
        hostile("http-rate-swap", Limits { http_requests: Some(rate(4, 6)), ..Limits::default() }, &server).await;

    let start = Instant::now();
    assert_eq!(send(&handle, 3, &server).await.unwrap(), "3 of 3 ok");
    handle.swap(same);
    let swapped = Instant::now();
    assert_eq!(send(&handle, 3, &server).await.unwrap(), "3 of 3 ok");
    // The emptied bucket came along: three more at four a second.
    assert!(swapped.elapsed() >= Duration::from_millis(500), "{:?}", swapped.elapsed());
    assert_within(kept, start, &server);

    handle.swap(other);
    let swapped = Instant::now();
    assert_eq!(send(&handle, 6, &server).await.unwrap(), "6 of 6 ok");
    assert!(swapped.elapsed() < Duration::from_millis(500), "a full bucket of six: {:?}", swapped.elapsed());
}
