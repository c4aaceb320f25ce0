//! A zone outage against the AWS provider: thousands of instances in
//! `moto_server`, tagged for the cluster, and their nodes NotReady, served
//! by the `wasm-ccm` binary (default settings but a call deadline moto can
//! meet) against the API server harness, once with the node lifecycle
//! controller alone and once with the cloud node controller alone, its
//! address refresh every 5 s. Reported: the EC2 requests of each pass (from
//! moto's recording of the requests it served over three passes, every one
//! answered), beside the goal of one request per 500 nodes.
//!
//! Needs the release `wasm-ccm` (`cargo build --release -p wasm-ccm`), the
//! AWS provider (`providers/build.sh`) and `moto_server`.
//! `BENCH_AWS_OUTAGE_NODES` lists the node counts (default `2000,5000`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark: a failure stops the run that met it"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use serde_json::json;
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_bench::services::create_all;
use wasm_ccm_bench::{metric_sum, wasm_ccm_run};
use wasm_ccm_tests::moto::{Moto, REGION, SeededInstance};
use wasm_ccm_tests::{free_port, repository};

/// The binary's default `--cluster-name`, which the instances are tagged for.
const CLUSTER: &str = "kubernetes";
/// The passes measured.
const PASSES: f64 = 3.0;
const TIMEOUT: Duration = Duration::from_secs(900);
/// The provider's call deadline: moto answers a listing of 5000 instances
/// in tens of seconds, past the default 30 s, where EC2 answers a page of a
/// thousand in about one.
const DEADLINE: &str = "180s";

/// `arg["count"]` running instances in a subnet of their own in VPC
/// `arg["vpc"]`, tagged for the cluster, a thousand a request.
const INSTANCES: &str = r#"
image = ec2.describe_images()["Images"][0]["ImageId"]
zone = ec2.describe_availability_zones()["AvailabilityZones"][0]["ZoneName"]
subnet = ec2.create_subnet(VpcId=arg["vpc"], CidrBlock="10.0.128.0/17", AvailabilityZone=zone)["Subnet"]["SubnetId"]
tags = [{"ResourceType": "instance", "Tags": [{"Key": "kubernetes.io/cluster/" + arg["cluster"], "Value": "owned"}]}]
described = []
left = arg["count"]
while left > 0:
    count = min(left, 1000)
    made = ec2.run_instances(ImageId=image, MinCount=count, MaxCount=count, InstanceType="m5.large",
                             SubnetId=subnet, TagSpecifications=tags)["Instances"]
    for instance in made:
        described.append({
            "id": instance["InstanceId"], "name": instance["PrivateDnsName"], "state": "running",
            "zone": instance["Placement"]["AvailabilityZone"], "type": instance["InstanceType"],
            "privateIp": instance["PrivateIpAddress"], "publicIp": "", "publicDns": "",
        })
    left -= count
print(json.dumps(described))
"#;

/// A NotReady node of `instance`, initialised: named by its private DNS
/// name, with its provider ID.
fn node(instance: &SeededInstance) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": instance.name, "labels": {"kubernetes.io/hostname": instance.name}},
        "spec": {"providerID": format!("aws:///{}/{}", instance.zone, instance.id)},
    }))
    .expect("a node")
}

/// The passes of one controller that a run measures.
struct Passes {
    /// Its name, as `--controllers` takes it.
    controller: &'static str,
    /// What it asks EC2 in a pass.
    asks: &'static str,
    /// Its flags.
    flags: &'static [&'static str],
    /// The counter of its passes, and of those the cloud refused.
    passes: &'static str,
    refused: &'static str,
}

const LIFECYCLE: Passes = Passes {
    controller: "cloud-node-lifecycle-controller",
    asks: "the node lifecycle: whether each instance exists and is shut down",
    flags: &[],
    passes: "cloud_node_lifecycle_passes_total",
    refused: "cloud_node_lifecycle_passes_total{outcome=\"refused\"",
};

const REFRESH: Passes = Passes {
    controller: "cloud-node-controller",
    asks: "the address refresh: each instance's metadata",
    flags: &["--node-status-update-frequency", "5s"],
    passes: "cloud_node_status_passes_total",
    refused: "reconcile_errors_total{controller=\"cloud-node-status\"",
};

/// The EC2 requests of [`PASSES`] passes of `measured`, by action, and how
/// long the passes took.
async fn outage(nodes: usize, measured: &Passes, dir: &Path) -> anyhow::Result<(Vec<String>, Duration)> {
    let (moto, instances) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let moto = Moto::start()?;
        let seed = moto.seed(CLUSTER)?;
        let made = moto.boto3(INSTANCES, &json!({"count": nodes, "vpc": seed.vpc, "cluster": CLUSTER}))?;
        let instances: Vec<SeededInstance> = serde_json::from_value(made)?;
        Ok((moto, instances))
    })
    .await??;
    anyhow::ensure!(instances.len() == nodes, "moto made {} instances", instances.len());
    let api = ApiServer::start().await?;
    let client = api.client().await;
    create_all(&Api::<Node>::all(client), instances.iter().map(node).collect()).await?;
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig)?;
    let config = dir.join("aws.json");
    let endpoints = json!({"ec2": moto.url(), "elasticloadbalancing": moto.url()});
    std::fs::write(&config, json!({"region": REGION, "endpoints": endpoints}).to_string())?;
    let credentials = dir.join("aws-credentials");
    std::fs::create_dir_all(&credentials)?;
    std::fs::write(credentials.join("access-key-id"), "AKIDEXAMPLE")?;
    std::fs::write(credentials.join("secret-access-key"), "secret")?;
    let port = free_port()?;
    let mut command = wasm_ccm_run(&kubeconfig)?;
    command
        .args(["--admin-plain-http", "--bind-address", "127.0.0.1", "--secure-port", &port.to_string()])
        // One controller alone, so that its requests are all there are.
        .args(["--controllers", measured.controller])
        .args(measured.flags)
        .args(["--provider-deadline", DEADLINE])
        .arg("--provider")
        .arg(repository().join("target/wasm/provider_aws.wasm"))
        .arg("--cloud-config")
        .arg(&config)
        .arg("--provider-credentials")
        .arg(&credentials)
        .args(["--provider-allow", &moto.url()]);
    let mut child = command.spawn()?;
    let result = async {
        // From the end of one pass to the end of the third after it: moto
        // records the requests of exactly those passes.
        let passes = || metric_sum(port, measured.passes);
        let mut last = passes().unwrap_or_default();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            anyhow::ensure!(child.try_wait()?.is_none(), "wasm-ccm exited");
            anyhow::ensure!(Instant::now() < deadline, "no pass ended");
            let now = passes().unwrap_or_default();
            if now > last && now >= 1.0 {
                last = now;
                break;
            }
            last = now;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        moto.forget_requests()?;
        let refused = || metric_sum(port, measured.refused);
        let refused_before = refused()?;
        let started = Instant::now();
        while passes()? < last + PASSES {
            anyhow::ensure!(Instant::now() < deadline, "the passes did not end");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let elapsed = started.elapsed();
        anyhow::ensure!(refused()? == refused_before, "EC2 refused a measured pass: see wasm-ccm's log");
        Ok((moto.actions()?, elapsed))
    }
    .await;
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn main() -> anyhow::Result<()> {
    let counts: Vec<usize> = std::env::var("BENCH_AWS_OUTAGE_NODES")
        .unwrap_or_else(|_| "2000,5000".to_owned())
        .split(',')
        .map(|count| count.trim().parse().map_err(|_| anyhow::anyhow!("BENCH_AWS_OUTAGE_NODES: {count:?}")))
        .collect::<anyhow::Result<_>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let dir = tempfile::Builder::new().prefix("wasm-ccm-bench-aws-outage-").tempdir()?;
    runtime.block_on(async {
        println!("## A zone outage, the AWS provider against moto\n");
        for measured in [LIFECYCLE, REFRESH] {
            println!("{}\n", measured.asks);
            println!(
                "| NotReady nodes | EC2 requests in {PASSES} passes | per pass | goal (nodes / 500) | time a pass |"
            );
            println!("|---|---|---|---|---|");
            for &nodes in &counts {
                let (actions, elapsed) = outage(nodes, &measured, dir.path()).await?;
                let describes = actions.iter().filter(|action| *action == "DescribeInstances").count();
                anyhow::ensure!(describes == actions.len(), "requests besides DescribeInstances: {actions:?}");
                println!(
                    "| {nodes} | {describes} | {:.1} | {} | {:.1} s |",
                    describes as f64 / PASSES,
                    nodes / 500,
                    elapsed.as_secs_f64() / PASSES
                );
            }
            println!();
        }
        anyhow::Ok(())
    })
}
