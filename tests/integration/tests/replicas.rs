//! The `wasm-ccm` binary as it runs for real: replicas under leader
//! election, readiness, metrics, graceful shutdown, and `wasm-ccm local`
//! with kubectl.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use serde_json::json;
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::process::{Process, http_get};
use wasm_ccm_tests::replicas::Replicas;
use wasm_ccm_tests::{free_port, on_both_api_servers};

const LEASE: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_millis(500);
const PATIENCE: Duration = Duration::from_secs(30);

/// Starts a replica named `name`, its admin server on `port`, with short
/// leader election periods.
fn replica(setup: &Replicas, name: &str, port: u16) -> Process {
    let mut args = setup.args(port);
    let lease = ["--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s"];
    let retry = ["--leader-elect-retry-period", "500ms", "--shutdown-grace-period", "10s"];
    args.extend(lease.into_iter().chain(retry).map(str::to_owned));
    Process::start(crate::binary(), &args, &[("POD_NAME", name), ("RUST_LOG", "info")])
}

async fn wait<T>(what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    wasm_ccm_tests::eventually(what, PATIENCE, check).await
}

fn admin(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

async fn status(port: u16, path: &str) -> Option<u16> {
    http_get(admin(port), path).await.map(|(status, _)| status)
}

async fn only_the_leader_reconciles_and_a_standby_takes_over(backend: &Backend) {
    let setup = Replicas::start(backend, json!({})).await;
    let (port_a, port_b) = (free_port().unwrap(), free_port().unwrap());
    let mut a = replica(&setup, "replica-a", port_a);
    wait("replica-a to lead", async || setup.holder().await.starts_with("replica-a_").then_some(())).await;
    let became = wait("a LeaderElection event on the Lease", async || {
        let events: Api<Event> = Api::namespaced(setup.api.admin(), "kube-system");
        let listed = events.list(&ListParams::default().fields("reason=LeaderElection")).await.ok()?;
        listed.items.into_iter().find(|event| {
            event.involved_object.kind.as_deref() == Some("Lease")
                && event.involved_object.name.as_deref() == Some("cloud-controller-manager")
                && event.message.as_deref().is_some_and(|note| note.starts_with("replica-a_"))
        })
    })
    .await;
    assert!(became.message.as_deref().is_some_and(|note| note.ends_with(" became leader")), "{became:?}");
    let source = became.source.and_then(|source| source.component);
    assert_eq!(source.as_deref(), Some("cloud-controller-manager"));
    let b = replica(&setup, "replica-b", port_b);
    for port in [port_a, port_b] {
        wait("both replicas to be ready", async || (status(port, "/readyz").await == Some(200)).then_some(())).await;
    }

    setup.create_service("first").await;
    let first_ip = wait("an ingress for first", async || setup.ingress("first").await).await;
    let reporters = wait("EnsuredLoadBalancer", async || {
        let reporters = setup.reporters("EnsuredLoadBalancer", "first").await;
        (!reporters.is_empty()).then_some(reporters)
    })
    .await;
    assert!(
        reporters.iter().all(|reporter| reporter == "replica-a/provider_fake"),
        "only the leader acts: {reporters:?}"
    );

    let (_, metrics_a) = http_get(admin(port_a), "/metrics").await.unwrap();
    let (_, metrics_b) = http_get(admin(port_b), "/metrics").await.unwrap();
    for line in [
        "leader_election_master_status{name=\"cloud-controller-manager\"} 1",
        "running_managed_controllers{name=\"service\",manager=\"cloud-controller-manager\"} 1",
        "service_controller_loadbalancer_sync_total{provider=\"provider_fake\"} 0",
        "provider_call_duration_seconds_count{provider=\"provider_fake\",function=\"load-balancer.ensure\",outcome=\"ok\"} 1",
        "provider_http_requests_total{provider=\"provider_fake\",host=\"127.0.0.1:",
        "workqueue_depth{name=\"service\",provider=\"provider_fake\"} 0",
        "workqueue_adds_total{name=\"service\",provider=\"provider_fake\"}",
    ] {
        assert!(metrics_a.contains(line), "the leader's metrics lack {line}:\n{metrics_a}");
    }
    assert!(
        !metrics_b.contains("running_managed_controllers{name=\"service\",manager=\"cloud-controller-manager\"} 1"),
        "{metrics_b}"
    );
    assert!(
        !metrics_b.contains(
            "provider_call_duration_seconds_count{provider=\"provider_fake\",function=\"load-balancer.ensure\""
        )
    );

    a.signal("KILL");
    a.wait(Duration::from_secs(5)).await.expect("replica-a dies");
    let killed = Instant::now();
    wait("replica-b to take over", async || setup.holder().await.starts_with("replica-b_").then_some(())).await;
    let handover = killed.elapsed();
    assert!(handover <= LEASE + 3 * RETRY, "took over after {handover:?}, lease {LEASE:?}");

    setup.create_service("second").await;
    wait("an ingress for second", async || setup.ingress("second").await).await;
    let reporters = setup.reporters("EnsuredLoadBalancer", "second").await;
    assert!(reporters.iter().all(|reporter| reporter == "replica-b/provider_fake"), "{reporters:?}");
    assert_eq!(setup.ingress("first").await.as_deref(), Some(first_ip.as_str()), "the first load balancer is kept");
    assert_eq!(setup.cloud.objects("load-balancers").len(), 2, "no load balancer made twice");
    assert_eq!(setup.cloud.objects("addresses").len(), 2, "no address claimed twice");
    drop(b);
}

#[tokio::test]
async fn readiness_follows_the_caches_and_a_graceful_stop_finishes_work_and_releases_the_lease() {
    let setup = Replicas::start(&Backend::Harness, json!({"load-balancer.ensure": {"latencyMs": 3000}})).await;
    setup.api.harness().faults().set_latency(Duration::from_millis(700));
    let port = free_port().unwrap();
    let mut replica = replica(&setup, "replica-a", port);
    let mut seen = Vec::new();
    wait("readiness", async || {
        let answer = http_get(admin(port), "/readyz").await;
        if let Some((status, body)) = &answer
            && seen.last() != Some(&(*status, body.clone()))
        {
            seen.push((*status, body.clone()));
        }
        (answer.map(|(status, _)| status) == Some(200)).then_some(())
    })
    .await;
    assert!(
        seen.iter().any(|(status, body)| *status == 503 && body.contains("not ready")),
        "not ready before the caches were synced: {seen:?}"
    );
    assert_eq!(status(port, "/livez").await, Some(200));
    setup.api.harness().faults().set_latency(Duration::ZERO);

    setup.create_service("slow").await;
    wait("the slow ensure to start", async || {
        let service = setup.api.object("services", Some("default"), "slow").await?;
        service["metadata"]["finalizers"].as_array().map(drop)
    })
    .await;
    replica.signal("TERM");
    wait("readiness to turn off while stopping", async || {
        let (status, body) = http_get(admin(port), "/readyz").await?;
        (status == 503 && body.contains("stopping")).then_some(())
    })
    .await;
    let exit = replica.wait(Duration::from_secs(15)).await.expect("it stops within the grace period");
    assert!(exit.success(), "{exit:?}");
    assert!(setup.ingress("slow").await.is_some(), "the sync in flight finished before the process stopped");
    assert_eq!(setup.holder().await, "", "the lease was released");
}

#[tokio::test]
async fn a_second_signal_stops_at_once() {
    let setup = Replicas::start(&Backend::Harness, json!({"load-balancer.ensure": {"latencyMs": 8000}})).await;
    let port = free_port().unwrap();
    let mut replica = replica(&setup, "replica-a", port);
    wait("readiness", async || (status(port, "/readyz").await == Some(200)).then_some(())).await;
    setup.create_service("slow").await;
    wait("the slow ensure to start", async || {
        let service = setup.api.object("services", Some("default"), "slow").await?;
        service["metadata"]["finalizers"].as_array().map(drop)
    })
    .await;
    let started = Instant::now();
    replica.signal("TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    replica.signal("INT");
    let exit = replica.wait(Duration::from_secs(5)).await.expect("it stops at once");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!exit.success(), "{exit:?}");
    assert!(setup.ingress("slow").await.is_none(), "the sync in flight was abandoned");
}

#[tokio::test]
async fn local_runs_a_cluster_kubectl_can_see() {
    let dir = std::env::temp_dir().join(format!("wasm-ccm-local-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let output = dir.join("output");
    let out = std::fs::File::create(&output).unwrap();
    let mut child = std::process::Command::new(crate::binary())
        .args(["local", "--admin-port", "0", "--nodes", "2", "--services", "3", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(out)
        .spawn()
        .unwrap();
    wait("the summary", async || {
        let text = std::fs::read_to_string(&output).ok()?;
        text.contains("keeps running").then_some(())
    })
    .await;
    let text = std::fs::read_to_string(&output).unwrap();
    assert!(text.contains("node local-node-1: initialised as fake://i-0001"), "{text}");
    assert!(text.contains("service default/web: load balancer at 192.0.2."), "{text}");

    let kubectl = std::process::Command::new(wasm_ccm_tests::kubectl())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "nodes,svc"])
        .output()
        .expect("kubectl runs");
    let listing = String::from_utf8_lossy(&kubectl.stdout);
    assert!(kubectl.status.success(), "{}", String::from_utf8_lossy(&kubectl.stderr));
    for expected in ["node/local-node-1", "node/local-node-2", "service/web", "service/api", "service/shop", "192.0.2."]
    {
        assert!(listing.contains(expected), "kubectl shows {expected}:\n{listing}");
    }

    let interrupted = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    let deadline = Instant::now() + Duration::from_secs(15);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "local stops on Ctrl-C");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "{exit:?}");
    assert!(!kubeconfig.exists(), "the kubeconfig of a stopped cluster is removed");
    let _ = std::fs::remove_dir_all(&dir);
}

on_both_api_servers!(only_the_leader_reconciles_and_a_standby_takes_over);
