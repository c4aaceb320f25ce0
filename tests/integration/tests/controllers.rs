//! The controllers end to end: the API server harness, the fake provider
//! component in real wasmtime, and what upstream's controllers would do.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Node, Service};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use wasm_ccm_cloud::Cloud;
use wasm_ccm_controllers::{
    ControllerManager, ControllerName, Metrics, SHUTDOWN_TAINT, Settings, UNINITIALIZED_TAINT, enabled_controllers,
    names_route, ownership,
};
use wasm_ccm_tests::ServiceFixture;
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::cluster::{NewNode, TestCluster, cloud_taints, fast_settings};
use wasm_ccm_tests::on_both_api_servers;

fn instances() -> Value {
    json!({"instances": [
        {
            "name": "node-a", "id": "i-a", "type": "fake.large", "zone": "zone-1", "region": "region-1",
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "ExternalIP", "address": "203.0.113.1"}],
            "labels": {"fake.example/rack": "r1", "kubernetes.io/hostname": "not-for-providers"}
        },
        {"name": "node-b", "id": "i-b", "zone": "zone-2", "region": "region-1", "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]},
        {"name": "node-c", "id": "i-c", "zone": "zone-1", "region": "region-1", "addresses": [{"type": "InternalIP", "address": "10.0.0.3"}]}
    ]})
}

fn has_finalizer(service: &Service) -> bool {
    service.metadata.finalizers.iter().flatten().any(|f| f == "service.kubernetes.io/load-balancer-cleanup")
}

fn lb_nodes(cluster: &TestCluster, uid: &str) -> Option<Vec<String>> {
    let record = cluster.load_balancer(uid)?;
    serde_json::from_value(record.value["nodes"].clone()).ok()
}

async fn wait_lb_nodes(cluster: &TestCluster, uid: &str, expected: &[&str]) {
    cluster
        .wait(&format!("load balancer nodes {expected:?}"), || async {
            (lb_nodes(cluster, uid)? == expected).then_some(())
        })
        .await;
}

fn uid(service: &Service) -> String {
    service.metadata.uid.clone().expect("a uid")
}

async fn nodes_are_initialized_from_the_cloud(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    cluster.create_node(NewNode { uninitialized: true, ..NewNode::ready("node-a") }).await;
    let nodes = cluster.nodes();
    let node = cluster
        .wait("node-a to be initialized", || async {
            let node = nodes.get("node-a").await.ok()?;
            (!cloud_taints(&node).contains(&UNINITIALIZED_TAINT.to_owned())).then_some(node)
        })
        .await;
    assert_eq!(node.spec.as_ref().unwrap().provider_id.as_deref(), Some("fake://i-a"));
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let expected: BTreeMap<&str, &str> = [
        ("node.kubernetes.io/instance-type", "fake.large"),
        ("beta.kubernetes.io/instance-type", "fake.large"),
        ("topology.kubernetes.io/zone", "zone-1"),
        ("failure-domain.beta.kubernetes.io/zone", "zone-1"),
        ("topology.kubernetes.io/region", "region-1"),
        ("failure-domain.beta.kubernetes.io/region", "region-1"),
        ("fake.example/rack", "r1"),
    ]
    .into();
    for (key, value) in expected {
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
    }
    assert!(!labels.contains_key("kubernetes.io/hostname"), "no labels in reserved domains from providers");
    let addresses: Vec<(String, String)> =
        node.status.unwrap().addresses.unwrap().into_iter().map(|address| (address.type_, address.address)).collect();
    let expected = [("InternalIP", "10.0.0.1"), ("ExternalIP", "203.0.113.1"), ("Hostname", "node-a")];
    assert_eq!(addresses, expected.map(|(t, a)| (t.to_owned(), a.to_owned())), "kubelet's host name is kept");
    cluster.wait("a Synced event", || async { (cluster.event_count("Synced").await >= 1).then_some(()) }).await;
}

/// The address refresh: an instance given a new address puts it on its
/// node within a period, asked in batches (as the fake answers unless told
/// not to) or one node at a time.
async fn addresses_follow_the_cloud(backend: &Backend) {
    refreshed_addresses(backend, json!({})).await;
}

async fn addresses_follow_the_cloud_one_node_at_a_time(backend: &Backend) {
    refreshed_addresses(backend, json!({"maxBatch": 0})).await;
}

async fn refreshed_addresses(backend: &Backend, extra: Value) {
    let cluster = TestCluster::start(backend, merged(instances(), extra.clone()), fast_settings()).await;
    for name in ["node-b", "node-c"] {
        cluster.create_node(NewNode { uninitialized: true, ..NewNode::ready(name) }).await;
    }
    let nodes = cluster.nodes();
    let internal_ip = |node: Node| {
        let addresses = node.status?.addresses?;
        addresses.into_iter().find(|address| address.type_ == "InternalIP").map(|address| address.address)
    };
    for (name, ip) in [("node-b", "10.0.0.2"), ("node-c", "10.0.0.3")] {
        cluster
            .wait("the node initialised", || async { (internal_ip(nodes.get(name).await.ok()?)? == ip).then_some(()) })
            .await;
    }
    let mut moved = instances();
    moved["instances"][2]["addresses"][0]["address"] = json!("10.0.0.33");
    cluster.reconfigure(merged(moved, extra)).await;
    cluster
        .wait("node-c's new address", || async {
            (internal_ip(nodes.get("node-c").await.ok()?)? == "10.0.0.33").then_some(())
        })
        .await;
    assert_eq!(internal_ip(nodes.get("node-b").await.unwrap()).as_deref(), Some("10.0.0.2"));
    assert!(cluster.counter("cloud_node_status_passes", &[]) >= 1);
}

/// Upstream removes the taint, then sets the addresses; here no version of
/// the node is without both.
async fn nodes_lose_their_taint_only_with_their_addresses(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    let nodes = cluster.nodes();
    let mut versions = nodes.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    cluster.create_node(NewNode { uninitialized: true, ..NewNode::ready("node-a") }).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut seen = 0;
    loop {
        let event = tokio::time::timeout_at(deadline, versions.next()).await.expect("node-a initialized in time");
        let (WatchEvent::Added(node) | WatchEvent::Modified(node)) = event.expect("a watch event").unwrap() else {
            continue;
        };
        seen += 1;
        let addresses = node.status.as_ref().and_then(|status| status.addresses.clone()).unwrap_or_default();
        if !cloud_taints(&node).contains(&UNINITIALIZED_TAINT.to_owned()) {
            assert!(addresses.iter().any(|address| address.address == "10.0.0.1"), "{addresses:?}");
            break;
        }
    }
    assert!(seen >= 2, "the watch saw the node before and after");
}

async fn nodes_the_cloud_cannot_vouch_for_keep_their_taint(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    let mismatched = NewNode { uninitialized: true, provided_ip: Some("10.0.0.99".into()), ..NewNode::ready("node-b") };
    cluster.create_node(mismatched).await;
    cluster.create_node(NewNode { uninitialized: true, ..NewNode::ready("node-unknown") }).await;
    let matching = NewNode { uninitialized: true, provided_ip: Some("10.0.0.3".into()), ..NewNode::ready("node-c") };
    cluster.create_node(matching).await;
    let nodes = cluster.nodes();
    cluster
        .wait("node-c to be initialized", || async {
            let node = nodes.get("node-c").await.ok()?;
            node.spec.as_ref()?.provider_id.clone()
        })
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for name in ["node-b", "node-unknown"] {
        let node = nodes.get(name).await.unwrap();
        assert!(cloud_taints(&node).contains(&UNINITIALIZED_TAINT.to_owned()), "{name} keeps its taint");
        assert_eq!(node.spec.unwrap().provider_id, None, "{name}");
    }
}

async fn load_balancer_lifecycle(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    cluster.create_node(NewNode::ready("node-b")).await;
    let created = cluster.create_service("web", &[80]).await;
    let uid = uid(&created);
    let ip = cluster.ingress("web").await;
    assert!(ip.starts_with("198.51.100."), "{ip}");
    let services = cluster.services();
    let ensured = services.get("web").await.unwrap();
    assert!(has_finalizer(&ensured), "the finalizer comes with the load balancer");
    let owner = ownership::recorded(&ensured).map(str::to_owned);
    assert!(owner.is_some(), "the provider is recorded in the status with the finalizer: {:?}", ensured.status);
    // The Service's owner cannot write the record: updates of the Service
    // itself keep its status.
    let forged = json!({"status": {"conditions": [{
        "type": ownership::OWNER_CONDITION, "status": "True", "reason": "Ensured", "message": "someone-else",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }]}});
    services.patch("web", &PatchParams::default(), &Patch::Merge(forged)).await.unwrap();
    assert_eq!(ownership::recorded(&services.get("web").await.unwrap()).map(str::to_owned), owner);
    assert_eq!(lb_nodes(&cluster, &uid).unwrap(), ["node-a", "node-b"]);
    assert!(cluster.event_count("EnsuringLoadBalancer").await >= 1);
    cluster
        .wait("EnsuredLoadBalancer", || async { (cluster.event_count("EnsuredLoadBalancer").await >= 1).then_some(()) })
        .await;

    let ports = json!({"spec": {"ports": [{"name": "p80", "port": 80}, {"name": "p443", "port": 443}]}});
    services.patch("web", &PatchParams::default(), &Patch::Merge(ports)).await.unwrap();
    cluster
        .wait("the load balancer to get port 443", || async {
            let record = cluster.load_balancer(&uid)?;
            let ports: Vec<u64> =
                record.value["ports"].as_array()?.iter().filter_map(|port| port["port"].as_u64()).collect();
            (ports == [80, 443]).then_some(())
        })
        .await;
    assert_eq!(cluster.ingress("web").await, ip, "the address stays");

    let cluster_ip = json!({"spec": {"type": "ClusterIP"}});
    services.patch("web", &PatchParams::default(), &Patch::Merge(cluster_ip)).await.unwrap();
    cluster
        .wait("cleanup after the type change", || async {
            let service = services.get("web").await.ok()?;
            let ingress =
                service.status.as_ref()?.load_balancer.as_ref().and_then(|lb| lb.ingress.clone()).unwrap_or_default();
            (cluster.load_balancer(&uid).is_none() && !has_finalizer(&service) && ingress.is_empty()).then_some(())
        })
        .await;
    assert_eq!(ownership::recorded(&services.get("web").await.unwrap()), None, "the record goes with the finalizer");
    assert!(cluster.event_count("DeletingLoadBalancer").await >= 1);
    cluster
        .wait("DeletedLoadBalancer", || async { (cluster.event_count("DeletedLoadBalancer").await >= 1).then_some(()) })
        .await;

    let back = json!({"spec": {"type": "LoadBalancer"}});
    services.patch("web", &PatchParams::default(), &Patch::Merge(back)).await.unwrap();
    cluster.ingress("web").await;
    services.delete("web", &DeleteParams::default()).await.unwrap();
    cluster
        .wait("the Service and its load balancer to be gone", || async {
            let gone = services.get_opt("web").await.ok()?.is_none();
            (gone && cluster.load_balancer(&uid).is_none()).then_some(())
        })
        .await;
    assert!(cluster.cloud.objects("addresses").is_empty(), "the address went back to the pool");
}

/// A Service upstream's controller left with its finalizer alone, no
/// ownership record, is let go once it wants no load balancer: the release
/// takes away a record that is not there without writing one, whether the
/// Service never had one or had one released before. Every version the API
/// server keeps of it is read untyped, so that one no client can read shows.
async fn a_service_with_upstream_s_finalizer_alone_is_let_go(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    let services = cluster.services();
    let untyped: Api<DynamicObject> =
        Api::namespaced_with(services.clone().into_client(), "default", &ApiResource::erase::<Service>(&()));
    let mut versions = untyped.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watching = tokio::spawn({
        let seen = seen.clone();
        async move {
            while let Some(event) = versions.next().await {
                if let Ok(WatchEvent::Added(service) | WatchEvent::Modified(service)) = event {
                    let conditions = service.data["status"]["conditions"].as_array().cloned().unwrap_or_default();
                    seen.lock().unwrap().extend(conditions);
                }
            }
        }
    });

    let mut service = Service::test("web").with_finalizer();
    service.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
    services.create(&PostParams::default(), &service).await.unwrap();
    let let_go = || {
        cluster.wait("the finalizer to go", || async {
            let service = services.get("web").await.ok()?;
            (!has_finalizer(&service)).then_some(())
        })
    };
    let_go().await;
    let switch = |type_: &str| {
        let (services, patch) = (&services, Patch::Merge(json!({"spec": {"type": type_}})));
        async move { services.patch("web", &PatchParams::default(), &patch).await.unwrap() }
    };
    switch("LoadBalancer").await;
    cluster.ingress("web").await;
    switch("ClusterIP").await;
    let_go().await;
    let finalizer = json!({"metadata": {"finalizers": ["service.kubernetes.io/load-balancer-cleanup"]}});
    services.patch("web", &PatchParams::default(), &Patch::Strategic(finalizer)).await.unwrap();
    let_go().await;

    // A release that wrote an unreadable record is watched long before the
    // waits above end: they read the Service typed, through the retry that
    // takes the record away.
    watching.abort();
    let seen = seen.lock().unwrap().clone();
    let records: Vec<&Value> =
        seen.iter().filter(|condition| condition["type"] == ownership::OWNER_CONDITION).collect();
    assert!(!records.is_empty(), "the load balancer's record was seen");
    assert!(
        records.iter().all(|record| record["reason"] == "Ensured" && record["lastTransitionTime"].is_string()),
        "{records:?}"
    );
}

async fn load_balancers_follow_the_nodes(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    cluster.create_node(NewNode::ready("node-b")).await;
    let uid = uid(&cluster.create_service("web", &[80]).await);
    cluster.ingress("web").await;
    wait_lb_nodes(&cluster, &uid, &["node-a", "node-b"]).await;

    cluster.create_node(NewNode::ready("node-c")).await;
    wait_lb_nodes(&cluster, &uid, &["node-a", "node-b", "node-c"]).await;
    cluster
        .wait("UpdatedLoadBalancer", || async { (cluster.event_count("UpdatedLoadBalancer").await >= 1).then_some(()) })
        .await;

    let nodes = cluster.nodes();
    let exclude = json!({"metadata": {"labels": {"node.kubernetes.io/exclude-from-external-load-balancers": ""}}});
    nodes.patch("node-b", &PatchParams::default(), &Patch::Merge(exclude)).await.unwrap();
    wait_lb_nodes(&cluster, &uid, &["node-a", "node-c"]).await;

    nodes.delete("node-a", &DeleteParams::default()).await.unwrap();
    wait_lb_nodes(&cluster, &uid, &["node-c"]).await;

    // Once what the deletion set off has settled, a node being drained is
    // not cut from load balancers at once, as upstream 1.33: kube-proxy's
    // health checks take it out of traffic.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let autoscaled = json!({"spec": {"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}});
    nodes.patch("node-c", &PatchParams::default(), &Patch::Merge(autoscaled)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(lb_nodes(&cluster, &uid).unwrap(), ["node-c"], "a drained node stays until the node set changes");

    // Readiness does not matter, as upstream since 1.30; the next change of
    // the node set leaves the drained node out.
    cluster.create_node(NewNode { ready: false, ..NewNode::ready("node-a") }).await;
    wait_lb_nodes(&cluster, &uid, &["node-a"]).await;
}

async fn services_with_a_load_balancer_class_are_left_alone(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    let services = cluster.services();
    let classed: Service = serde_json::from_value(json!({
        "metadata": {"name": "other"},
        "spec": {"type": "LoadBalancer", "loadBalancerClass": "example.com/other", "ports": [{"port": 80}]},
    }))
    .unwrap();
    services.create(&Default::default(), &classed).await.unwrap();
    cluster.create_service("ours", &[80]).await;
    cluster.ingress("ours").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let other = services.get("other").await.unwrap();
    assert!(!has_finalizer(&other));
    assert!(
        other.status.and_then(|status| status.load_balancer).and_then(|lb| lb.ingress).unwrap_or_default().is_empty()
    );
    assert_eq!(cluster.cloud.objects("load-balancers").len(), 1, "only ours");
}

async fn provider_errors_are_reported_and_backed_off(backend: &Backend) {
    let mut config = instances();
    config["faults"] = json!({"load-balancer.ensure": {"error": {"kind": "other", "message": "quota exhausted"}}});
    let cluster = TestCluster::start(backend, config, fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    cluster.create_service("web", &[80]).await;
    let failures = cluster
        .wait("SyncLoadBalancerFailed", || async {
            let events = cluster.events("SyncLoadBalancerFailed").await;
            (!events.is_empty()).then_some(events)
        })
        .await;
    let note = failures[0].message.clone().unwrap_or_default();
    assert!(note.contains("failed to ensure load balancer: quota exhausted"), "{note}");
    assert_eq!(failures[0].type_.as_deref(), Some("Warning"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(cluster.event_count("SyncLoadBalancerFailed").await, 1, "the next attempt waits 5 s");
    // As upstream's recorder writes them: core events from the controller's
    // component, a repeat counted on the first.
    let events: Api<Event> = Api::all(cluster.admin.clone());
    let by_source = events.list(&ListParams::default().fields("source=service-controller")).await.unwrap();
    let reasons: Vec<_> = by_source.items.iter().filter_map(|event| event.reason.as_deref()).collect();
    assert!(reasons.contains(&"SyncLoadBalancerFailed"), "{reasons:?}");
    cluster
        .wait("the repeat counted on the first event", || async {
            let events = cluster.events("SyncLoadBalancerFailed").await;
            (events.len() == 1 && events[0].count == Some(2)).then_some(())
        })
        .await;

    // Another error is another event: its message is not lost in the first one's count.
    let mut config = instances();
    config["faults"] = json!({"load-balancer.ensure": {"error": {"kind": "other", "message": "subnet full"}}});
    cluster.reconfigure(config).await;
    let notes = cluster
        .wait("a second SyncLoadBalancerFailed", || async {
            let notes: Vec<String> =
                cluster.events("SyncLoadBalancerFailed").await.into_iter().filter_map(|event| event.message).collect();
            (notes.len() == 2).then_some(notes)
        })
        .await;
    assert!(notes.iter().any(|note| note.contains("quota exhausted")), "{notes:?}");
    assert!(notes.iter().any(|note| note.contains("subnet full")), "{notes:?}");
    cluster.reconfigure(instances()).await;
    // The third failure backed the Service off 20 s: the next attempt, which
    // succeeds, comes then.
    tokio::time::sleep(Duration::from_secs(15)).await;
    cluster.ingress("web").await;
}

async fn retry_errors_come_back_after_their_delay(backend: &Backend) {
    let mut config = instances();
    config["faults"] = json!({"load-balancer.ensure": {"error": {"kind": "retry", "delayMs": 300, "message": "busy"}}});
    let cluster = TestCluster::start(backend, config, fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    cluster.create_service("web", &[80]).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let attempts = cluster.event_count("SyncLoadBalancerFailed").await;
    assert!(attempts >= 4, "{attempts} attempts in 2.5 s: the 300 ms delay was honoured, not the 5 s backoff");
    cluster.reconfigure(instances()).await;
    cluster.ingress("web").await;
}

async fn drifted_load_balancers_are_repaired(backend: &Backend) {
    let settings = Settings { load_balancer_resync_period: Duration::from_secs(1), ..fast_settings() };
    let cluster = TestCluster::start(backend, instances(), settings).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    let uid = uid(&cluster.create_service("web", &[80]).await);
    cluster.ingress("web").await;
    let record = cluster.load_balancer(&uid).unwrap();
    assert!(cluster.cloud.remove("load-balancers", &record.key).is_some());
    cluster.wait("the load balancer to come back", || async { cluster.load_balancer(&uid).map(drop) }).await;
}

/// The fake answers `ipMode: VIP`, which API servers before 1.29 do not
/// keep, where the status they hold differs from the answer: a resync
/// finds nothing to write or report either way.
async fn resyncs_of_a_load_balancer_as_it_should_be_write_and_report_nothing(backend: &Backend) {
    let settings = Settings { load_balancer_resync_period: Duration::from_secs(1), ..fast_settings() };
    let cluster = TestCluster::start(backend, instances(), settings).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    cluster.create_service("web", &[80]).await;
    cluster.ingress("web").await;
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(cluster.event_count("EnsuringLoadBalancer").await, 1, "three resyncs or more, all quiet");
    assert_eq!(cluster.event_count("EnsuredLoadBalancer").await, 1);
}

/// The fake cloud's machines for the node lifecycle: `node-a` running,
/// `node-b` stopped, `node-c` terminated; `extra` merged in.
fn lifecycle_config(extra: Value) -> Value {
    let config = json!({"instances": [
        {"name": "node-a", "id": "i-a"},
        {"name": "node-b", "id": "i-b", "state": "stopped"},
        {"name": "node-c", "id": "i-c", "state": "terminated"}
    ]});
    merged(config, extra)
}

/// The fake's `config` with the fields of `extra` set.
fn merged(mut config: Value, extra: Value) -> Value {
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    config
}

/// As upstream: the fake answers the lifecycle in batches unless told not to.
async fn gone_instances_are_deleted_and_stopped_ones_tainted(backend: &Backend) {
    lifecycle(backend, json!({})).await;
}

async fn gone_instances_are_deleted_and_stopped_ones_tainted_one_node_at_a_time(backend: &Backend) {
    lifecycle(backend, json!({"maxBatch": 0})).await;
}

/// A throttled cloud: the whole pass waits, and no node is deleted on a
/// throttled answer; the answer after the wait deletes what is gone.
async fn a_throttled_lifecycle_changes_no_node_until_the_cloud_answers(backend: &Backend) {
    let throttled = json!({"instances-batch.states": {"error": {"kind": "retry", "delayMs": 2000, "message": "RequestLimitExceeded"}}});
    let cluster = TestCluster::start(backend, lifecycle_config(json!({"faults": throttled})), fast_settings()).await;
    cluster.create_node(NewNode { ready: false, ..NewNode::ready("node-c") }).await;
    let nodes = cluster.nodes();
    // One node, so one error a refused pass.
    let calls = || cluster.counter("reconcile_errors", &[("controller", "cloud-node-lifecycle"), ("kind", "retry")]);
    cluster.wait("a throttled question", || async { (calls() >= 1).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(calls(), 1, "five periods, one refusal: the pass waits the delay the cloud asked for");
    assert!(nodes.get_opt("node-c").await.unwrap().is_some(), "not deleted on a throttled answer");
    assert_eq!(cluster.event_count("DeletingNode").await, 0);

    // Passes go on refused while the answering provider loads (seconds for
    // a Go one); one may be in flight as it takes over.
    cluster.reconfigure(lifecycle_config(json!({}))).await;
    let refused = calls();
    cluster
        .wait("node-c to be deleted once the cloud answers", || async {
            nodes.get_opt("node-c").await.ok()?.is_none().then_some(())
        })
        .await;
    assert!(calls() <= refused + 1, "asked again after the delay, and answered: {} refusals", calls());
}

/// The lifecycle's scenario, with the provider stating the batch size
/// `extra` sets (`maxBatch`, 500 when unset).
async fn lifecycle(backend: &Backend, extra: Value) {
    let max_batch = extra.get("maxBatch").and_then(Value::as_u64).unwrap_or(500);
    let cluster = TestCluster::start(backend, lifecycle_config(extra), fast_settings()).await;
    assert_eq!(u64::from(cluster.provider.info().max_batch), max_batch, "the batch size the provider states");
    for name in ["node-a", "node-b", "node-c"] {
        cluster.create_node(NewNode { ready: false, ..NewNode::ready(name) }).await;
    }
    let nodes = cluster.nodes();
    cluster
        .wait("node-c to be deleted", || async { nodes.get_opt("node-c").await.ok()?.is_none().then_some(()) })
        .await;
    cluster
        .wait("a DeletingNode event", || async { (cluster.event_count("DeletingNode").await >= 1).then_some(()) })
        .await;
    cluster
        .wait("node-b to be tainted", || async {
            cloud_taints(&nodes.get("node-b").await.ok()?).contains(&SHUTDOWN_TAINT.to_owned()).then_some(())
        })
        .await;
    let node_a = nodes.get("node-a").await.unwrap();
    assert_eq!(cloud_taints(&node_a), Vec::<String>::new(), "a running instance's node is left alone");

    cluster.set_ready("node-b", true).await;
    cluster
        .wait("node-b's taint to go", || async {
            (!cloud_taints(&nodes.get("node-b").await.ok()?).contains(&SHUTDOWN_TAINT.to_owned())).then_some(())
        })
        .await;
    assert!(nodes.get_opt("node-a").await.unwrap().is_some(), "never deleted");
}

fn network_condition(node: &Node) -> Option<(String, String)> {
    let condition = node.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "NetworkUnavailable")?;
    Some((condition.status.clone(), condition.reason.clone()?))
}

async fn routes_follow_the_nodes_pod_cidrs(backend: &Backend) {
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    let node_a =
        cluster.create_node(NewNode { pod_cidr: Some("10.244.1.0/24".into()), ..NewNode::ready("node-a") }).await;
    cluster.create_node(NewNode { pod_cidr: Some("10.244.2.0/24".into()), ..NewNode::ready("node-b") }).await;
    cluster.cloud.insert(
        "routes",
        "kubernetes-stale",
        json!({"cluster": "kubernetes", "targetNode": "node-gone", "destinationCidr": "10.244.9.0/24"}),
    );
    cluster.cloud.insert(
        "routes",
        "kubernetes-outside",
        json!({"cluster": "kubernetes", "targetNode": "node-gone", "destinationCidr": "192.168.0.0/24"}),
    );
    let routes = || {
        let mut routes: Vec<(String, String)> = cluster
            .cloud
            .objects("routes")
            .into_iter()
            .map(|route| {
                (
                    route.value["targetNode"].as_str().unwrap().to_owned(),
                    route.value["destinationCidr"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        routes.sort();
        routes
    };
    let expected = [("node-a", "10.244.1.0/24"), ("node-b", "10.244.2.0/24"), ("node-gone", "192.168.0.0/24")]
        .map(|(node, cidr)| (node.to_owned(), cidr.to_owned()));
    cluster.wait("routes for both nodes, none stale", || async { (routes() == expected).then_some(()) }).await;
    let uid_a = node_a.metadata.uid.unwrap();
    assert!(
        cluster.cloud.objects("routes").iter().any(|route| route.key == format!("kubernetes-{uid_a}")),
        "the name hint is the node's UID"
    );
    let nodes = cluster.nodes();
    for name in ["node-a", "node-b"] {
        cluster
            .wait("NetworkUnavailable False/RouteCreated", || async {
                (network_condition(&nodes.get(name).await.ok()?)? == ("False".to_owned(), "RouteCreated".to_owned()))
                    .then_some(())
            })
            .await;
    }
    nodes.delete("node-b", &DeleteParams::default()).await.unwrap();
    cluster
        .wait("node-b's route to be deleted", || async {
            (!routes().iter().any(|(node, _)| node == "node-b")).then_some(())
        })
        .await;
}

#[tokio::test]
async fn dropped_watches_and_expired_versions_miss_nothing() {
    let backend = &Backend::Harness;
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    cluster.create_service("first", &[80]).await;
    cluster.ingress("first").await;

    cluster.api.harness().faults().drop_watches();
    cluster.create_service("second", &[80]).await;
    cluster.ingress("second").await;

    cluster.api.harness().faults().expire_resource_versions();
    cluster.create_service("third", &[80]).await;
    cluster.create_node(NewNode { uninitialized: true, ..NewNode::ready("node-b") }).await;
    cluster.ingress("third").await;
    let nodes = cluster.nodes();
    cluster
        .wait("node-b to be initialized after the watch expired", || async {
            nodes.get("node-b").await.ok()?.spec?.provider_id
        })
        .await;

    cluster.create_service("fourth", &[80]).await;
    cluster.api.harness().faults().fail_next(5, 500);
    cluster.ingress("fourth").await;
}

#[tokio::test]
async fn a_restart_in_the_middle_of_a_sync_makes_no_duplicate() {
    let backend = &Backend::Harness;
    let mut cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    cluster.create_node(NewNode::ready("node-a")).await;
    cluster.api.harness().faults().set_latency(Duration::from_millis(400));
    let uid = uid(&cluster.create_service("web", &[80]).await);
    cluster.wait("the load balancer in the cloud", || async { cluster.load_balancer(&uid).map(drop) }).await;
    cluster.kill_controllers();
    let service = cluster.api.harness().object("services", Some("default"), "web").unwrap();
    assert_eq!(service["status"]["loadBalancer"], json!({}), "killed between the cloud call and the status update");
    cluster.api.harness().faults().set_latency(Duration::ZERO);
    cluster.start_controllers().await;
    let ip = cluster.ingress("web").await;
    let records = cluster.cloud.objects("load-balancers");
    assert_eq!(records.len(), 1, "one load balancer: {records:?}");
    assert_eq!(records[0].value["address"], ip);
    assert_eq!(cluster.cloud.objects("addresses").len(), 1, "one address claimed");
}

/// Upstream fails to start without `--cluster-cidr` when routes are on;
/// here the route controller is left out, unless `--controllers` names it.
#[tokio::test]
async fn the_route_controller_needs_a_cluster_cidr_only_when_named() {
    let backend = &Backend::Harness;
    let cluster = TestCluster::start(backend, instances(), fast_settings()).await;
    let plan = |controllers: &[&str]| {
        let list: Vec<String> = controllers.iter().map(|name| (*name).to_owned()).collect();
        let settings = Settings {
            controllers: enabled_controllers(&list).unwrap(),
            route_explicitly_enabled: names_route(&list),
            cluster_cidrs: Vec::new(),
            ..fast_settings()
        };
        ControllerManager::new(cluster.client.clone(), cluster.provider.clone(), settings, Metrics::default()).plan()
    };
    let all = plan(&["*"]).unwrap();
    assert!(!all.active.contains(&ControllerName::Route), "{all:?}");
    assert!(all.skipped.contains(&(ControllerName::Route, "no --cluster-cidr")), "{all:?}");
    assert_eq!(all.active.len(), 3, "{all:?}");
    let named = plan(&["service", "route"]).unwrap_err();
    assert!(named.to_string().contains("needs --cluster-cidr"), "{named}");
}

on_both_api_servers!(
    nodes_are_initialized_from_the_cloud,
    addresses_follow_the_cloud,
    addresses_follow_the_cloud_one_node_at_a_time,
    nodes_lose_their_taint_only_with_their_addresses,
    nodes_the_cloud_cannot_vouch_for_keep_their_taint,
    load_balancer_lifecycle,
    a_service_with_upstream_s_finalizer_alone_is_let_go,
    load_balancers_follow_the_nodes,
    services_with_a_load_balancer_class_are_left_alone,
    provider_errors_are_reported_and_backed_off,
    retry_errors_come_back_after_their_delay,
    drifted_load_balancers_are_repaired,
    resyncs_of_a_load_balancer_as_it_should_be_write_and_report_nothing,
    gone_instances_are_deleted_and_stopped_ones_tainted,
    gone_instances_are_deleted_and_stopped_ones_tainted_one_node_at_a_time,
    a_throttled_lifecycle_changes_no_node_until_the_cloud_answers,
    routes_follow_the_nodes_pod_cidrs,
);

/// The Go fake, the same provider written with the Go SDK, serves the
/// controllers as the Rust one does: nodes, a load balancer's whole life and
/// the node lifecycle on the harness here; `WASM_CCM_TEST_FAKE=provider-fake-go` runs every
/// test of this file with it.
mod go_fake {
    use wasm_ccm_tests::backend::Backend;
    use wasm_ccm_tests::cluster::FAKE_COMPONENT;

    #[tokio::test]
    async fn nodes_are_initialized_from_the_cloud() {
        FAKE_COMPONENT.scope("provider-fake-go", super::nodes_are_initialized_from_the_cloud(&Backend::Harness)).await;
    }

    #[tokio::test]
    async fn load_balancer_lifecycle() {
        FAKE_COMPONENT.scope("provider-fake-go", super::load_balancer_lifecycle(&Backend::Harness)).await;
    }

    #[tokio::test]
    async fn addresses_follow_the_cloud() {
        FAKE_COMPONENT.scope("provider-fake-go", super::addresses_follow_the_cloud(&Backend::Harness)).await;
    }

    #[tokio::test]
    async fn addresses_follow_the_cloud_one_node_at_a_time() {
        let scenario = super::addresses_follow_the_cloud_one_node_at_a_time(&Backend::Harness);
        FAKE_COMPONENT.scope("provider-fake-go", scenario).await;
    }

    /// A provider of contract 0.2.1, without `metadata-batch`: asked for
    /// addresses one node at a time, and for its lifecycle in batches.
    #[tokio::test]
    async fn a_provider_of_contract_0_2_1_refreshes_addresses_one_node_at_a_time() {
        let scenario = super::addresses_follow_the_cloud(&Backend::Harness);
        FAKE_COMPONENT.scope("provider-fake-go-0-2-1", scenario).await;
        let scenario = super::gone_instances_are_deleted_and_stopped_ones_tainted(&Backend::Harness);
        FAKE_COMPONENT.scope("provider-fake-go-0-2-1", scenario).await;
    }

    /// Through the SDK's `InstancesBatch`.
    #[tokio::test]
    async fn gone_instances_are_deleted_and_stopped_ones_tainted() {
        let scenario = super::gone_instances_are_deleted_and_stopped_ones_tainted(&Backend::Harness);
        FAKE_COMPONENT.scope("provider-fake-go", scenario).await;
    }

    /// A batch size of 0, as the SDK states for an `InstancesV2` that is
    /// not an `InstancesBatch`: asked one node at a time.
    #[tokio::test]
    async fn gone_instances_are_deleted_and_stopped_ones_tainted_one_node_at_a_time() {
        let scenario = super::gone_instances_are_deleted_and_stopped_ones_tainted_one_node_at_a_time(&Backend::Harness);
        FAKE_COMPONENT.scope("provider-fake-go", scenario).await;
    }

    #[tokio::test]
    async fn a_throttled_lifecycle_changes_no_node_until_the_cloud_answers() {
        let scenario = super::a_throttled_lifecycle_changes_no_node_until_the_cloud_answers(&Backend::Harness);
        FAKE_COMPONENT.scope("provider-fake-go", scenario).await;
    }
}
