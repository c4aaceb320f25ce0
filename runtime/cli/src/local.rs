//! `wasm-ccm local`: wasm-ccm on this machine, with nothing to set up. An
//! embedded API server on loopback plays the cluster, the fake provider and
//! its cloud play the cloud; sample nodes and LoadBalancer Services show the
//! controllers at work, and a kubeconfig lets kubectl look while it runs.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wasm_ccm_apiserver::{ApiServer, Config as ApiServerConfig};
use wasm_ccm_controllers::{ClientSettings, Settings, UNINITIALIZED_TAINT};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_host::{AllowList, Credentials, EngineSettings, Limits, ProviderSpec};

use crate::admin::AdminArgs;
use crate::run::{ManagerOptions, ProviderSetup, serve};
use crate::signals;

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
}

fn fake_config(cloud: &FakeCloud, nodes: usize) -> serde_json::Value {
    let instances: Vec<serde_json::Value> = (1..=nodes)
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
        .collect();
    json!({"cloud": cloud.url(), "loadBalancerPool": ["192.0.2.0/24"], "instances": instances})
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
    let api = ApiServer::start_with(SocketAddr::from((Ipv4Addr::LOCALHOST, args.api_port)), ApiServerConfig::default())
        .await
        .context("cannot start the local API server")?;
    let cloud = FakeCloud::start().await.context("cannot start the fake cloud")?;
    api.write_kubeconfig(&args.kubeconfig_out)
        .with_context(|| format!("cannot write {}", args.kubeconfig_out.display()))?;
    let client = api.client().await;
    create_samples(&client, args.nodes, args.services).await?;
    println!("local cluster at {}, fake cloud at {}", api.url(), cloud.url());
    println!("kubeconfig: {}  (try: kubectl --kubeconfig {0} get nodes,svc -o wide)", args.kubeconfig_out.display());

    let settings = Settings {
        cluster_name: "local".to_owned(),
        cluster_cidrs: vec!["10.244.0.0/16".parse()?],
        ..Settings::default()
    };
    let spec = ProviderSpec {
        name: "fake".to_owned(),
        wasm: wasm.into(),
        config: fake_config(&cloud, args.nodes).to_string().into_bytes().into(),
        cluster_name: settings.cluster_name.clone(),
        credentials: Credentials::default(),
        allow_list: AllowList::parse([cloud.url()])?,
        limits: Limits::default(),
    };
    let options = ManagerOptions {
        client: ClientSettings {
            kubeconfig: Some(args.kubeconfig_out.clone()),
            master: None,
            qps: 1000,
            burst: 2000,
            per_controller_identity: false,
        },
        settings,
        provider: ProviderSetup::fixed(spec),
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
        engine: EngineSettings::default(),
    };
    let stop = CancellationToken::new();
    signals::stop_on_signal(stop.clone())?;
    let mut controllers = tokio::spawn(serve(options, stop.clone()));
    tokio::select! {
        shown = show_progress(&client, args.nodes, args.services) => shown?,
        finished = &mut controllers => return finished?.context("the controllers stopped"),
        () = stop.cancelled() => {}
    }
    if !stop.is_cancelled() {
        println!("\nwasm-ccm keeps running; Ctrl-C stops it.");
    }
    controllers.await??;
    let _ = std::fs::remove_file(&args.kubeconfig_out);
    println!("stopped");
    Ok(())
}

/// Prints what the controllers do until every sample is done, then a
/// summary.
async fn show_progress(client: &kube::Client, nodes: usize, services: usize) -> anyhow::Result<()> {
    let node_api: Api<Node> = Api::all(client.clone());
    let service_api: Api<Service> = Api::namespaced(client.clone(), "default");
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
                let provider_id = node.spec.as_ref().and_then(|spec| spec.provider_id.clone()).unwrap_or_default();
                println!("  node {name}: initialised as {provider_id}");
            }
        }
        let service_list = service_api.list(&ListParams::default()).await?.items;
        for service in &service_list {
            let name = service.metadata.name.clone().unwrap_or_default();
            if let Some(ip) = ingress(service)
                && provisioned.insert(name.clone())
            {
                println!("  service default/{name}: load balancer at {ip}");
            }
        }
        if initialized.len() >= nodes && provisioned.len() >= services {
            print_summary(&node_list, &service_list);
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
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
    println!("\n{:<14} {:<14} PORTS", "SERVICE", "EXTERNAL IP");
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
            "{:<14} {:<14} {}",
            service.metadata.name.as_deref().unwrap_or_default(),
            ingress(service).unwrap_or_else(|| "<pending>".to_owned()),
            ports.join(","),
        );
    }
}
