//! The AWS provider end to end: the controllers, against the API server
//! harness and a real kube-apiserver, calling the AWS provider component,
//! against a real AWS API emulator (`moto_server`), one emulator and one
//! cluster per test. What the controllers did is read back from the
//! emulator with boto3.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use wasm_ccm_controllers::{SHUTDOWN_TAINT, Settings, UNINITIALIZED_TAINT};
use wasm_ccm_host::{Credentials, ProviderSpec, Seal};
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::canned_aws::CannedAws;
use wasm_ccm_tests::cluster::{NewNode, TestCluster, cloud_taints, fast_settings};
use wasm_ccm_tests::moto::{LoadBalancing, Moto, REGION, Seed, SeededInstance};
use wasm_ccm_tests::{allow, guest, load, on_both_api_servers, spec};

/// The cluster's name: its resources in AWS are tagged with it.
const CLUSTER: &str = "e2e";
const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
const FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

/// Short periods, and no route controller: only the routes test manages
/// routes.
fn settings() -> Settings {
    Settings { cluster_name: CLUSTER.to_owned(), cluster_cidrs: Vec::new(), ..fast_settings() }
}

/// The AWS provider with EC2 at `ec2` and Elastic Load Balancing at `elb`,
/// allowed to reach those two origins only.
fn aws_spec(ec2: &str, elb: &str) -> ProviderSpec {
    let config = json!({"region": REGION, "endpoints": {"ec2": ec2, "elasticloadbalancing": elb}});
    let mut spec = spec("aws", guest("provider-aws"), config.to_string().as_bytes());
    spec.allow_list = allow(&[ec2, elb]);
    let sealed: Vec<Seal> = [ec2, elb]
        .map(|origin| format!("secret-access-key=aws-sigv4-secret-access-key@{origin}").parse().unwrap())
        .into();
    spec.credentials =
        Credentials::from_pairs([("access-key-id", "AKIDEXAMPLE"), ("secret-access-key", "secret-access-key")])
            .seal(sealed)
            .expect("the secret key is bound");
    spec.cluster_name = CLUSTER.to_owned();
    spec
}

/// Runs blocking work (boto3, starting moto) off the runtime's threads, so
/// that the controllers keep running meanwhile.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.expect("the blocking work finishes")
}

/// A seeded emulator and a cluster whose controllers call the AWS provider
/// pointed at it. The cluster stops before the emulator.
struct Aws {
    cluster: TestCluster,
    moto: Arc<Moto>,
    seed: Seed,
}

/// Starts and seeds `moto_server`.
async fn moto() -> (Arc<Moto>, Seed) {
    blocking(|| {
        let moto = Moto::start().expect("moto_server starts");
        let seed = moto.seed(CLUSTER).expect("moto is seeded");
        (Arc::new(moto), seed)
    })
    .await
}

async fn aws(backend: &Backend) -> Aws {
    aws_with(backend, settings()).await
}

async fn aws_with(backend: &Backend, settings: Settings) -> Aws {
    let (moto, seed) = moto().await;
    let cluster = TestCluster::start_with_provider(backend, aws_spec(&moto.url(), &moto.url()), settings).await;
    Aws { cluster, moto, seed }
}

impl Aws {
    fn instance(&self, key: &str) -> &SeededInstance {
        self.seed.instance(key)
    }

    /// Creates the Node of a seeded instance, named by its private DNS name.
    async fn create_node(&self, key: &str, node: impl FnOnce(NewNode) -> NewNode) -> Node {
        self.cluster.create_node(node(NewNode::ready(&self.instance(key).name))).await
    }

    /// Runs a boto3 script against the emulator.
    async fn boto3(&self, script: &'static str, arg: Value) -> Value {
        let moto = self.moto.clone();
        blocking(move || moto.boto3(script, &arg).expect("the boto3 script succeeds")).await
    }

    /// Every load balancer, target group and listener in the emulator.
    async fn load_balancing(&self) -> LoadBalancing {
        let moto = self.moto.clone();
        blocking(move || moto.load_balancing().expect("ELBv2 is listed")).await
    }

    /// Waits until every target group in the emulator has exactly the
    /// instances `keys` as targets, on `node_port`.
    async fn wait_targets(&self, keys: &[&str], node_port: u16) {
        let mut expected: Vec<(String, u16)> =
            keys.iter().map(|key| (self.instance(key).id.clone(), node_port)).collect();
        expected.sort();
        let what = format!("targets {keys:?} on {node_port}");
        self.cluster
            .wait(&what, || async {
                let state = self.load_balancing().await;
                let done = !state.target_groups.is_empty()
                    && state.target_groups.iter().all(|group| group.targets == expected);
                done.then_some(())
            })
            .await;
    }
}

fn has_finalizer(service: &Service) -> bool {
    service.metadata.finalizers.iter().flatten().any(|finalizer| finalizer == FINALIZER)
}

/// The load balancer's name: `a` and the Service's UID without dashes.
fn load_balancer_name(service: &Service) -> String {
    let uid = service.metadata.uid.as_deref().expect("a uid");
    std::iter::once('a').chain(uid.chars().filter(|c| *c != '-')).take(32).collect()
}

fn node_port(service: &Service) -> u16 {
    let port = service.spec.as_ref().and_then(|spec| spec.ports.as_ref()).and_then(|ports| ports.first());
    let node_port = port.and_then(|port| port.node_port).expect("a node port");
    u16::try_from(node_port).expect("a port number")
}

/// Waits until the Service has an ingress, and returns its host name.
async fn ingress_hostname(cluster: &TestCluster, name: &str) -> String {
    let services = cluster.services();
    cluster
        .wait(&format!("an ingress host name for {name}"), || {
            let services = services.clone();
            async move {
                let service = services.get_opt(name).await.ok().flatten()?;
                service.status?.load_balancer?.ingress?.first()?.hostname.clone()
            }
        })
        .await
}

async fn wait_node_gone(cluster: &TestCluster, name: &str) {
    let nodes = cluster.nodes();
    cluster
        .wait(&format!("{name} to be deleted"), || async { nodes.get_opt(name).await.ok()?.is_none().then_some(()) })
        .await;
}

async fn nodes_are_initialized_from_ec2(backend: &Backend) {
    let aws = aws(backend).await;
    let (a, b) = (aws.instance("running-a").clone(), aws.instance("running-b").clone());
    let unknown = "ip-10-0-9-9.eu-west-1.compute.internal";
    for name in [a.name.as_str(), b.name.as_str(), unknown] {
        aws.cluster.create_node(NewNode { uninitialized: true, ..NewNode::ready(name) }).await;
    }
    let nodes = aws.cluster.nodes();
    for instance in [&a, &b] {
        let node = aws
            .cluster
            .wait(&format!("{} to be initialized", instance.name), || async {
                let node = nodes.get(&instance.name).await.ok()?;
                (!cloud_taints(&node).contains(&UNINITIALIZED_TAINT.to_owned())).then_some(node)
            })
            .await;
        let provider_id = node.spec.as_ref().and_then(|spec| spec.provider_id.clone());
        assert_eq!(provider_id, Some(format!("aws:///{}/{}", instance.zone, instance.id)));
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let expected: BTreeMap<&str, &str> = [
            ("node.kubernetes.io/instance-type", instance.instance_type.as_str()),
            ("beta.kubernetes.io/instance-type", instance.instance_type.as_str()),
            ("topology.kubernetes.io/zone", instance.zone.as_str()),
            ("failure-domain.beta.kubernetes.io/zone", instance.zone.as_str()),
            ("topology.kubernetes.io/region", REGION),
            ("failure-domain.beta.kubernetes.io/region", REGION),
        ]
        .into();
        for (key, value) in expected {
            assert_eq!(labels.get(key).map(String::as_str), Some(value), "{} {key}", instance.name);
        }
        let addresses: Vec<(String, String)> = node
            .status
            .and_then(|status| status.addresses)
            .unwrap_or_default()
            .into_iter()
            .map(|address| (address.type_, address.address))
            .collect();
        let mut expected = vec![("InternalIP", instance.private_ip.as_str())];
        if !instance.public_ip.is_empty() {
            expected.push(("ExternalIP", &instance.public_ip));
        }
        expected.extend([("InternalDNS", instance.name.as_str()), ("Hostname", &instance.name)]);
        if !instance.public_dns.is_empty() {
            expected.push(("ExternalDNS", &instance.public_dns));
        }
        let expected: Vec<(String, String)> =
            expected.into_iter().map(|(kind, address)| (kind.to_owned(), address.to_owned())).collect();
        assert_eq!(addresses, expected, "{}: EC2's addresses in upstream's order", instance.name);
    }
    assert_eq!(a.instance_type, "t3.medium");
    assert!(!a.public_ip.is_empty() && b.public_ip.is_empty(), "the seed gives only running-a a public address");
    assert_eq!((a.zone.as_str(), b.zone.as_str()), ("eu-west-1a", "eu-west-1b"));

    // A node EC2 does not know is left tainted.
    let node = nodes.get(unknown).await.unwrap();
    assert!(cloud_taints(&node).contains(&UNINITIALIZED_TAINT.to_owned()), "{unknown} keeps its taint");
    assert_eq!(node.spec.and_then(|spec| spec.provider_id), None);
}

async fn a_service_gets_a_network_load_balancer_and_leaves_nothing_behind(backend: &Backend) {
    let aws = aws(backend).await;
    aws.create_node("running-a", |node| node).await;
    aws.create_node("running-b", |node| node).await;
    let created = aws.cluster.create_service("web", &[80]).await;
    let hostname = ingress_hostname(&aws.cluster, "web").await;
    let services = aws.cluster.services();
    let service = services.get("web").await.unwrap();
    assert!(has_finalizer(&service), "the finalizer comes with the load balancer");

    let state = aws.load_balancing().await;
    assert_eq!(state.load_balancers.len(), 1, "{state:?}");
    let balancer = &state.load_balancers[0];
    assert_eq!(balancer.name, load_balancer_name(&created));
    assert_eq!(hostname, balancer.dns_name, "the ingress is the load balancer's DNS name");
    assert_eq!((balancer.load_balancer_type.as_str(), balancer.scheme.as_str()), ("network", "internet-facing"));
    let tags = BTreeMap::from([
        (format!("kubernetes.io/cluster/{CLUSTER}"), "owned".to_owned()),
        ("kubernetes.io/service-name".to_owned(), "default/web".to_owned()),
    ]);
    assert_eq!(balancer.tags, tags);
    let listeners: Vec<(u16, &str)> =
        state.listeners.iter().map(|listener| (listener.port, listener.protocol.as_str())).collect();
    assert_eq!(listeners, [(80, "TCP")]);
    assert_eq!(state.target_groups.len(), 1);
    assert_eq!(state.listeners[0].target_group, state.target_groups[0].arn);
    let mut both = vec![(aws.instance("running-a").id.clone(), node_port(&service))];
    both.push((aws.instance("running-b").id.clone(), node_port(&service)));
    both.sort();
    assert_eq!(state.target_groups[0].targets, both, "both nodes' instances on the node port");
    aws.cluster
        .wait("EnsuredLoadBalancer", || async {
            (aws.cluster.event_count("EnsuredLoadBalancer").await >= 1).then_some(())
        })
        .await;

    services.delete("web", &DeleteParams::default()).await.unwrap();
    aws.cluster
        .wait("the Service to be gone", || async { services.get_opt("web").await.ok()?.is_none().then_some(()) })
        .await;
    // The finalizer goes only once the provider deleted everything.
    let state = aws.load_balancing().await;
    assert!(state.load_balancers.is_empty(), "{:?}", state.load_balancers);
    assert!(state.target_groups.is_empty(), "{:?}", state.target_groups);
    assert!(state.listeners.is_empty(), "{:?}", state.listeners);
    assert!(aws.cluster.event_count("DeletedLoadBalancer").await >= 1);
}

async fn targets_follow_the_nodes(backend: &Backend) {
    let aws = aws(backend).await;
    aws.create_node("running-a", |node| node).await;
    // A stopped instance is never a target.
    aws.create_node("stopped", |node| node).await;
    let service = aws.cluster.create_service("web", &[80]).await;
    let port = node_port(&service);
    ingress_hostname(&aws.cluster, "web").await;
    aws.wait_targets(&["running-a"], port).await;

    aws.create_node("running-b", |node| node).await;
    aws.wait_targets(&["running-a", "running-b"], port).await;

    let nodes = aws.cluster.nodes();
    let name_b = aws.instance("running-b").name.clone();
    let exclude = json!({"metadata": {"labels": {EXCLUDE_LABEL: ""}}});
    nodes.patch(&name_b, &PatchParams::default(), &Patch::Merge(exclude)).await.unwrap();
    aws.wait_targets(&["running-a"], port).await;

    nodes.delete(&aws.instance("running-a").name, &DeleteParams::default()).await.unwrap();
    aws.wait_targets(&[], port).await;

    let include = json!({"metadata": {"labels": {EXCLUDE_LABEL: null}}});
    nodes.patch(&name_b, &PatchParams::default(), &Patch::Merge(include)).await.unwrap();
    aws.wait_targets(&["running-b"], port).await;
    assert!(aws.cluster.event_count("UpdatedLoadBalancer").await >= 1);
    let state = aws.load_balancing().await;
    assert_eq!((state.load_balancers.len(), state.listeners.len(), state.target_groups.len()), (1, 1, 1));
}

async fn terminated_instances_lose_their_nodes_and_stopped_ones_are_tainted(backend: &Backend) {
    let aws = aws(backend).await;
    aws.create_node("running-a", |node| node).await;
    let running_b = aws.create_node("running-b", |node| NewNode { uninitialized: true, ..node }).await;
    aws.create_node("stopped", |node| NewNode { ready: false, ..node }).await;
    aws.create_node("terminated", |node| NewNode { ready: false, ..node }).await;
    let nodes = aws.cluster.nodes();

    wait_node_gone(&aws.cluster, &aws.instance("terminated").name).await;
    aws.cluster
        .wait("a DeletingNode event", || async { (aws.cluster.event_count("DeletingNode").await >= 1).then_some(()) })
        .await;
    let stopped = aws.instance("stopped").name.clone();
    aws.cluster
        .wait("the stopped node to be tainted", || async {
            cloud_taints(&nodes.get(&stopped).await.ok()?).contains(&SHUTDOWN_TAINT.to_owned()).then_some(())
        })
        .await;

    // An instance terminated after its node was initialized: found by
    // provider ID, gone, and its node with it once it is not Ready.
    let name_b = running_b.metadata.name.clone().unwrap();
    let provider_id = aws
        .cluster
        .wait("running-b to get its provider ID", || async { nodes.get(&name_b).await.ok()?.spec?.provider_id })
        .await;
    assert_eq!(provider_id, format!("aws:///eu-west-1b/{}", aws.instance("running-b").id));
    let terminate = "ec2.terminate_instances(InstanceIds=[arg])\nprint('{}')";
    aws.boto3(terminate, json!(aws.instance("running-b").id)).await;
    assert!(nodes.get_opt(&name_b).await.unwrap().is_some(), "a Ready node stays");
    aws.cluster.set_ready(&name_b, false).await;
    wait_node_gone(&aws.cluster, &name_b).await;

    let node_a = nodes.get(&aws.instance("running-a").name).await.unwrap();
    assert_eq!(cloud_taints(&node_a), Vec::<String>::new(), "a running instance's node is left alone");
    let stopped = nodes.get(&stopped).await.unwrap();
    assert_eq!(cloud_taints(&stopped), [SHUTDOWN_TAINT], "the stopped instance's node is kept, tainted");
}

/// A zone outage: every node NotReady. The lifecycle asks EC2 about them all
/// in one DescribeInstances a pass, not two a node.
async fn an_outage_costs_ec2_a_request_a_pass(backend: &Backend) {
    // No address refresh, whose requests would mix with the lifecycle's.
    let quiet = Settings { node_status_update_frequency: Duration::from_secs(3600), ..settings() };
    let aws = aws_with(backend, quiet).await;
    for key in ["running-a", "running-b", "stopped", "terminated"] {
        aws.create_node(key, |node| NewNode { ready: false, ..node }).await;
    }
    wait_node_gone(&aws.cluster, &aws.instance("terminated").name).await;
    let (nodes, stopped) = (aws.cluster.nodes(), aws.instance("stopped").name.clone());
    aws.cluster
        .wait("the stopped node to be tainted", || async {
            cloud_taints(&nodes.get(&stopped).await.ok()?).contains(&SHUTDOWN_TAINT.to_owned()).then_some(())
        })
        .await;

    // Whether three instances exist and are shut down, in one request.
    let passes = || aws.cluster.counter("cloud_node_lifecycle_passes", &[("outcome", "answered")]);
    one_describe_a_pass(&aws, passes, "three nodes").await;
}

/// Over 2 s of passes every 200 ms, counted by `passes`: moto served
/// DescribeInstances alone, one a pass, give or take a pass in flight at
/// either end.
async fn one_describe_a_pass(aws: &Aws, passes: impl Fn() -> u64, nodes: &str) {
    aws.moto.forget_requests().unwrap();
    let before = passes();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (passes, actions) = (passes() - before, aws.moto.actions().unwrap());
    let describes = actions.iter().filter(|action| *action == "DescribeInstances").count();
    assert!(passes >= 4, "{passes} passes in 2 s, every 200 ms");
    assert_eq!(actions.len(), describes, "nothing but DescribeInstances: {actions:?}");
    let passes = usize::try_from(passes).unwrap();
    assert!(describes <= passes + 1, "{describes} DescribeInstances in {passes} passes over {nodes}");
    assert!(describes + 1 >= passes, "{describes} in {passes} passes");
}

/// The address refresh asks EC2 about every initialised node in one
/// DescribeInstances a pass, not one a node.
async fn the_address_refresh_costs_ec2_a_request_a_pass(backend: &Backend) {
    let frequent = Settings { node_status_update_frequency: Duration::from_millis(200), ..settings() };
    let aws = aws_with(backend, frequent).await;
    let nodes = aws.cluster.nodes();
    for key in ["running-a", "running-b"] {
        let name = aws.create_node(key, |node| NewNode { uninitialized: true, ..node }).await.metadata.name.unwrap();
        aws.cluster
            .wait("the node to be initialised", || async { nodes.get(&name).await.ok()?.spec?.provider_id })
            .await;
    }

    // Every node Ready: the lifecycle asks nothing, the refresh alone asks,
    // the metadata of both nodes in one request.
    let passes = || aws.cluster.counter("cloud_node_status_passes", &[]);
    one_describe_a_pass(&aws, passes, "two nodes").await;
}

/// The pod routes in the cluster's route table as (CIDR, instance ID),
/// sorted, and whether each instance checks source and destination.
const ROUTES: &str = r#"
table = ec2.describe_route_tables(RouteTableIds=[arg["table"]])["RouteTables"][0]
routes = sorted([r["DestinationCidrBlock"], r["InstanceId"]] for r in table["Routes"] if r.get("InstanceId"))
checks = {}
for instance in arg["instances"]:
    found = ec2.describe_instance_attribute(InstanceId=instance, Attribute="sourceDestCheck")
    checks[instance] = found["SourceDestCheck"]["Value"]
print(json.dumps({"routes": routes, "sourceDestCheck": checks}))
"#;

async fn routes_follow_the_nodes_pod_cidrs(backend: &Backend) {
    let aws = aws_with(backend, Settings { cluster_cidrs: fast_settings().cluster_cidrs, ..settings() }).await;
    let (a, b) = (aws.instance("running-a").clone(), aws.instance("running-b").clone());
    let terminated = aws.instance("terminated").id.clone();
    // A route of the cluster's network to a terminated instance: a blackhole
    // the controller removes.
    let stale = "ec2.create_route(RouteTableId=arg['table'], DestinationCidrBlock='10.244.9.0/24', InstanceId=arg['instance'])\nprint('{}')";
    aws.boto3(stale, json!({"table": aws.seed.route_table, "instance": terminated})).await;
    aws.create_node("running-a", |node| NewNode { pod_cidr: Some("10.244.1.0/24".into()), ..node }).await;
    aws.create_node("running-b", |node| NewNode { pod_cidr: Some("10.244.2.0/24".into()), ..node }).await;

    let arg = json!({"table": aws.seed.route_table, "instances": [a.id, b.id]});
    let expected = json!([["10.244.1.0/24", a.id], ["10.244.2.0/24", b.id]]);
    let table = aws
        .cluster
        .wait("a route to each node's instance and none stale", || async {
            let table = aws.boto3(ROUTES, arg.clone()).await;
            (table["routes"] == expected).then_some(table)
        })
        .await;
    assert_eq!(table["sourceDestCheck"], json!({&a.id: false, &b.id: false}), "both instances forward pod traffic");

    let nodes = aws.cluster.nodes();
    for name in [&a.name, &b.name] {
        aws.cluster
            .wait("NetworkUnavailable False/RouteCreated", || async {
                let node = nodes.get(name).await.ok()?;
                let conditions = node.status?.conditions?;
                let network = conditions.into_iter().find(|condition| condition.type_ == "NetworkUnavailable")?;
                (network.status == "False" && network.reason.as_deref() == Some("RouteCreated")).then_some(())
            })
            .await;
    }

    nodes.delete(&b.name, &DeleteParams::default()).await.unwrap();
    let expected = json!([["10.244.1.0/24", a.id]]);
    aws.cluster
        .wait("running-b's route to go", || async {
            (aws.boto3(ROUTES, arg.clone()).await["routes"] == expected).then_some(())
        })
        .await;
}

/// The notes of the Warning `SyncLoadBalancerFailed` events.
async fn failures(cluster: &TestCluster) -> Vec<String> {
    let events = cluster.events("SyncLoadBalancerFailed").await;
    events
        .into_iter()
        .filter(|event| event.type_.as_deref() == Some("Warning"))
        .filter_map(|event| event.message)
        .collect()
}

async fn wait_failure(cluster: &TestCluster, needles: &[&str]) -> String {
    cluster
        .wait(&format!("a SyncLoadBalancerFailed event with {needles:?}"), || async {
            failures(cluster).await.into_iter().find(|note| needles.iter().all(|needle| note.contains(needle)))
        })
        .await
}

async fn aws_errors_reach_the_service_until_aws_answers(backend: &Backend) {
    let (moto, seed) = moto().await;
    let canned = CannedAws::start().await.unwrap();
    canned.answer(
        400,
        "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>",
    );
    // EC2 at the emulator, Elastic Load Balancing at the canned server.
    let cluster = TestCluster::start_with_provider(backend, aws_spec(&moto.url(), &canned.url()), settings()).await;
    let aws = Aws { cluster, moto, seed };
    aws.create_node("running-a", |node| node).await;
    aws.cluster.create_service("web", &[80]).await;

    let note = wait_failure(&aws.cluster, &["Throttling", "Rate exceeded"]).await;
    assert!(note.starts_with("Error syncing load balancer: failed to ensure load balancer: "), "{note}");
    assert!(note.contains("retry after 5s: AWS throttled DescribeLoadBalancers: Throttling: Rate exceeded"), "{note}");

    // Then a refusal, which the provider's retry brings to the Service.
    let denied = "User: arn:aws:iam::123456789012:user/ccm is not authorized to perform: \
                  elasticloadbalancing:DescribeLoadBalancers";
    canned.answer(
        403,
        format!(
            "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>{denied}</Message></Error><RequestId>r</RequestId></ErrorResponse>"
        ),
    );
    let note = wait_failure(&aws.cluster, &["AccessDenied"]).await;
    assert!(note.contains(&format!("AWS AccessDenied: {denied} (DescribeLoadBalancers)")), "{note}");
    let service = aws.cluster.services().get("web").await.unwrap();
    let ingress = service.status.and_then(|status| status.load_balancer).and_then(|lb| lb.ingress);
    assert!(ingress.unwrap_or_default().is_empty(), "no ingress while AWS fails");
    assert!(aws.load_balancing().await.load_balancers.is_empty());

    // AWS answers normally again: the next attempt builds the load balancer.
    aws.cluster.provider.swap(load(aws_spec(&aws.moto.url(), &aws.moto.url())).await);
    let hostname = ingress_hostname(&aws.cluster, "web").await;
    let state = aws.load_balancing().await;
    assert_eq!(state.load_balancers.len(), 1);
    assert_eq!(state.load_balancers[0].dns_name, hostname);
    assert!(canned.requests().len() >= 2, "both failures came from the canned server");
}

on_both_api_servers!(
    nodes_are_initialized_from_ec2,
    a_service_gets_a_network_load_balancer_and_leaves_nothing_behind,
    targets_follow_the_nodes,
    terminated_instances_lose_their_nodes_and_stopped_ones_are_tainted,
    an_outage_costs_ec2_a_request_a_pass,
    the_address_refresh_costs_ec2_a_request_a_pass,
    routes_follow_the_nodes_pod_cidrs,
    aws_errors_reach_the_service_until_aws_answers,
);
