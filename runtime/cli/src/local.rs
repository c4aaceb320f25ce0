//! `wasm-ccm local`: wasm-ccm on this machine, with nothing to set up. An
//! embedded API server on loopback plays the cluster, the fake provider and
//! its cloud play the cloud; sample nodes and LoadBalancer Services show the
//! controllers at work, and a kubeconfig lets kubectl look while it runs.
//! With `--kubeconfig`, an existing cluster (kind, k3d, a real one) plays
//! the cluster instead: the fake cloud's instances are its nodes, and its
//! LoadBalancer Services get addresses from the pool.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wasm_ccm_apiserver::{ApiServer, Config as ApiServerConfig};
use wasm_ccm_controllers::{ControllerName, Settings, UNINITIALIZED_TAINT};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_host::{AllowList, Credentials, EngineSettings, Limits, ProviderSpec};
use wasm_ccm_kube::ClientSettings;

use crate::run::admin::AdminArgs;
use crate::run::signals;
use crate::run::{ManagerOptions, ProviderSetup, Providers, serve};

#[cfg(embedded_fake)]
const EMBEDDED_FAKE: Option<&[u8]> = Some(include_bytes!(env!("WASM_CCM_EMBEDDED_FAKE")));
#[cfg(not(embedded_fake))]
const EMBEDDED_FAKE: Option<&[u8]> = None;

/// Names given to the sample Services, in turn.
const SERVICE_NAMES: [&str; 4] = ["web", "api", "shop", "dns"];

/// `local` flags.
#[derive(Debug, clap::Args)]
pub struct LocalArgs {
    /// The embedded API server's port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub api_port: u16,
    /// Where to write the kubeconfig for kubectl.
    #[arg(long, value_name = "FILE", default_value = "wasm-ccm-local.kubeconfig")]
    pub kubeconfig_out: PathBuf,
    /// Sample nodes to create.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Sample LoadBalancer Services to create.
    #[arg(long, default_value_t = 4)]
    pub services: usize,
    /// The admin server's port on 127.0.0.1 (plain HTTP); 0 turns it off.
    #[arg(long, default_value_t = 10258)]
    pub admin_port: u16,
    /// The fake provider component, when this binary was built without it.
    #[arg(long, value_name = "FILE")]
    pub provider: Option<PathBuf>,
    /// Run against this existing cluster instead of an embedded one: its
    /// nodes become the fake cloud's instances and its LoadBalancer
    /// Services get addresses from the pool. Nothing is created in it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["api_port", "kubeconfig_out", "nodes", "services"])]
    pub kubeconfig: Option<PathBuf>,
    /// The networks load balancers take their addresses from,
    /// comma-separated.
    #[arg(long, value_name = "CIDR", value_delimiter = ',', default_value = "192.0.2.0/24")]
    pub load_balancer_pool: Vec<IpNet>,
}

/// The sample cluster's instances.
fn sample_instances(nodes: usize) -> Vec<Value> {
    (1..=nodes)
        .map(|i| {
            json!({
                "name": format!("local-node-{i}"),
                "id": format!("i-{i:04}"),
                "type": if i % 2 == 0 { "fake.large" } else { "fake.medium" },
                "zone": if i % 2 == 0 { "local-b" } else { "local-a" },
                "region": "local-1",
                "addresses": [
                    {"type": "InternalIP", "address": format!("10.0.0.{}", 10 + i)},
                    {"type": "ExternalIP", "address": format!("203.0.113.{}", 10 + i)},
                ],
            })
        })
        .collect()
}

/// An existing cluster's nodes as instances, with the addresses, zone,
/// region and type they already report. Nodes of another cloud (a provider
/// ID of another scheme) are left out: the fake provider cannot answer for
/// them.
fn cluster_instances(nodes: &[Node]) -> Vec<Value> {
    nodes
        .iter()
        .filter(|node| {
            let provider_id = node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()).unwrap_or_default();
            provider_id.is_empty() || provider_id.starts_with("fake://")
        })
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let or =
                |key: &str, default: &str| Some(label(node, key)).filter(|v| !v.is_empty()).unwrap_or(default.into());
            let addresses: Vec<Value> = node
                .status
                .iter()
                .flat_map(|status| status.addresses.iter().flatten())
                .map(|address| json!({"type": address.type_, "address": address.address}))
                .collect();
            json!({
                "name": name,
                "id": name,
                "type": or("node.kubernetes.io/instance-type", "fake.local"),
                "zone": or("topology.kubernetes.io/zone", "local-a"),
                "region": or("topology.kubernetes.io/region", "local-1"),
                "addresses": addresses,
            })
        })
        .collect()
}

fn fake_config(cloud: &FakeCloud, pool: &[IpNet], instances: Vec<Value>) -> Value {
    let pool: Vec<String> = pool.iter().map(ToString::to_string).collect();
    json!({"cloud": cloud.url(), "loadBalancerPool": pool, "instances": instances})
}

async fn create_samples(client: &kube::Client, nodes: usize, services: usize) -> anyhow::Result<()> {
    let node_api: Api<Node> = Api::all(client.clone());
    for i in 1..=nodes {
        let name = format!("local-node-{i}");
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {
                "podCIDR": format!("10.244.{i}.0/24"),
                "podCIDRs": [format!("10.244.{i}.0/24")],
                "taints": [{"key": UNINITIALIZED_TAINT, "value": "true", "effect": "NoSchedule"}],
            },
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "Hostname", "address": name}],
                "nodeInfo": {"kubeletVersion": "v1.33.0"},
            },
        }))?;
        node_api.create(&PostParams::default(), &node).await?;
    }
    let service_api: Api<Service> = Api::namespaced(client.clone(), "default");
    for i in 0..services {
        let base = SERVICE_NAMES[i % SERVICE_NAMES.len()];
        let name =
            if i < SERVICE_NAMES.len() { base.to_owned() } else { format!("{base}-{}", i / SERVICE_NAMES.len()) };
        let ports = match base {
            "web" => json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]),
            "dns" => json!([{"name": "dns", "port": 53, "protocol": "UDP"}]),
            _ => json!([{"name": "http", "port": 8080}]),
        };
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "ports": ports, "selector": {"app": name}},
        }))?;
        service_api.create(&PostParams::default(), &service).await?;
    }
    Ok(())
}

/// The cluster `local` runs against.
struct Cluster {
    /// The embedded API server, when there is no existing cluster.
    embedded: Option<ApiServer>,
    client: kube::Client,
    kubeconfig: PathBuf,
    /// The fake cloud's instances.
    instances: Vec<Value>,
    /// The nodes and LoadBalancer Services to wait for.
    nodes: usize,
    services: usize,
}

impl Cluster {
    /// The embedded API server with sample nodes and Services.
    async fn embedded(args: &LocalArgs) -> anyhow::Result<Cluster> {
        let api =
            ApiServer::start_with(SocketAddr::from((Ipv4Addr::LOCALHOST, args.api_port)), ApiServerConfig::default())
                .await
                .context("cannot start the local API server")?;
        api.write_kubeconfig(&args.kubeconfig_out)
            .with_context(|| format!("cannot write {}", args.kubeconfig_out.display()))?;
        let client = api.client().await;
        create_samples(&client, args.nodes, args.services).await?;
        Ok(Cluster {
            embedded: Some(api),
            client,
            kubeconfig: args.kubeconfig_out.clone(),
            instances: sample_instances(args.nodes),
            nodes: args.nodes,
            services: args.services,
        })
    }

    /// An existing cluster, as it is.
    async fn existing(kubeconfig: &Path) -> anyhow::Result<Cluster> {
        let read =
            Kubeconfig::read_from(kubeconfig).with_context(|| format!("cannot read {}", kubeconfig.display()))?;
        let config = kube::Config::from_custom_kubeconfig(read, &KubeConfigOptions::default()).await?;
        let client = wasm_ccm_kube::client::unlimited(config)?;
        let nodes = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .with_context(|| format!("cannot list the nodes of the cluster of {}", kubeconfig.display()))?
            .items;
        let services = load_balancers(&client).await?.len();
        Ok(Cluster {
            embedded: None,
            client,
            kubeconfig: kubeconfig.to_owned(),
            instances: cluster_instances(&nodes),
            nodes: nodes.len(),
            services,
        })
    }
}

/// Runs the local cluster until Ctrl-C.
///
/// # Errors
/// When a server cannot start or the provider cannot be loaded.
pub async fn local(args: LocalArgs) -> anyhow::Result<()> {
    let wasm: Vec<u8> = match (&args.provider, EMBEDDED_FAKE) {
        (Some(path), _) => std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
        (None, Some(embedded)) => embedded.to_vec(),
        (None, None) => anyhow::bail!(
            "this binary was built without the fake provider; pass --provider target/wasm/provider_fake.wasm"
        ),
    };
    let cluster = match &args.kubeconfig {
        None => Cluster::embedded(&args).await?,
        Some(kubeconfig) => Cluster::existing(kubeconfig).await?,
    };
    let cloud = FakeCloud::start().await.context("cannot start the fake cloud")?;
    let kubeconfig = cluster.kubeconfig.display();
    match &cluster.embedded {
        Some(api) => {
            println!("local cluster at {}, fake cloud at {}", api.url(), cloud.url());
            println!("kubeconfig: {kubeconfig}  (try: kubectl --kubeconfig {kubeconfig} get nodes,svc -o wide)");
        }
        None => println!("cluster of {kubeconfig}, fake cloud at {}", cloud.url()),
    }

    let settings = match cluster.embedded {
        Some(_) => Settings {
            cluster_name: "local".to_owned(),
            cluster_cidrs: vec!["10.244.0.0/16".parse()?],
            ..Settings::default()
        },
        // Someone else's cluster: no routes, and never a node deleted for
        // an instance the fake cloud does not know.
        None => Settings {
            cluster_name: "local".to_owned(),
            controllers: [ControllerName::Service, ControllerName::CloudNode].into(),
            ..Settings::default()
        },
    };
    let spec = ProviderSpec {
        name: "fake".to_owned(),
        wasm: wasm.into(),
        config: fake_config(&cloud, &args.load_balancer_pool, cluster.instances.clone())
            .to_string()
            .into_bytes()
            .into(),
        cluster_name: settings.cluster_name.clone(),
        credentials: Credentials::default(),
        allow_list: AllowList::parse([cloud.url()])?,
        trusted_certificates: None,
        limits: Limits::default(),
    };
    let options = ManagerOptions {
        client: ClientSettings {
            kubeconfig: Some(cluster.kubeconfig.clone()),
            master: None,
            qps: 1000,
            burst: 2000,
            per_controller_identity: false,
        },
        settings,
        providers: Providers::Single(Box::new(ProviderSetup::fixed(spec))),
        admin: AdminArgs {
            secure_port: args.admin_port,
            bind_address: Ipv4Addr::LOCALHOST.into(),
            tls_cert_file: None,
            tls_private_key_file: None,
            admin_plain_http: true,
            delegation: Default::default(),
        },
        leader: None,
        shutdown_grace: Duration::from_secs(10),
        engine: EngineSettings { compiler: crate::compile_worker::compiler()?, ..EngineSettings::default() },
        version_record: None,
    };
    let stop = CancellationToken::new();
    signals::stop_on_signal(stop.clone())?;
    let mut controllers = tokio::spawn(serve(options, stop.clone()));
    tokio::select! {
        shown = show_progress(&cluster.client, cluster.nodes, cluster.services) => shown?,
        finished = &mut controllers => return finished?.context("the controllers stopped"),
        () = stop.cancelled() => {}
    }
    if !stop.is_cancelled() {
        println!("\nwasm-ccm keeps running; Ctrl-C stops it.");
    }
    controllers.await??;
    if cluster.embedded.is_some() {
        let _ = std::fs::remove_file(&cluster.kubeconfig);
    }
    println!("stopped");
    Ok(())
}

/// The cluster's LoadBalancer Services, in every namespace.
async fn load_balancers(client: &kube::Client) -> anyhow::Result<Vec<Service>> {
    let services = Api::<Service>::all(client.clone()).list(&ListParams::default()).await?.items;
    Ok(services
        .into_iter()
        .filter(|service| service.spec.as_ref().and_then(|spec| spec.type_.as_deref()) == Some("LoadBalancer"))
        .collect())
}

/// Prints what the controllers do until every sample is done, then a
/// summary.
async fn show_progress(client: &kube::Client, nodes: usize, services: usize) -> anyhow::Result<()> {
    let node_api: Api<Node> = Api::all(client.clone());
    let mut initialized = BTreeSet::new();
    let mut provisioned = BTreeSet::new();
    println!("\ninitialising {nodes} nodes and provisioning {services} load balancers...");
    loop {
        let node_list = node_api.list(&ListParams::default()).await?.items;
        for node in &node_list {
            let name = node.metadata.name.clone().unwrap_or_default();
            let tainted =
                node.spec.iter().flat_map(|spec| spec.taints.iter().flatten()).any(|t| t.key == UNINITIALIZED_TAINT);
            if !tainted && initialized.insert(name.clone()) {
                match node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()).unwrap_or_default() {
                    "" => println!("  node {name}: initialised"),
                    provider_id => println!("  node {name}: initialised as {provider_id}"),
                }
            }
        }
        let service_list = load_balancers(client).await?;
        for service in &service_list {
            let name = service_name(service);
            if let Some(ip) = ingress(service)
                && provisioned.insert(name.clone())
            {
                println!("  service {name}: load balancer at {ip}");
            }
        }
        if initialized.len() >= nodes && provisioned.len() >= services {
            print_summary(&node_list, &service_list);
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn service_name(service: &Service) -> String {
    format!(
        "{}/{}",
        service.metadata.namespace.as_deref().unwrap_or_default(),
        service.metadata.name.as_deref().unwrap_or_default()
    )
}

fn ingress(service: &Service) -> Option<String> {
    let first = service.status.as_ref()?.load_balancer.as_ref()?.ingress.as_ref()?.first()?.clone();
    first.ip.or(first.hostname)
}

fn label(node: &Node, key: &str) -> String {
    node.metadata.labels.as_ref().and_then(|labels| labels.get(key).cloned()).unwrap_or_default()
}

fn print_summary(nodes: &[Node], services: &[Service]) {
    println!("\n{:<14} {:<14} {:<12} {:<8} ADDRESSES", "NODE", "PROVIDER ID", "TYPE", "ZONE");
    for node in nodes {
        let addresses: Vec<String> = node
            .status
            .iter()
            .flat_map(|status| status.addresses.iter().flatten())
            .map(|address| format!("{}={}", address.type_, address.address))
            .collect();
        println!(
            "{:<14} {:<14} {:<12} {:<8} {}",
            node.metadata.name.as_deref().unwrap_or_default(),
            node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()).unwrap_or_default(),
            label(node, "node.kubernetes.io/instance-type"),
            label(node, "topology.kubernetes.io/zone"),
            addresses.join(" "),
        );
    }
    println!("\n{:<20} {:<14} PORTS", "SERVICE", "EXTERNAL IP");
    for service in services {
        let ports: Vec<String> = service
            .spec
            .iter()
            .flat_map(|spec| spec.ports.iter().flatten())
            .map(|port| {
                let protocol = port.protocol.as_deref().unwrap_or("TCP");
                format!("{}:{}/{protocol}", port.port, port.node_port.unwrap_or_default())
            })
            .collect();
        println!(
            "{:<20} {:<14} {}",
            service_name(service),
            ingress(service).unwrap_or_else(|| "<pending>".to_owned()),
            ports.join(","),
        );
    }
}
