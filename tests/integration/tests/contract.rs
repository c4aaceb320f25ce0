//! Every function of the contract, through the fake provider component in
//! real wasmtime, returns what the provider's configuration says: the Rust
//! fake and the Go one alike.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeSpec, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;
use wasm_ccm_cloud::{Cloud, InstanceState, NodeSet, Parts, ProviderError, Route};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_host::ProviderHandle;
use wasm_ccm_tests::{allow, guest, load, on_both_fakes, spec};

fn config(cloud: &FakeCloud, faults: serde_json::Value) -> Vec<u8> {
    json!({
        "cloud": cloud.url(),
        "loadBalancerPool": ["203.0.113.0/28"],
        "instances": [
            {
                "name": "node-a", "id": "i-a", "type": "fake.large", "zone": "zone-1", "region": "region-1",
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "node-a"}],
                "labels": {"fake.example/rack": "r1"}
            },
            {"name": "node-b", "id": "i-b", "zone": "zone-2", "region": "region-1", "state": "stopped"},
            {"name": "node-c", "id": "i-c", "state": "terminated"}
        ],
        "zone": {"failureDomain": "zone-1", "region": "region-1"},
        "clusters": ["test-cluster", "other"],
        "master": "https://master.example",
        "faults": faults,
    })
    .to_string()
    .into_bytes()
}

async fn fake(component: &str, cloud: &FakeCloud, faults: serde_json::Value) -> ProviderHandle {
    let mut spec = spec("fake", guest(component), &config(cloud, faults));
    spec.allow_list = allow(&[&cloud.url()]);
    ProviderHandle::new(load(spec).await)
}

fn node(name: &str, provider_id: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta { name: Some(name.into()), uid: Some(format!("uid-{name}")), ..Default::default() },
        spec: Some(NodeSpec { provider_id: provider_id.map(Into::into), ..Default::default() }),
        ..Default::default()
    }
}

fn service(uid: &str, load_balancer_ip: Option<&str>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            uid: Some(uid.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            load_balancer_ip: load_balancer_ip.map(Into::into),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: 80,
                node_port: Some(30080),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn address(type_: &str, address: &str) -> NodeAddress {
    NodeAddress { type_: type_.into(), address: address.into() }
}

async fn provider_info(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    let info = handle.info();
    assert_eq!(info.name, "fake");
    assert!(info.has_cluster_id);
    let all =
        Parts { load_balancer: true, instances: true, instances_v2: true, zones: true, clusters: true, routes: true };
    assert_eq!(info.parts, all);
}

async fn disabled_parts_are_reported(component: &str) {
    let mut spec = spec("fake", guest(component), br#"{"disabledParts": ["zones", "clusters"]}"#);
    spec.allow_list = allow(&[]);
    let provider = load(spec).await;
    let parts = provider.info().parts;
    assert!(!parts.zones && !parts.clusters);
    assert!(parts.instances && parts.instances_v2);
    assert!(!parts.load_balancer && !parts.routes, "no cloud configured");
}

/// Load balancers derived from the Service alone, with no cloud: what the
/// benchmarks measure the controllers with, as upstream's in-memory fake.
async fn stateless_load_balancers_need_no_cloud(component: &str) {
    let config = json!({"statelessLoadBalancers": true, "loadBalancerPool": ["203.0.113.0/28"]});
    let mut spec = spec("fake", guest(component), config.to_string().as_bytes());
    spec.allow_list = allow(&[]);
    let handle = ProviderHandle::new(load(spec).await);
    assert!(handle.info().parts.load_balancer, "served without a cloud");
    let web = service("uid-1", None);
    let ip = |status: &k8s_openapi::api::core::v1::LoadBalancerStatus| {
        status.ingress.as_ref().and_then(|ingress| ingress[0].ip.clone()).unwrap_or_default()
    };
    let ensured = handle.ensure_load_balancer(&web, &NodeSet::of([node("node-a", None)])).await.unwrap();
    assert!(ip(&ensured).starts_with("203.0.113."), "{ensured:?}");
    assert_eq!(
        handle.ensure_load_balancer(&web, &NodeSet::of([])).await.unwrap(),
        ensured,
        "derived from the UID, the same again"
    );
    assert_eq!(handle.get_load_balancer(&web).await.unwrap(), Some(ensured.clone()));
    handle.update_load_balancer(&web, &NodeSet::of([])).await.unwrap();
    handle.ensure_load_balancer_deleted(&web).await.unwrap();
    let pinned = handle.ensure_load_balancer(&service("uid-2", Some("203.0.113.9")), &NodeSet::of([])).await.unwrap();
    assert_eq!(ip(&pinned), "203.0.113.9");
    let outside = handle.ensure_load_balancer(&service("uid-3", Some("192.0.2.1")), &NodeSet::of([])).await;
    assert!(matches!(outside, Err(ProviderError::Cloud(message)) if message.contains("not an address of the pool")));
}

async fn instances_v2(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    assert!(handle.instance_exists(&node("node-a", None)).await.unwrap());
    assert!(handle.instance_exists(&node("renamed", Some("fake://i-a"))).await.unwrap());
    assert!(!handle.instance_exists(&node("node-c", None)).await.unwrap(), "terminated");
    assert!(!handle.instance_exists(&node("nowhere", None)).await.unwrap());
    assert!(!handle.instance_shutdown(&node("node-a", None)).await.unwrap());
    assert!(handle.instance_shutdown(&node("node-b", None)).await.unwrap());
    assert_eq!(handle.instance_shutdown(&node("nowhere", None)).await, Err(ProviderError::InstanceNotFound));

    let metadata = handle.instance_metadata(&node("node-a", None)).await.unwrap();
    assert_eq!(metadata.provider_id, "fake://i-a");
    assert_eq!(metadata.instance_type, "fake.large");
    assert_eq!((metadata.zone.as_str(), metadata.region.as_str()), ("zone-1", "region-1"));
    assert_eq!(metadata.node_addresses, [address("InternalIP", "10.0.0.1"), address("Hostname", "node-a")]);
    assert_eq!(metadata.additional_labels, BTreeMap::from([("fake.example/rack".to_owned(), "r1".to_owned())]));
    assert_eq!(handle.instance_metadata(&node("nowhere", None)).await, Err(ProviderError::InstanceNotFound));
}

/// Both fakes answer the node lifecycle in batches, node by node as they
/// answer one node at a time; told `maxBatch: 0` (the Go fake then has only
/// upstream's per-node methods, which the Go SDK states as a batch of 0), a
/// provider is asked one node at a time.
#[tokio::test]
async fn lifecycle_batches_answer_as_single_questions() {
    for component in ["provider-fake", "provider-fake-go"] {
        batches_answer_as_single_questions(component).await;
    }
}

async fn batches_answer_as_single_questions(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    assert_eq!(handle.info().max_batch, 500, "{component}");
    let nodes = [node("node-a", None), node("node-b", None), node("node-c", None), node("nowhere", None)];
    let set = NodeSet::of(nodes.iter().cloned().chain([node("renamed", Some("fake://i-a"))]));
    let state = |exists, shut_down| Ok(InstanceState { exists, shut_down });
    let states = handle.instance_states(&set).await.unwrap();
    let expected =
        [state(true, false), state(true, true), state(false, false), state(false, false), state(true, false)];
    assert_eq!(states, expected, "{component}: in the set's order, by name");
    for (node, batched) in nodes.iter().zip(&states) {
        let exists = handle.instance_exists(node).await.unwrap();
        let shut_down = exists && handle.instance_shutdown(node).await.unwrap();
        assert_eq!(&state(exists, shut_down), batched, "{component}");
    }

    let throttled = json!({"instances-batch.states": {"error": {"kind": "other", "message": "throttled"}}});
    let handle = fake(component, &cloud, throttled).await;
    assert_eq!(handle.instance_states(&set).await, Err(ProviderError::Cloud("throttled".into())), "{component}");
    let mut config: serde_json::Value = serde_json::from_slice(&config(&cloud, json!({}))).unwrap();
    config["maxBatch"] = json!(0);
    let mut spec = spec("fake", guest(component), config.to_string().as_bytes());
    spec.allow_list = allow(&[&cloud.url()]);
    let one_at_a_time = ProviderHandle::new(load(spec).await);
    assert_eq!(one_at_a_time.info().max_batch, 0, "{component}");
    assert_eq!(one_at_a_time.instance_states(&set).await, Err(ProviderError::NotImplemented), "{component}");
}

/// A provider built against contract 0.2.1, before `metadata-batch`: the
/// host finds its `instances-batch@0.2.1` and asks its lifecycle questions
/// in batches, and asks its metadata one node at a time.
#[tokio::test]
async fn a_provider_of_contract_0_2_1_is_served_unchanged() {
    let cloud = FakeCloud::start().await.unwrap();
    let old = fake("provider-fake-go-0-2-1", &cloud, json!({})).await;
    assert_eq!(old.info().max_batch, 500);
    let set = NodeSet::of([node("node-a", None), node("node-c", None)]);
    let states = old.instance_states(&set).await.unwrap();
    let state = |exists, shut_down| Ok(InstanceState { exists, shut_down });
    assert_eq!(states, [state(true, false), state(false, false)]);
    assert_eq!(old.batch_metadata(&set).await, Err(ProviderError::NotImplemented), "no metadata-batch before 0.2.2");
    assert_eq!(old.instance_metadata(&node("node-a", None)).await.unwrap().provider_id, "fake://i-a");
    let current = fake("provider-fake-go", &cloud, json!({})).await;
    assert_eq!(current.batch_metadata(&set).await.unwrap()[0].as_ref().unwrap().provider_id, "fake://i-a");
}

async fn instances_v1(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    let addresses = [address("InternalIP", "10.0.0.1"), address("Hostname", "node-a")];
    assert_eq!(handle.node_addresses("node-a").await.unwrap(), addresses);
    assert_eq!(handle.node_addresses_by_provider_id("fake://i-a").await.unwrap(), addresses);
    assert_eq!(handle.instance_id("node-a").await.unwrap(), "i-a");
    assert_eq!(handle.instance_type("node-a").await.unwrap(), "fake.large");
    assert_eq!(handle.instance_type_by_provider_id("fake://i-b").await.unwrap(), "fake.small");
    assert_eq!(
        handle.add_ssh_key_to_all_instances("core", b"ssh-ed25519 AAAA").await,
        Err(ProviderError::NotImplemented)
    );
    assert_eq!(handle.current_node_name("host-1").await.unwrap(), "host-1");
    assert!(handle.instance_exists_by_provider_id("fake://i-a").await.unwrap());
    assert!(!handle.instance_exists_by_provider_id("fake://i-c").await.unwrap());
    assert!(handle.instance_shutdown_by_provider_id("fake://i-b").await.unwrap());
    assert_eq!(handle.instance_id("nowhere").await, Err(ProviderError::InstanceNotFound));
    let err = handle.instance_exists_by_provider_id("aws:///zone/i-a").await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if message.contains("fake://")), "{err}");
}

async fn zones_and_clusters(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    let zone = handle.get_zone().await.unwrap();
    assert_eq!((zone.failure_domain.as_str(), zone.region.as_str()), ("zone-1", "region-1"));
    assert_eq!(handle.get_zone_by_provider_id("fake://i-b").await.unwrap().failure_domain, "zone-2");
    assert_eq!(handle.get_zone_by_node_name("node-a").await.unwrap().failure_domain, "zone-1");
    assert_eq!(handle.list_clusters().await.unwrap(), ["test-cluster", "other"]);
    assert_eq!(handle.master("test-cluster").await.unwrap(), "https://master.example");
}

async fn load_balancer_lifecycle(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    let web = service("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", None);
    assert_eq!(handle.get_load_balancer(&web).await.unwrap(), None);
    assert_eq!(handle.get_load_balancer_name(&web).await.unwrap(), "a0f1e2d3c4b5a69788796a5b4c3d2e1f");

    let nodes = [node("node-a", None), node("node-b", None)];
    let status = handle.ensure_load_balancer(&web, &NodeSet::of(nodes.clone())).await.unwrap();
    let ingress = status.ingress.clone().unwrap();
    let ip = ingress[0].ip.clone().unwrap();
    assert!(ip.starts_with("203.0.113."), "{ip}");
    assert_eq!(ingress[0].ip_mode.as_deref(), Some("VIP"));
    assert_eq!(handle.get_load_balancer(&web).await.unwrap(), Some(status.clone()));
    assert_eq!(handle.ensure_load_balancer(&web, &NodeSet::of(nodes.clone())).await.unwrap(), status, "idempotent");

    let stored = cloud.objects("load-balancers");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].value["nodes"], json!(["node-a", "node-b"]));
    assert_eq!(stored[0].value["service"], "shop/web");
    handle.update_load_balancer(&web, &NodeSet::of(nodes[..1].to_vec())).await.unwrap();
    assert_eq!(cloud.objects("load-balancers")[0].value["nodes"], json!(["node-a"]));

    handle.ensure_load_balancer_deleted(&web).await.unwrap();
    assert_eq!(handle.get_load_balancer(&web).await.unwrap(), None);
    assert!(cloud.objects("load-balancers").is_empty());
    assert!(cloud.objects("addresses").is_empty(), "the address went back to the pool");
    handle.ensure_load_balancer_deleted(&web).await.unwrap();
    let err = handle.update_load_balancer(&web, &NodeSet::of(nodes.clone())).await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if message.contains("does not exist")), "{err}");
}

async fn load_balancer_addresses_come_from_the_pool(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    let wanted = service("uid-wanted", Some("203.0.113.9"));
    let status = handle.ensure_load_balancer(&wanted, &NodeSet::of([])).await.unwrap();
    assert_eq!(status.ingress.unwrap()[0].ip.as_deref(), Some("203.0.113.9"));
    let thief = service("uid-thief", Some("203.0.113.9"));
    assert!(handle.ensure_load_balancer(&thief, &NodeSet::of([])).await.is_err(), "taken");
    let outside = service("uid-outside", Some("198.51.100.1"));
    assert!(handle.ensure_load_balancer(&outside, &NodeSet::of([])).await.is_err(), "outside the pool");

    // A /28 has 14 usable addresses: one is taken, 13 more fit, then none.
    let mut addresses = std::collections::BTreeSet::from(["203.0.113.9".to_owned()]);
    for i in 0..13 {
        let status = handle.ensure_load_balancer(&service(&format!("uid-{i}"), None), &NodeSet::of([])).await.unwrap();
        addresses.insert(status.ingress.unwrap()[0].ip.clone().unwrap());
    }
    assert_eq!(addresses.len(), 14, "all distinct");
    let err = handle.ensure_load_balancer(&service("uid-one-too-many", None), &NodeSet::of([])).await.unwrap_err();
    assert!(matches!(&err, ProviderError::Cloud(message) if message.contains("exhausted")), "{err}");
}

async fn routes(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let handle = fake(component, &cloud, json!({})).await;
    assert!(handle.list_routes().await.unwrap().is_empty());
    let route = Route { target_node: "node-a".into(), destination_cidr: "10.244.1.0/24".into(), ..Default::default() };
    handle.create_route("uid-node-a", &route).await.unwrap();
    let listed = handle.list_routes().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "test-cluster-uid-node-a");
    assert_eq!(listed[0].target_node, "node-a");
    assert_eq!(listed[0].destination_cidr, "10.244.1.0/24");
    assert!(!listed[0].blackhole);
    let gone = Route { target_node: "node-c".into(), destination_cidr: "10.244.3.0/24".into(), ..Default::default() };
    assert_eq!(handle.create_route("uid-node-c", &gone).await, Err(ProviderError::InstanceNotFound));
    handle.delete_route(&listed[0]).await.unwrap();
    assert!(handle.list_routes().await.unwrap().is_empty());
}

async fn injected_faults(component: &str) {
    let cloud = FakeCloud::start().await.unwrap();
    let faults = json!({
        "load-balancer.ensure": {"error": {"kind": "retry", "delayMs": 1500, "message": "quota refill"}},
        "load-balancer.ensure-deleted": {"error": {"kind": "other", "message": "cloud is down"}},
        "load-balancer.get": {"error": {"kind": "implemented-elsewhere"}},
        "instances-v2.metadata": {"latencyMs": 150},
    });
    let handle = fake(component, &cloud, faults).await;
    let web = service("uid-web", None);
    assert_eq!(
        handle.ensure_load_balancer(&web, &NodeSet::of([])).await,
        Err(ProviderError::Retry { delay: Duration::from_millis(1500), message: "quota refill".into() })
    );
    assert_eq!(handle.ensure_load_balancer_deleted(&web).await, Err(ProviderError::Cloud("cloud is down".into())));
    assert_eq!(handle.get_load_balancer(&web).await, Err(ProviderError::ImplementedElsewhere));
    let started = Instant::now();
    handle.instance_metadata(&node("node-a", None)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150), "{:?}", started.elapsed());
}

async fn bad_config_fails_to_load_with_its_reason(component: &str) {
    let err = wasm_ccm_host::LoadedProvider::load(
        &wasm_ccm_tests::engine(),
        spec("fake", guest(component), b"{\"instances\": 3}"),
    )
    .await
    .err()
    .expect("a load error");
    let message = err.to_string();
    assert!(message.contains("invalid fake provider config"), "{message}");
}

on_both_fakes!(
    provider_info,
    disabled_parts_are_reported,
    stateless_load_balancers_need_no_cloud,
    instances_v2,
    instances_v1,
    zones_and_clusters,
    load_balancer_lifecycle,
    load_balancer_addresses_come_from_the_pool,
    routes,
    injected_faults,
    bad_config_fails_to_load_with_its_reason,
);
