//! The AWS provider beside the fake one: 200 LoadBalancer Services on 4
//! nodes, served by the `wasm-ccm` binary (a child process, default
//! settings) against the API server harness, first with the fake provider
//! and its cloud, then with the AWS provider against `moto_server`; the
//! time until every Service has an ingress, and the API requests. The AWS
//! provider reaches moto through a loopback proxy that counts its requests
//! by action and times moto's answers.
//!
//! Needs the release `wasm-ccm` (`cargo build --release -p wasm-ccm`) in
//! the target directory cargo uses (`CARGO_TARGET_DIR`, else `target/`),
//! the providers (`providers/build.sh`) and `moto_server`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::Api;
use serde_json::json;
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_bench::services::{create_all, service, wait_for_ingress};
use wasm_ccm_bench::{peak_memory_kib, wasm_ccm_run};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::moto::{Moto, REGION, SeededInstance};
use wasm_ccm_tests::repository;

const SERVICES: usize = 200;
const NODES: usize = 4;
const TIMEOUT: Duration = Duration::from_secs(900);
/// The binary's default `--cluster-name`, which the seed tags for.
const CLUSTER: &str = "kubernetes";

/// Two more running instances beside the seed's two, in the two tagged
/// subnets, described as the seed describes its own.
const MORE_INSTANCES: &str = r#"
image = ec2.describe_images()["Images"][0]["ImageId"]
made = []
for subnet, ip in [(arg["subnets"][0], "10.0.1.20"), (arg["subnets"][1], "10.0.2.20")]:
    interface = {"DeviceIndex": 0, "SubnetId": subnet, "PrivateIpAddress": ip}
    made.append(ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="m5.large",
                                  NetworkInterfaces=[interface])["Instances"][0]["InstanceId"])
described = []
for reservation in ec2.describe_instances(InstanceIds=made)["Reservations"]:
    for instance in reservation["Instances"]:
        described.append({
            "id": instance["InstanceId"], "name": instance["PrivateDnsName"], "state": instance["State"]["Name"],
            "zone": instance["Placement"]["AvailabilityZone"], "type": instance["InstanceType"],
            "privateIp": instance["PrivateIpAddress"], "publicIp": "", "publicDns": "",
        })
print(json.dumps(described))
"#;

fn node(name: &str, provider_id: &str, address: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": provider_id},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": address}],
        },
    }))
    .expect("a node")
}

/// Requests of one AWS action through the proxy.
#[derive(Debug, Default, Clone)]
struct Action {
    count: u64,
    /// The sum of moto's answer times.
    total: Duration,
    max: Duration,
}

/// A loopback proxy in front of moto that counts requests by action and
/// times moto's answers.
#[derive(Clone)]
struct Proxy {
    upstream: String,
    client: reqwest::Client,
    actions: Arc<Mutex<BTreeMap<String, Action>>>,
}

/// The `Action` of a form-encoded AWS Query request.
fn action(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .split('&')
        .find_map(|pair| pair.strip_prefix("Action="))
        .unwrap_or("(none)")
        .to_owned()
}

async fn forward(State(proxy): State<Proxy>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let action = action(&body);
    let path = uri.path_and_query().map_or("/", |path| path.as_str());
    let mut request = proxy.client.request(method, format!("{}{path}", proxy.upstream)).body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let started = Instant::now();
    let answer = match request.send().await {
        Ok(response) => {
            let status = response.status();
            let content_type = response.headers().get("content-type").cloned();
            match response.bytes().await {
                Ok(bytes) => {
                    let mut answer = (status, bytes).into_response();
                    if let Some(content_type) = content_type {
                        answer.headers_mut().insert("content-type", content_type);
                    }
                    answer
                }
                Err(err) => (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
            }
        }
        Err(err) => (StatusCode::BAD_GATEWAY, err.to_string()).into_response(),
    };
    let elapsed = started.elapsed();
    let mut actions = proxy.actions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let entry = actions.entry(action).or_default();
    entry.count += 1;
    entry.total += elapsed;
    entry.max = entry.max.max(elapsed);
    answer
}

impl Proxy {
    /// Starts the proxy to `upstream`; returns it and its URL.
    async fn start(upstream: String) -> anyhow::Result<(Self, String)> {
        let proxy = Proxy { upstream, client: reqwest::Client::new(), actions: Arc::default() };
        let router = axum::Router::new().fallback(forward).with_state(proxy.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok((proxy, url))
    }

    fn actions(&self) -> BTreeMap<String, Action> {
        self.actions.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

/// What one provider's run measured.
struct Run {
    ready_after: Duration,
    requests: u64,
    breakdown: String,
    peak_kib: u64,
    /// AWS requests by action, for the AWS provider.
    actions: BTreeMap<String, Action>,
}

/// A provider to run: the binary's provider flags and the nodes it knows.
struct Setup {
    flags: Vec<String>,
    nodes: Vec<Node>,
}

/// Creates the nodes and Services, starts `wasm-ccm` with `setup`, and
/// waits until every Service has an ingress.
async fn run(api: &ApiServer, setup: Setup, dir: &Path) -> anyhow::Result<(Duration, u64, String, u64)> {
    let client = api.client().await;
    create_all(&Api::<Node>::all(client.clone()), setup.nodes).await?;
    create_all(&Api::<Service>::namespaced(client.clone(), "default"), (0..SERVICES).map(service).collect()).await?;
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig)?;
    let mut command = wasm_ccm_run(&kubeconfig)?;
    command.args(&setup.flags);

    api.reset_requests();
    let started = Instant::now();
    let mut child = command.spawn()?;
    let result = wait_for_ingress(api, SERVICES, started, TIMEOUT, &mut child).await;
    let counts = api.requests();
    let peak = peak_memory_kib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    Ok((result?, counts.total(), counts.to_string(), peak))
}

async fn fake(dir: &Path) -> anyhow::Result<Run> {
    let api = ApiServer::start().await?;
    let cloud = FakeCloud::start().await?;
    let config = dir.join("fake.json");
    std::fs::write(&config, json!({"cloud": cloud.url(), "loadBalancerPool": ["10.128.0.0/16"]}).to_string())?;
    let nodes =
        (0..NODES).map(|index| node(&format!("node-{index}"), &format!("fake://i-{index}"), "10.0.0.1")).collect();
    let flags = vec![
        "--provider".to_owned(),
        repository().join("target/wasm/provider_fake.wasm").display().to_string(),
        "--cloud-config".to_owned(),
        config.display().to_string(),
        "--provider-allow".to_owned(),
        cloud.url(),
    ];
    let (ready_after, requests, breakdown, peak_kib) = run(&api, Setup { flags, nodes }, dir).await?;
    Ok(Run { ready_after, requests, breakdown, peak_kib, actions: BTreeMap::new() })
}

async fn aws(dir: &Path) -> anyhow::Result<Run> {
    let (moto, mut instances) = tokio::task::spawn_blocking(|| -> anyhow::Result<_> {
        let moto = Moto::start()?;
        let seed = moto.seed(CLUSTER)?;
        let more = moto.boto3(MORE_INSTANCES, &json!({"subnets": seed.tagged_subnets}))?;
        let mut instances: Vec<SeededInstance> = serde_json::from_value(more)?;
        instances.extend(["running-a", "running-b"].map(|key| seed.instance(key).clone()));
        Ok((moto, instances))
    })
    .await??;
    instances.sort_by(|a, b| a.name.cmp(&b.name));
    anyhow::ensure!(instances.len() == NODES && instances.iter().all(|instance| instance.state == "running"));
    let (proxy, url) = Proxy::start(moto.url()).await?;

    let api = ApiServer::start().await?;
    let config = dir.join("aws.json");
    let endpoints = json!({"ec2": url, "elasticloadbalancing": url});
    std::fs::write(&config, json!({"region": REGION, "endpoints": endpoints}).to_string())?;
    let credentials = dir.join("aws-credentials");
    std::fs::create_dir_all(&credentials)?;
    std::fs::write(credentials.join("access-key-id"), "AKIDEXAMPLE")?;
    std::fs::write(credentials.join("secret-access-key"), "secret")?;
    let nodes = instances
        .iter()
        .map(|instance| {
            node(&instance.name, &format!("aws:///{}/{}", instance.zone, instance.id), &instance.private_ip)
        })
        .collect();
    let flags = vec![
        "--provider".to_owned(),
        repository().join("target/wasm/provider_aws.wasm").display().to_string(),
        "--cloud-config".to_owned(),
        config.display().to_string(),
        "--provider-credentials".to_owned(),
        credentials.display().to_string(),
        "--provider-allow".to_owned(),
        url,
    ];
    let (ready_after, requests, breakdown, peak_kib) = run(&api, Setup { flags, nodes }, dir).await?;
    let actions = proxy.actions();
    let balancers = tokio::task::spawn_blocking(move || moto.load_balancing()).await??;
    anyhow::ensure!(
        balancers.load_balancers.len() == SERVICES
            && balancers.target_groups.iter().all(|group| group.targets.len() == NODES),
        "moto holds {} load balancers",
        balancers.load_balancers.len()
    );
    Ok(Run { ready_after, requests, breakdown, peak_kib, actions })
}

fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

fn report(label: &str, run: &Run) {
    println!(
        "| {label} | {:.2} s | {:.1} | {} | {} MiB |",
        run.ready_after.as_secs_f64(),
        SERVICES as f64 / run.ready_after.as_secs_f64(),
        run.requests,
        run.peak_kib / 1024,
    );
}

fn report_actions(run: &Run) {
    let total: u64 = run.actions.values().map(|action| action.count).sum();
    let busy: Duration = run.actions.values().map(|action| action.total).sum();
    println!("\nAWS requests until all had an ingress, through the proxy:\n");
    println!("| action | requests | per Service | mean answer | slowest | sum of answers |");
    println!("|---|---|---|---|---|---|");
    for (name, action) in &run.actions {
        println!(
            "| {name} | {} | {:.2} | {} | {} | {:.2} s |",
            action.count,
            action.count as f64 / SERVICES as f64,
            millis(action.total / u32::try_from(action.count.max(1)).unwrap_or(u32::MAX)),
            millis(action.max),
            action.total.as_secs_f64(),
        );
    }
    println!(
        "| total | {total} | {:.2} | {} | | {:.2} s |",
        total as f64 / SERVICES as f64,
        millis(busy / u32::try_from(total.max(1)).unwrap_or(u32::MAX)),
        busy.as_secs_f64(),
    );
    println!(
        "\n{:.1} requests in flight at moto on average ({:.2} s of answers in {:.2} s).",
        busy.as_secs_f64() / run.ready_after.as_secs_f64(),
        busy.as_secs_f64(),
        run.ready_after.as_secs_f64(),
    );
}

fn main() -> anyhow::Result<()> {
    wasm_ccm_tests::install_crypto_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let dir = std::env::temp_dir().join(format!("wasm-ccm-bench-aws-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = runtime.block_on(async {
        let fake = fake(&dir).await?;
        let aws = aws(&dir).await?;
        println!("## {SERVICES} LoadBalancer Services on {NODES} nodes, default settings\n");
        println!("| provider | all ingress after | services/s | API requests | peak RSS |");
        println!("|---|---|---|---|---|");
        report("fake", &fake);
        report("AWS against moto", &aws);
        println!(
            "\nAWS against moto took {:.1} times as long as the fake provider.",
            aws.ready_after.as_secs_f64() / fake.ready_after.as_secs_f64()
        );
        report_actions(&aws);
        println!("\nAPI requests until all had an ingress, fake:\n\n```\n{}\n```", fake.breakdown.trim_end());
        println!("\nAPI requests until all had an ingress, AWS:\n\n```\n{}\n```", aws.breakdown.trim_end());
        anyhow::Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    result
}
