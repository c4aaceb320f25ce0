//! The AWS provider component in real wasmtime, through the host's typed
//! API, against a real AWS API emulator (`moto_server`), and against a
//! loopback server answering canned errors.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeAddress, Service, ServicePort};
use serde_json::{Value, json};
use tracing_subscriber::fmt::format::FmtSpan;
use wasm_ccm_cloud::{Cloud as _, NodeSet, ProviderError, Route};
use wasm_ccm_host::{Credentials, ProviderHandle, Seal};
use wasm_ccm_tests::canned_aws::CannedAws;
use wasm_ccm_tests::moto::{LoadBalancing, Moto, REGION, Seed};
use wasm_ccm_tests::{CapturedLogs, NodeFixture, ServiceFixture, ServicePortFixture, allow, guest, load, spec};

/// The cluster name `spec()` gives providers.
const CLUSTER: &str = "test-cluster";
const CLUSTER_TAG: &str = "kubernetes.io/cluster/test-cluster";
const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
const LOAD_BALANCER_NAME: &str = "a0f1e2d3c4b5a69788796a5b4c3d2e1f";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const INTERNAL: &str = "service.beta.kubernetes.io/aws-load-balancer-internal";

/// The credentials, the secret key sealed for `origin`.
fn credentials(origin: &str, session_token: bool) -> Credentials {
    let mut pairs = vec![("access-key-id", "AKIDEXAMPLE"), ("secret-access-key", SECRET_KEY)];
    if session_token {
        pairs.push(("session-token", "session-token-value"));
    }
    // Sealed: the provider works without ever being able to read the secret key.
    let seal: Seal = format!("secret-access-key=aws-sigv4-secret-access-key@{origin}").parse().unwrap();
    Credentials::from_pairs(pairs).seal([seal]).expect("the secret key is bound")
}

/// The AWS provider with `config`, allowed to reach `allowed` only.
async fn aws(config: &Value, allowed: &str, credentials: Credentials) -> ProviderHandle {
    let mut spec = spec("aws", guest("provider-aws"), config.to_string().as_bytes());
    spec.allow_list = allow(&[allowed]);
    spec.credentials = credentials;
    ProviderHandle::new(load(spec).await)
}

/// A config whose endpoints are all `url`.
fn config(url: &str) -> Value {
    json!({"region": REGION, "endpoints": {"ec2": url, "elasticloadbalancing": url}})
}

/// A seeded emulator and the provider pointed at it.
struct Cloud {
    moto: Moto,
    seed: Seed,
    handle: ProviderHandle,
}

async fn cloud() -> Cloud {
    let moto = Moto::start().expect("moto_server");
    let seed = moto.seed(CLUSTER).expect("seeded");
    let handle = aws(&config(&moto.url()), &moto.url(), credentials(&moto.url(), false)).await;
    Cloud { moto, seed, handle }
}

impl Cloud {
    fn state(&self) -> LoadBalancing {
        self.moto.load_balancing().expect("listed")
    }

    /// The Node of a seeded instance: by name, or with its provider ID.
    fn node(&self, key: &str, with_provider_id: bool) -> Node {
        let instance = self.seed.instance(key);
        let node = Node::test(&instance.name);
        if with_provider_id {
            node.with_provider_id(&format!("aws:///{}/{}", instance.zone, instance.id))
        } else {
            node
        }
    }

    fn id(&self, key: &str) -> String {
        self.seed.instance(key).id.clone()
    }
}

/// `shop/web` with `ports` as (protocol, port, node port) and `annotations`.
fn service(ports: &[(&str, i32, i32)], annotations: &[(&str, &str)]) -> Service {
    let ports = ports.iter().map(|(protocol, port, node_port)| {
        let name = format!("{}-{port}", protocol.to_lowercase());
        ServicePort::test(&name, *port).with_protocol(protocol).with_node_port(*node_port)
    });
    Service::test("web").with_namespace("shop").with_uid(UID).with_annotations(annotations).with_ports(ports)
}

fn address(type_: &str, address: &str) -> NodeAddress {
    NodeAddress { type_: type_.into(), address: address.into() }
}

fn cloud_error(result: Result<impl std::fmt::Debug, ProviderError>) -> String {
    match result {
        Err(ProviderError::Cloud(message)) => message,
        other => panic!("expected a cloud error, got {other:?}"),
    }
}

fn service_tags() -> BTreeMap<String, String> {
    BTreeMap::from([
        (CLUSTER_TAG.to_owned(), "owned".to_owned()),
        ("kubernetes.io/service-name".to_owned(), "shop/web".to_owned()),
    ])
}

#[tokio::test]
async fn instance_metadata_by_node_name_and_by_provider_id() {
    let cloud = cloud().await;
    let a = cloud.seed.instance("running-a");
    let metadata = cloud.handle.instance_metadata(&cloud.node("running-a", false)).await.unwrap();
    assert_eq!(metadata.provider_id, format!("aws:///{REGION}a/{}", a.id));
    assert_eq!(metadata.instance_type, "t3.medium");
    assert_eq!((metadata.zone.as_str(), metadata.region.as_str()), ("eu-west-1a", REGION));
    assert!(!a.public_ip.is_empty() && !a.public_dns.is_empty(), "the seed gives running-a public addresses");
    assert_eq!(
        metadata.node_addresses,
        [
            address("InternalIP", "10.0.1.10"),
            address("ExternalIP", &a.public_ip),
            address("InternalDNS", &a.name),
            address("Hostname", &a.name),
            address("ExternalDNS", &a.public_dns),
        ]
    );

    // A Node with a provider ID is found by it, whatever its name.
    let b = cloud.seed.instance("running-b");
    for provider_id in [format!("aws:///{}/{}", b.zone, b.id), format!("aws://{}/{}", b.zone, b.id)] {
        let renamed = Node::test("renamed").with_provider_id(&provider_id);
        let metadata = cloud.handle.instance_metadata(&renamed).await.unwrap();
        assert_eq!(metadata.provider_id, format!("aws:///eu-west-1b/{}", b.id));
        assert_eq!((metadata.instance_type.as_str(), metadata.zone.as_str()), ("m5.large", "eu-west-1b"));
        assert_eq!(
            metadata.node_addresses,
            [address("InternalIP", "10.0.2.10"), address("InternalDNS", &b.name), address("Hostname", &b.name)]
        );
    }
    let unknown = Node::test("ip-10-9-9-9.eu-west-1.compute.internal");
    assert_eq!(cloud.handle.instance_metadata(&unknown).await, Err(ProviderError::InstanceNotFound));
    let message = cloud_error(cloud.handle.instance_metadata(&Node::test("x").with_provider_id("gce://p/z/i-1")).await);
    assert!(message.contains("aws:///<zone>/<instance-id>"), "{message}");
}

#[tokio::test]
async fn instances_exist_until_terminated_and_shut_down_when_stopped() {
    let cloud = cloud().await;
    let handle = &cloud.handle;
    for (key, exists, shutdown) in [("running-a", true, false), ("stopped", true, true)] {
        for with_provider_id in [false, true] {
            let node = cloud.node(key, with_provider_id);
            assert_eq!(handle.instance_exists(&node).await.unwrap(), exists, "{key} {with_provider_id}");
            assert_eq!(handle.instance_shutdown(&node).await.unwrap(), shutdown, "{key} {with_provider_id}");
        }
    }
    assert!(!handle.instance_exists(&cloud.node("terminated", false)).await.unwrap());
    assert!(!handle.instance_exists(&cloud.node("terminated", true)).await.unwrap());
    let unknown_id = Node::test("gone").with_provider_id("aws:///eu-west-1a/i-0123456789abcdef0");
    assert!(!handle.instance_exists(&unknown_id).await.unwrap());
    assert!(!handle.instance_exists(&Node::test("ip-10-9-9-9.eu-west-1.compute.internal")).await.unwrap());
    assert_eq!(handle.instance_shutdown(&unknown_id).await, Err(ProviderError::InstanceNotFound));
}

#[tokio::test]
async fn instances_v1_and_zones() {
    let cloud = cloud().await;
    let handle = &cloud.handle;
    let a = cloud.seed.instance("running-a");
    let provider_id = format!("aws:///{}/{}", a.zone, a.id);
    assert_eq!(handle.instance_id(&a.name).await.unwrap(), format!("/eu-west-1a/{}", a.id));
    assert_eq!(handle.instance_type(&a.name).await.unwrap(), "t3.medium");
    assert_eq!(handle.instance_type_by_provider_id(&provider_id).await.unwrap(), "t3.medium");
    let addresses = handle.node_addresses(&a.name).await.unwrap();
    assert_eq!(addresses[0], address("InternalIP", "10.0.1.10"));
    assert_eq!(handle.node_addresses_by_provider_id(&provider_id).await.unwrap(), addresses);
    assert!(handle.instance_exists_by_provider_id(&provider_id).await.unwrap());
    let stopped = cloud.seed.instance("stopped");
    assert!(handle.instance_shutdown_by_provider_id(&format!("aws:///{}/{}", stopped.zone, stopped.id)).await.unwrap());
    let terminated = cloud.seed.instance("terminated");
    assert!(!handle.instance_exists_by_provider_id(&terminated.id).await.unwrap(), "a bare instance ID");
    assert_eq!(handle.instance_id(&terminated.name).await, Err(ProviderError::InstanceNotFound));

    let zone = handle.get_zone_by_node_name(&a.name).await.unwrap();
    assert_eq!((zone.failure_domain.as_str(), zone.region.as_str()), ("eu-west-1a", REGION));
    assert_eq!(handle.get_zone_by_provider_id(&provider_id).await.unwrap(), zone);
    assert_eq!(handle.current_node_name("host-1").await.unwrap(), "host-1");
    let info = handle.info();
    assert_eq!(info.name, "aws");
    assert!(info.has_cluster_id);
    assert!(info.parts.load_balancer && info.parts.instances_v2 && info.parts.routes && !info.parts.clusters);
}

#[tokio::test]
async fn load_balancer_lifecycle() {
    let cloud = cloud().await;
    let handle = &cloud.handle;
    let (a, b) = (cloud.id("running-a"), cloud.id("running-b"));
    // Both running instances on `port`, sorted as listed.
    let both = |port: u16| {
        let mut targets = vec![(a.clone(), port), (b.clone(), port)];
        targets.sort();
        targets
    };
    let web = service(&[("TCP", 80, 30080), ("UDP", 53, 30053)], &[]);
    assert_eq!(handle.get_load_balancer(&web).await.unwrap(), None);
    assert_eq!(handle.get_load_balancer_name(&web).await.unwrap(), LOAD_BALANCER_NAME);

    // Every kind of Node: by name, by provider ID, stopped, terminated, unknown.
    let nodes = [
        cloud.node("running-a", false),
        cloud.node("running-b", true),
        cloud.node("stopped", false),
        cloud.node("terminated", true),
        Node::test("ip-10-9-9-9.eu-west-1.compute.internal"),
    ];
    let status = handle.ensure_load_balancer(&web, &NodeSet::of(nodes.clone())).await.unwrap();
    let state = cloud.state();
    assert_eq!(state.load_balancers.len(), 1);
    let lb = &state.load_balancers[0];
    assert_eq!(
        (lb.name.as_str(), lb.scheme.as_str(), lb.load_balancer_type.as_str()),
        (LOAD_BALANCER_NAME, "internet-facing", "network")
    );
    let mut tagged_subnets = cloud.seed.tagged_subnets.clone();
    tagged_subnets.sort();
    assert_eq!(lb.subnets, tagged_subnets, "one tagged subnet per zone, not {}", cloud.seed.untagged_subnet);
    assert_eq!(lb.tags, service_tags());
    let ingress = status.ingress.clone().unwrap();
    assert_eq!(ingress.len(), 1);
    assert_eq!(ingress[0].hostname.as_deref(), Some(lb.dns_name.as_str()));
    assert!(!lb.dns_name.is_empty());
    assert_eq!(handle.get_load_balancer(&web).await.unwrap(), Some(status.clone()));

    assert_eq!(state.target_groups.len(), 2);
    for group in &state.target_groups {
        assert!(group.name.starts_with("k8s-shop-web-") && group.name.len() <= 32, "{}", group.name);
        assert_eq!((group.target_type.as_str(), group.vpc.as_str()), ("instance", cloud.seed.vpc.as_str()));
        assert_eq!(group.health_check_protocol, "TCP");
        assert_eq!(group.tags, service_tags());
        assert_eq!(group.targets, both(group.port));
    }
    let by_arn: BTreeMap<&str, (&str, u16)> =
        state.target_groups.iter().map(|group| (group.arn.as_str(), (group.protocol.as_str(), group.port))).collect();
    let listeners: Vec<(u16, &str, (&str, u16))> = state
        .listeners
        .iter()
        .map(|listener| (listener.port, listener.protocol.as_str(), by_arn[listener.target_group.as_str()]))
        .collect();
    assert_eq!(listeners, [(53, "UDP", ("UDP", 30053)), (80, "TCP", ("TCP", 30080))]);
    assert!(state.listeners.iter().all(|listener| listener.tags == service_tags() && listener.load_balancer == lb.arn));

    // Again: nothing new, nothing changed.
    assert_eq!(handle.ensure_load_balancer(&web, &NodeSet::of(nodes.clone())).await.unwrap(), status);
    assert_eq!(cloud.state(), state, "ensure is idempotent");

    // Update: exactly the given Nodes' running instances.
    handle.update_load_balancer(&web, &NodeSet::of(nodes[..1].to_vec())).await.unwrap();
    assert!(cloud.state().target_groups.iter().all(|group| group.targets == [(a.clone(), group.port)]));
    handle.update_load_balancer(&web, &NodeSet::of(nodes.clone())).await.unwrap();
    assert_eq!(cloud.state(), state, "back to both running instances");
    handle.update_load_balancer(&web, &NodeSet::of([])).await.unwrap();
    assert!(cloud.state().target_groups.iter().all(|group| group.targets.is_empty()));

    // A new node port replaces the target group behind the same listener; a
    // removed port loses its listener and target group; a new one gains them.
    let changed = service(&[("TCP", 80, 30081), ("TCP", 443, 30443)], &[]);
    handle.ensure_load_balancer(&changed, &NodeSet::of(nodes.clone())).await.unwrap();
    let after = cloud.state();
    assert_eq!(after.load_balancers, state.load_balancers);
    let ports: Vec<(u16, &str)> =
        after.listeners.iter().map(|listener| (listener.port, listener.protocol.as_str())).collect();
    assert_eq!(ports, [(80, "TCP"), (443, "TCP")]);
    let http_listener = after.listeners.iter().find(|listener| listener.port == 80).unwrap();
    let old_http_listener = state.listeners.iter().find(|listener| listener.port == 80).unwrap();
    assert_eq!(http_listener.arn, old_http_listener.arn, "the listener is kept and pointed elsewhere");
    assert_ne!(http_listener.target_group, old_http_listener.target_group);
    let mut group_ports: Vec<u16> = after.target_groups.iter().map(|group| group.port).collect();
    group_ports.sort_unstable();
    assert_eq!(group_ports, [30081, 30443], "the old target groups are gone");
    assert!(after.target_groups.iter().all(|group| group.targets == both(group.port)));

    // Drift: a listener and its target group deleted, a target deregistered.
    let dropped = after.listeners.iter().find(|listener| listener.port == 443).unwrap();
    let kept_group = after.target_groups.iter().find(|group| group.port == 30081).unwrap();
    cloud
        .moto
        .boto3(
            "elbv2.delete_listener(ListenerArn=arg['listener'])\n\
             elbv2.delete_target_group(TargetGroupArn=arg['group'])\n\
             elbv2.deregister_targets(TargetGroupArn=arg['kept'], Targets=[{'Id': arg['target'], 'Port': 30081}])\n\
             print('{}')",
            &json!({"listener": dropped.arn, "group": dropped.target_group, "kept": kept_group.arn, "target": a}),
        )
        .unwrap();
    handle.ensure_load_balancer(&changed, &NodeSet::of(nodes.clone())).await.unwrap();
    let repaired = cloud.state();
    let ports: Vec<(u16, &str)> =
        repaired.listeners.iter().map(|listener| (listener.port, listener.protocol.as_str())).collect();
    assert_eq!(ports, [(80, "TCP"), (443, "TCP")]);
    assert_eq!(repaired.target_groups.len(), 2);
    assert!(repaired.target_groups.iter().all(|group| group.targets == both(group.port)));

    // Deleted: nothing left, and deleting again succeeds.
    handle.ensure_load_balancer_deleted(&changed).await.unwrap();
    let gone = cloud.state();
    assert!(gone.load_balancers.is_empty() && gone.target_groups.is_empty() && gone.listeners.is_empty(), "{gone:?}");
    handle.ensure_load_balancer_deleted(&changed).await.unwrap();
    assert_eq!(handle.get_load_balancer(&changed).await.unwrap(), None);
    let message = cloud_error(handle.update_load_balancer(&changed, &NodeSet::of(nodes.clone())).await);
    assert!(message.contains("does not exist"), "{message}");
}

#[tokio::test]
async fn internal_annotation_and_scheme_changes() {
    let cloud = cloud().await;
    let handle = &cloud.handle;
    let nodes = [cloud.node("running-a", false)];
    let internal = service(&[("TCP", 80, 30080)], &[(INTERNAL, "true")]);
    handle.ensure_load_balancer(&internal, &NodeSet::of(nodes.clone())).await.unwrap();
    let state = cloud.state();
    assert_eq!(state.load_balancers.len(), 1);
    assert_eq!(state.load_balancers[0].scheme, "internal");

    // AWS cannot change a scheme: the load balancer is replaced.
    let public = service(&[("TCP", 80, 30080)], &[(INTERNAL, "false")]);
    let status = handle.ensure_load_balancer(&public, &NodeSet::of(nodes.clone())).await.unwrap();
    let replaced = cloud.state();
    assert_eq!(replaced.load_balancers.len(), 1);
    assert_eq!(replaced.load_balancers[0].scheme, "internet-facing");
    assert_ne!(replaced.load_balancers[0].arn, state.load_balancers[0].arn);
    assert_eq!(status.ingress.unwrap()[0].hostname.as_deref(), Some(replaced.load_balancers[0].dns_name.as_str()));
    assert_eq!((replaced.listeners.len(), replaced.target_groups.len()), (1, 1));
    assert_eq!(replaced.target_groups[0].targets, [(cloud.id("running-a"), 30080)]);

    // Another controller's Service is left alone.
    let external = service(&[("TCP", 80, 30080)], &[("service.beta.kubernetes.io/aws-load-balancer-type", "external")]);
    assert_eq!(
        handle.ensure_load_balancer(&external, &NodeSet::of(nodes.clone())).await,
        Err(ProviderError::ImplementedElsewhere)
    );
    assert_eq!(handle.get_load_balancer(&external).await.unwrap(), None);
    assert_eq!(cloud.state(), replaced);
}

#[tokio::test]
async fn leftover_target_groups_are_deleted_with_the_service() {
    let cloud = cloud().await;
    let web = service(&[("TCP", 80, 30080), ("TCP", 443, 30443)], &[]);
    cloud.handle.ensure_load_balancer(&web, &NodeSet::of([cloud.node("running-a", false)])).await.unwrap();
    let state = cloud.state();
    assert_eq!(state.target_groups.len(), 2);
    // The load balancer deleted by hand leaves its target groups; a group of
    // another Service with a look-alike name must survive.
    cloud
        .moto
        .boto3(
            "elbv2.delete_load_balancer(LoadBalancerArn=arg['lb'])\n\
             elbv2.create_target_group(Name='k8s-shop-web-other', Protocol='TCP', Port=31000, VpcId=arg['vpc'],\n\
                 TargetType='instance', Tags=[{'Key': arg['tag'], 'Value': 'owned'},\n\
                 {'Key': 'kubernetes.io/service-name', 'Value': 'shop/web-other'}])\n\
             print('{}')",
            &json!({"lb": state.load_balancers[0].arn, "vpc": cloud.seed.vpc, "tag": CLUSTER_TAG}),
        )
        .unwrap();
    assert_eq!(cloud.state().target_groups.len(), 3);
    cloud.handle.ensure_load_balancer_deleted(&web).await.unwrap();
    let left: Vec<String> = cloud.state().target_groups.into_iter().map(|group| group.name).collect();
    assert_eq!(left, ["k8s-shop-web-other"]);
}

#[tokio::test]
async fn routes_are_created_listed_and_deleted() {
    let cloud = cloud().await;
    let handle = &cloud.handle;
    let (a, b) = (cloud.seed.instance("running-a").clone(), cloud.seed.instance("running-b").clone());
    assert_eq!(handle.list_routes().await.unwrap(), [], "the local route is not a pod route");

    let route = |cidr: &str, target: &str| Route {
        target_node: target.into(),
        destination_cidr: cidr.into(),
        ..Default::default()
    };
    handle.create_route("uid-a", &route("100.64.1.0/24", &a.name)).await.unwrap();
    handle.create_route("uid-a", &route("100.64.1.0/24", &a.name)).await.unwrap();
    let expected = Route {
        name: format!("{CLUSTER}-100.64.1.0/24"),
        target_node: a.name.clone(),
        destination_cidr: "100.64.1.0/24".into(),
        ..Default::default()
    };
    assert_eq!(handle.list_routes().await.unwrap(), std::slice::from_ref(&expected), "created once");
    let check = cloud
        .moto
        .boto3(
            "print(json.dumps(ec2.describe_instance_attribute(InstanceId=arg, Attribute='sourceDestCheck')['SourceDestCheck']['Value']))",
            &json!(a.id),
        )
        .unwrap();
    assert_eq!(check, json!(false), "the instance forwards pod traffic");

    // A route to a terminated instance is a blackhole; creating the route
    // for its CIDR again replaces it.
    let terminated = cloud.id("terminated");
    cloud
        .moto
        .boto3(
            "ec2.create_route(RouteTableId=arg['table'], DestinationCidrBlock='100.64.9.0/24', InstanceId=arg['instance'])\nprint('{}')",
            &json!({"table": cloud.seed.route_table, "instance": terminated}),
        )
        .unwrap();
    let routes = handle.list_routes().await.unwrap();
    let blackhole = routes.iter().find(|route| route.destination_cidr == "100.64.9.0/24").unwrap();
    assert!(blackhole.blackhole, "{blackhole:?}");
    handle.create_route("uid-b", &route("100.64.9.0/24", &b.name)).await.unwrap();
    let routes = handle.list_routes().await.unwrap();
    let replaced = routes.iter().find(|route| route.destination_cidr == "100.64.9.0/24").unwrap();
    assert_eq!((replaced.target_node.as_str(), replaced.blackhole), (b.name.as_str(), false));

    handle.delete_route(&expected).await.unwrap();
    handle.delete_route(&expected).await.unwrap();
    let cidrs: Vec<String> =
        handle.list_routes().await.unwrap().into_iter().map(|route| route.destination_cidr).collect();
    assert_eq!(cidrs, ["100.64.9.0/24"]);

    let unknown = route("100.64.2.0/24", "ip-10-9-9-9.eu-west-1.compute.internal");
    assert_eq!(handle.create_route("uid-x", &unknown).await, Err(ProviderError::InstanceNotFound));
    let gone = route("100.64.3.0/24", &cloud.seed.instance("terminated").name);
    assert_eq!(handle.create_route("uid-t", &gone).await, Err(ProviderError::InstanceNotFound));
}

#[tokio::test]
async fn hosts_off_the_allow_list_are_refused() {
    let moto = Moto::start().expect("moto_server");
    let seed = moto.seed(CLUSTER).expect("seeded");
    // Elastic Load Balancing at its public endpoint, which is not allowed.
    let handle =
        aws(&json!({"region": REGION, "endpoints": {"ec2": moto.url()}}), &moto.url(), credentials(&moto.url(), false))
            .await;
    let message = cloud_error(handle.get_load_balancer(&service(&[("TCP", 80, 30080)], &[])).await);
    assert!(message.starts_with("HTTP request denied: "), "{message}");
    assert!(message.contains("elasticloadbalancing.eu-west-1.amazonaws.com"), "{message}");
    assert!(message.contains("not on the provider's allow-list"), "{message}");
    let a = seed.instance("running-a");
    assert!(handle.instance_exists(&Node::test(&a.name)).await.unwrap(), "EC2 on the allow-list still answers");
}

#[tokio::test]
async fn throttling_server_errors_and_malformed_answers() {
    let canned = CannedAws::start().await.unwrap();
    let handle = aws(&config(&canned.url()), &canned.url(), credentials(&canned.url(), false)).await;
    let web = service(&[("TCP", 80, 30080)], &[]);
    let a = Node::test("ip-10-0-1-10.eu-west-1.compute.internal");

    canned.answer(
        503,
        "<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>r</RequestID></Response>",
    );
    match handle.instance_metadata(&a).await {
        Err(ProviderError::Retry { delay, message }) => {
            assert_eq!(delay, Duration::from_secs(5));
            assert!(message.contains("RequestLimitExceeded"), "{message}");
        }
        other => panic!("expected a retry, got {other:?}"),
    }
    canned.answer(
        400,
        "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>",
    );
    assert!(
        matches!(handle.get_load_balancer(&web).await, Err(ProviderError::Retry { delay, .. }) if delay == Duration::from_secs(5))
    );

    canned.answer(
        500,
        "<html><head><title>500 Internal Server Error</title></head><body><h1>Oops</h1><br></body></html>",
    );
    let message = cloud_error(handle.instance_metadata(&a).await);
    assert!(message.contains("HTTP 500") && message.contains("500 Internal Server Error"), "{message}");

    canned.answer(502, "upstream connect error or disconnect/reset before headers");
    let message = cloud_error(handle.ensure_load_balancer(&web, &NodeSet::of([a.clone()])).await);
    assert!(message.contains("HTTP 502") && message.contains("upstream connect error"), "{message}");

    canned.answer(200, "<DescribeInstancesResponse><reservationSet><item><instancesSet><item><instanceId>i-1");
    let message = cloud_error(handle.instance_metadata(&a).await);
    assert!(message.contains("cannot read the answer to AWS DescribeInstances"), "{message}");

    canned.answer(503, "<Response><Errors><Error><Code>Unavailable</Code><Message>The server is overloaded.</Message></Error></Errors></Response>");
    let message = cloud_error(handle.instance_metadata(&a).await);
    assert_eq!(message, "AWS Unavailable: The server is overloaded. (DescribeInstances)");

    canned.answer(400, "<ErrorResponse><Error><Code>InvalidSubnet</Code><Message>Subnet subnet-1 is not in the VPC</Message></Error></ErrorResponse>");
    let message = cloud_error(handle.ensure_load_balancer(&web, &NodeSet::of([])).await);
    assert!(message.starts_with("AWS InvalidSubnet: Subnet subnet-1 is not in the VPC"), "{message}");

    // The host keeps serving, and a good answer is read.
    handle.probe().await.unwrap();
    canned.answer(200, instance_answer());
    let metadata = handle.instance_metadata(&a).await.unwrap();
    assert_eq!(metadata.provider_id, "aws:///eu-west-1a/i-0abc");
}

fn instance_answer() -> &'static str {
    r#"<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><reservationSet><item><instancesSet><item>
<instanceId>i-0abc</instanceId><instanceState><code>16</code><name>running</name></instanceState>
<privateDnsName>ip-10-0-1-10.eu-west-1.compute.internal</privateDnsName><instanceType>t3.medium</instanceType>
<placement><availabilityZone>eu-west-1a</availabilityZone></placement><privateIpAddress>10.0.1.10</privateIpAddress>
</item></instancesSet></item></reservationSet></DescribeInstancesResponse>"#
}

/// Captures this thread's debug records, with a line for every new span.
fn capture_debug_logs() -> (CapturedLogs, tracing::subscriber::DefaultGuard) {
    // With a single registered dispatcher, tracing decides whether a call
    // site is interesting by asking only the default of the thread that
    // reaches it first, which may be another test's; a second one makes it
    // ask every registered dispatcher.
    static SECOND_DISPATCHER: OnceLock<tracing::Dispatch> = OnceLock::new();
    SECOND_DISPATCHER.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    let logs = CapturedLogs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_span_events(FmtSpan::NEW)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

#[tokio::test]
async fn the_host_signs_and_the_secret_key_stays_out_of_the_guest() {
    let canned = CannedAws::start().await.unwrap();
    canned.answer(200, instance_answer());
    let a = Node::test("ip-10-0-1-10.eu-west-1.compute.internal");
    let with_token = json!({
        "region": REGION,
        "endpoints": {"ec2": canned.url()},
        "credentials": {"sessionToken": "session-token"},
    });

    let (logs, guard) = capture_debug_logs();
    let handle = aws(&with_token, &canned.url(), credentials(&canned.url(), true)).await;
    handle.instance_metadata(&a).await.unwrap();
    drop(guard);
    let request = canned.requests().pop().unwrap();
    let authorization = request.header("authorization").unwrap();
    assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), "{authorization}");
    assert!(authorization.contains(&format!("/{REGION}/ec2/aws4_request")), "{authorization}");
    assert!(request.header("x-amz-date").is_some());
    assert_eq!(request.header("x-amz-security-token"), Some("session-token-value"));
    assert_eq!(request.header("content-type"), Some("application/x-www-form-urlencoded; charset=utf-8"));
    assert!(request.body.starts_with("Action=DescribeInstances&Version=2016-11-15&"), "{}", request.body);
    assert!(request.headers.iter().all(|(_, value)| !value.contains(SECRET_KEY)) && !request.body.contains(SECRET_KEY));
    // The host logged the guest's request, and no call of the guest to the
    // credentials import: the guest named the credentials, it read none.
    let logs = logs.text();
    assert!(logs.contains("http.send{"), "{logs}");
    assert!(!logs.contains("credentials.get"), "{logs}");
    assert!(!logs.contains(SECRET_KEY));

    // By default no session token is sent, even when the Secret has one.
    let handle = aws(&config(&canned.url()), &canned.url(), credentials(&canned.url(), true)).await;
    handle.instance_metadata(&a).await.unwrap();
    let request = canned.requests().pop().unwrap();
    assert!(request.header("authorization").unwrap().starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
    assert_eq!(request.header("x-amz-security-token"), None);

    // A session token named but not bound is a clear error, before sending.
    let sent = canned.requests().len();
    let handle = aws(&with_token, &canned.url(), credentials(&canned.url(), false)).await;
    let message = cloud_error(handle.instance_metadata(&a).await);
    assert!(message.contains(r#"credential "session-token" is not bound to this provider"#), "{message}");
    assert_eq!(canned.requests().len(), sent);
}
