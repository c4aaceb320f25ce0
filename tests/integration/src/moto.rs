//! A real AWS API emulator for the AWS provider's tests: `moto_server` on a
//! free loopback port, stopped when dropped, seeded with a cluster's VPC,
//! subnets, route table and instances, and read back through boto3.

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use crate::{Exited, free_port};

/// The region everything is seeded in.
pub const REGION: &str = "eu-west-1";

/// How long moto may take to answer after it starts.
const STARTUP: Duration = Duration::from_secs(30);

/// Calls boto3 against the emulator: the script gets `ec2` and `elbv2`
/// clients and the JSON argument as `arg`, and prints one JSON value.
const PRELUDE: &str = r#"
import json, sys, boto3
session = boto3.session.Session(aws_access_key_id="seed", aws_secret_access_key="seed", region_name=sys.argv[2])
ec2 = session.client("ec2", endpoint_url=sys.argv[1])
elbv2 = session.client("elbv2", endpoint_url=sys.argv[1])
arg = json.loads(sys.argv[3])
"#;

/// Seeds a cluster: a VPC with two subnets in two zones tagged for it, an
/// untagged third one, a route table tagged for it, and four instances
/// whose private DNS names are their Node names: two running, one stopped,
/// one terminated.
const SEED: &str = r#"
tag = [{"Key": "kubernetes.io/cluster/" + arg["cluster"], "Value": "owned"}]
vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
subnets = []
for cidr, zone, tagged in [("10.0.1.0/24", "a", True), ("10.0.2.0/24", "b", True), ("10.0.3.0/24", "c", False)]:
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=sys.argv[2] + zone)["Subnet"]["SubnetId"]
    if tagged:
        ec2.create_tags(Resources=[subnet], Tags=tag)
    subnets.append(subnet)
table = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
ec2.create_tags(Resources=[table], Tags=tag)
image = ec2.describe_images()["Images"][0]["ImageId"]
instances = {}
for key, subnet, ip, kind, public in [
    ("running-a", subnets[0], "10.0.1.10", "t3.medium", True),
    ("running-b", subnets[1], "10.0.2.10", "m5.large", False),
    ("stopped", subnets[0], "10.0.1.11", "t3.small", False),
    ("terminated", subnets[1], "10.0.2.11", "t3.small", False),
]:
    interface = {"DeviceIndex": 0, "SubnetId": subnet, "PrivateIpAddress": ip, "AssociatePublicIpAddress": public}
    made = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType=kind, NetworkInterfaces=[interface])
    instances[key] = made["Instances"][0]["InstanceId"]
ec2.stop_instances(InstanceIds=[instances["stopped"]])
ec2.terminate_instances(InstanceIds=[instances["terminated"]])
described = {}
for reservation in ec2.describe_instances(InstanceIds=list(instances.values()))["Reservations"]:
    for instance in reservation["Instances"]:
        described[instance["InstanceId"]] = {
            "id": instance["InstanceId"],
            "name": instance.get("PrivateDnsName", ""),
            "state": instance["State"]["Name"],
            "zone": instance["Placement"]["AvailabilityZone"],
            "type": instance["InstanceType"],
            "privateIp": instance.get("PrivateIpAddress", ""),
            "publicIp": instance.get("PublicIpAddress", ""),
            "publicDns": instance.get("PublicDnsName", ""),
        }
print(json.dumps({
    "vpc": vpc,
    "taggedSubnets": subnets[:2],
    "untaggedSubnet": subnets[2],
    "routeTable": table,
    "instances": {key: described[id] for key, id in instances.items()},
}))
"#;

/// Everything ELBv2 holds, sorted, with tags and targets.
const LOAD_BALANCING: &str = r#"
def tags(arns):
    if not arns:
        return {}
    found = []
    for start in range(0, len(arns), 20):
        found += elbv2.describe_tags(ResourceArns=arns[start:start + 20])["TagDescriptions"]
    return {d["ResourceArn"]: {t["Key"]: t["Value"] for t in d["Tags"]} for d in found}
def every(operation, key):
    return [item for page in elbv2.get_paginator(operation).paginate() for item in page[key]]
balancers, listeners = [], []
for lb in every("describe_load_balancers", "LoadBalancers"):
    balancers.append({
        "arn": lb["LoadBalancerArn"], "name": lb["LoadBalancerName"], "scheme": lb["Scheme"], "type": lb["Type"],
        "dnsName": lb["DNSName"], "subnets": sorted(z["SubnetId"] for z in lb["AvailabilityZones"]),
    })
    for listener in elbv2.describe_listeners(LoadBalancerArn=lb["LoadBalancerArn"])["Listeners"]:
        listeners.append({
            "arn": listener["ListenerArn"], "loadBalancer": lb["LoadBalancerArn"], "port": listener["Port"],
            "protocol": listener["Protocol"], "targetGroup": listener["DefaultActions"][0].get("TargetGroupArn", ""),
        })
groups = []
for group in every("describe_target_groups", "TargetGroups"):
    health = elbv2.describe_target_health(TargetGroupArn=group["TargetGroupArn"])["TargetHealthDescriptions"]
    groups.append({
        "arn": group["TargetGroupArn"], "name": group["TargetGroupName"], "port": group["Port"],
        "protocol": group["Protocol"], "targetType": group["TargetType"], "vpc": group.get("VpcId", ""),
        "healthCheckProtocol": group.get("HealthCheckProtocol", ""),
        "targets": sorted([d["Target"]["Id"], d["Target"]["Port"]] for d in health),
    })
all_tags = tags([b["arn"] for b in balancers] + [g["arn"] for g in groups] + [l["arn"] for l in listeners])
for item in balancers + groups + listeners:
    item["tags"] = all_tags.get(item["arn"], {})
print(json.dumps({
    "loadBalancers": sorted(balancers, key=lambda b: b["name"]),
    "targetGroups": sorted(groups, key=lambda g: g["name"]),
    "listeners": sorted(listeners, key=lambda l: (l["port"], l["protocol"])),
}))
"#;

/// A running `moto_server`; it is killed when dropped.
pub struct Moto {
    child: Child,
    address: SocketAddr,
    /// Where moto records the requests it serves, one JSON object a line.
    recording: tempfile::TempDir,
}

/// What [`Moto::seed`] made.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seed {
    /// The VPC.
    pub vpc: String,
    /// The two subnets tagged for the cluster, in zones `a` and `b`.
    pub tagged_subnets: Vec<String>,
    /// A subnet in zone `c` without the cluster's tag.
    pub untagged_subnet: String,
    /// The route table tagged for the cluster.
    pub route_table: String,
    /// The instances: `running-a`, `running-b`, `stopped`, `terminated`.
    pub instances: std::collections::BTreeMap<String, SeededInstance>,
}

impl Seed {
    /// A seeded instance by key.
    ///
    /// # Panics
    /// When there is no such instance.
    pub fn instance(&self, key: &str) -> &SeededInstance {
        self.instances.get(key).unwrap_or_else(|| panic!("no seeded instance {key}"))
    }
}

/// An instance as EC2 described it after seeding.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeededInstance {
    /// `i-…`.
    pub id: String,
    /// Its private DNS name, the Node name.
    pub name: String,
    /// Its state.
    pub state: String,
    /// Its availability zone.
    pub zone: String,
    /// Its instance type.
    #[serde(rename = "type")]
    pub instance_type: String,
    /// Its private IP.
    pub private_ip: String,
    /// Its public IP, if any.
    pub public_ip: String,
    /// Its public DNS name, if any.
    pub public_dns: String,
}

/// What ELBv2 holds, as [`Moto::load_balancing`] lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancing {
    /// Every load balancer, by name.
    pub load_balancers: Vec<ListedLoadBalancer>,
    /// Every target group, by name.
    pub target_groups: Vec<ListedTargetGroup>,
    /// Every listener, by port and protocol.
    pub listeners: Vec<ListedListener>,
}

/// A load balancer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedLoadBalancer {
    /// ARN.
    pub arn: String,
    /// Name.
    pub name: String,
    /// `internet-facing` or `internal`.
    pub scheme: String,
    /// `network`, …
    #[serde(rename = "type")]
    pub load_balancer_type: String,
    /// DNS name.
    pub dns_name: String,
    /// Subnet IDs, sorted.
    pub subnets: Vec<String>,
    /// Tags.
    pub tags: std::collections::BTreeMap<String, String>,
}

/// A target group.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTargetGroup {
    /// ARN.
    pub arn: String,
    /// Name.
    pub name: String,
    /// Port.
    pub port: u16,
    /// Protocol.
    pub protocol: String,
    /// `instance`, …
    pub target_type: String,
    /// VPC.
    pub vpc: String,
    /// Health check protocol.
    pub health_check_protocol: String,
    /// Registered targets as (instance ID, port), sorted.
    pub targets: Vec<(String, u16)>,
    /// Tags.
    pub tags: std::collections::BTreeMap<String, String>,
}

/// A listener.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedListener {
    /// ARN.
    pub arn: String,
    /// Its load balancer's ARN.
    pub load_balancer: String,
    /// Port.
    pub port: u16,
    /// Protocol.
    pub protocol: String,
    /// The target group it forwards to.
    pub target_group: String,
    /// Tags.
    pub tags: std::collections::BTreeMap<String, String>,
}

impl Moto {
    /// Starts `moto_server` on a free loopback port and waits until it
    /// accepts connections; tries another port if another process took
    /// the one it was given.
    ///
    /// # Errors
    /// When it cannot be started or does not come up in time.
    pub fn start() -> anyhow::Result<Self> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match Self::start_on(free_port()?) {
                Err(err) if attempts < 3 && err.downcast_ref::<Exited>().is_some() => continue,
                started => return started,
            }
        }
    }

    fn start_on(port: u16) -> anyhow::Result<Self> {
        let recording = tempfile::tempdir()?;
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("MOTO_ENABLE_RECORDING", "True")
            .env("MOTO_RECORDER_FILEPATH", recording.path().join("requests"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start moto_server (pip install 'moto[server]')")?;
        let mut moto = Moto { child, address: SocketAddr::from(([127, 0, 0, 1], port)), recording };
        let deadline = Instant::now() + STARTUP;
        while TcpStream::connect_timeout(&moto.address, Duration::from_millis(200)).is_err() {
            if let Some(status) = moto.child.try_wait()? {
                return Err(Exited(format!("moto_server exited with {status} before answering on port {port}")).into());
            }
            if Instant::now() > deadline {
                bail!("moto_server did not answer on port {port} within {STARTUP:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(moto)
    }

    /// Forgets the requests served so far.
    ///
    /// # Errors
    /// When the recording cannot be written.
    pub fn forget_requests(&self) -> anyhow::Result<()> {
        Ok(std::fs::write(self.recording.path().join("requests"), "")?)
    }

    /// The `Action` of every Query API request served since the start or
    /// [`Moto::forget_requests`], in order.
    ///
    /// # Errors
    /// When the recording cannot be read or parsed.
    pub fn actions(&self) -> anyhow::Result<Vec<String>> {
        let text = std::fs::read_to_string(self.recording.path().join("requests")).unwrap_or_default();
        let mut actions = Vec::new();
        for line in text.lines().filter(|line| !line.is_empty()) {
            let request: Value = serde_json::from_str(line).context("a recorded request")?;
            let body = request["body"].as_str().unwrap_or_default();
            let body = if request["body_encoded"] == true {
                String::from_utf8_lossy(&base64::engine::general_purpose::STANDARD.decode(body)?).into_owned()
            } else {
                body.to_owned()
            };
            let url = request["url"].as_str().unwrap_or_default();
            let query = url.split_once('?').map_or("", |(_, query)| query);
            let action = [body.as_str(), query]
                .into_iter()
                .flat_map(|params| params.split('&'))
                .find_map(|param| param.strip_prefix("Action="));
            if let Some(action) = action {
                actions.push(action.to_owned());
            }
        }
        Ok(actions)
    }

    /// `http://127.0.0.1:<port>`, the endpoint of every service.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Runs a boto3 `script` (see [`PRELUDE`]) with `arg` and parses what it
    /// prints.
    ///
    /// # Errors
    /// When the script fails or prints something else than JSON.
    pub fn boto3(&self, script: &str, arg: &Value) -> anyhow::Result<Value> {
        let output = Command::new("python3")
            .arg("-c")
            .arg(format!("{PRELUDE}\n{script}"))
            .args([self.url(), REGION.to_owned(), arg.to_string()])
            .stdin(Stdio::null())
            .output()
            .context("cannot run python3")?;
        if !output.status.success() {
            bail!("boto3 script failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr));
        }
        serde_json::from_slice(&output.stdout)
            .with_context(|| format!("boto3 script printed {:?}", String::from_utf8_lossy(&output.stdout)))
    }

    /// Seeds the cluster `cluster`.
    ///
    /// # Errors
    /// When boto3 fails.
    pub fn seed(&self, cluster: &str) -> anyhow::Result<Seed> {
        Ok(serde_json::from_value(self.boto3(SEED, &serde_json::json!({ "cluster": cluster }))?)?)
    }

    /// Every load balancer, target group and listener.
    ///
    /// # Errors
    /// When boto3 fails.
    pub fn load_balancing(&self) -> anyhow::Result<LoadBalancing> {
        Ok(serde_json::from_value(self.boto3(LOAD_BALANCING, &Value::Null)?)?)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
