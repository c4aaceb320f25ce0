//! The real API server killed (SIGKILL) and started again while `wasm-ccm`
//! syncs Services: every Service converges, the process keeps running, and
//! it logs the outage once rather than once per failed request.

use std::time::Duration;

use serde_json::{Value, json};
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::process::Process;
use wasm_ccm_tests::replicas::Replicas;
use wasm_ccm_tests::{eventually, free_port};

const SERVICES: usize = 60;
const PATIENCE: Duration = Duration::from_secs(90);

/// The log records of `level` in a JSON log.
fn records(log: &str, level: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["level"] == level)
        .collect()
}

async fn with_ingress(replicas: &Replicas) -> usize {
    let mut count = 0;
    for index in 0..SERVICES {
        count += usize::from(replicas.ingress(&format!("svc-{index:02}")).await.is_some());
    }
    count
}

#[tokio::test]
#[ignore = "expects kube-apiserver back within seconds of a restart: `make test` runs it alone"]
async fn an_api_server_restart_mid_sync_is_survived_and_logged_once() {
    let Some(backend) = Backend::real(module_path!()) else { return };
    // A second per ensure keeps syncs in flight when the server goes.
    let mut replicas = Replicas::start(&backend, json!({"load-balancer.ensure": {"latencyMs": 1000}})).await;
    for index in 0..SERVICES {
        replicas.create_service(&format!("svc-{index:02}")).await;
    }
    let log = replicas.dir().join("wasm-ccm.log");
    let mut args = replicas.args(free_port().unwrap());
    // The lease outlives the outage: losing it would end the process, as
    // upstream's does.
    let lease = ["--leader-elect-lease-duration", "60s", "--leader-elect-renew-deadline", "45s"];
    args.extend(lease.into_iter().chain(["--log-format", "json"]).map(str::to_owned));
    let mut process = Process::start_logged(crate::binary(), &args, &[], &log);

    eventually("the first ingress", PATIENCE, async || (with_ingress(&replicas).await > 0).then_some(())).await;
    let plane = replicas.api.real();
    // What was logged before the outage (the start's warnings) is not its.
    let before_outage = std::fs::read_to_string(&log).expect("the log").len();
    plane.stop_apiserver();
    tokio::time::sleep(Duration::from_secs(3)).await;
    plane.start_apiserver().await.expect("the API server starts again");

    eventually("every Service's ingress", PATIENCE, async || (with_ingress(&replicas).await == SERVICES).then_some(()))
        .await;
    assert!(process.is_running(), "wasm-ccm survived the outage");
    let text = std::fs::read_to_string(&log).expect("the log")[before_outage..].to_owned();
    let warnings: Vec<Value> = records(&text, "WARN").into_iter().chain(records(&text, "ERROR")).collect();
    let message = |record: &Value| record["message"].as_str().unwrap_or_default().to_owned();
    let outage = warnings.iter().filter(|record| message(record).contains("cannot reach the API server")).count();
    assert_eq!(outage, 1, "the outage is logged once: {warnings:#?}");
    // A restarted API server can refuse requests for a moment while its
    // authorizer loads the RBAC bindings: one warning per watch at most.
    let others: Vec<&Value> =
        warnings.iter().filter(|record| !message(record).contains("cannot reach the API server")).collect();
    for record in &others {
        assert!(message(record).starts_with("the watch failed"), "nothing else is logged: {warnings:#?}");
    }
    let mut kinds: Vec<&str> = others.iter().filter_map(|record| record["kind"].as_str()).collect();
    let all = kinds.len();
    kinds.dedup();
    assert_eq!(kinds.len(), all, "at most one warning per watch: {warnings:#?}");
    let recovered = records(&text, "INFO")
        .into_iter()
        .filter(|record| record["message"].as_str().is_some_and(|message| message.contains("answers again")))
        .count();
    assert_eq!(recovered, 1, "one line when it answers again");
}
