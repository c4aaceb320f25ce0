//! `wasm-ccm run`: the cloud-controller-manager against a cluster.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::ArgAction;
use ipnet::IpNet;
use tokio_util::sync::CancellationToken;
use wasm_ccm_controllers::{ControllerManager, Metrics, Readiness, Settings, enabled_controllers, names_route};
use wasm_ccm_host::{Engine, EngineSettings, LoadedProvider, ProviderHandle};

use crate::ProviderArgs;
use crate::signals;

/// `run` flags: upstream's names; defaults differ where upstream's are its
/// users' known pain points (one service sync at a time, 20 requests per
/// second).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The kubeconfig to use; without it, kube's defaults (`KUBECONFIG`,
    /// `~/.kube/config`, then the in-cluster service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The provider and its sandbox.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Controllers to run: `*` for all, a name to enable one, `-name` to
    /// disable one (service, cloud-node, cloud-node-lifecycle, route).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// The cluster's name, passed to the provider.
    #[arg(long, default_value = "kubernetes")]
    pub cluster_name: String,
    /// The cluster's pod networks, for the route controller (comma-separated
    /// for dual-stack).
    #[arg(long, value_delimiter = ',', value_name = "CIDR")]
    pub cluster_cidr: Vec<IpNet>,
    /// Whether routes for pod CIDRs are configured in the cloud.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub configure_cloud_routes: bool,
    /// Services synced at once (upstream: 1).
    #[arg(long, default_value_t = 20)]
    pub concurrent_service_syncs: usize,
    /// Nodes synced at once (upstream: 1).
    #[arg(long, default_value_t = 10)]
    pub concurrent_node_syncs: usize,
    /// How often the node lifecycle controller checks nodes.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub node_monitor_period: Duration,
    /// How often initialised nodes' addresses are refreshed from the cloud.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub node_status_update_frequency: Duration,
    /// How often routes are reconciled.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub route_reconciliation_period: Duration,
    /// How often every load balancer is ensured again, repairing drift in
    /// the cloud; 0 disables it.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub load_balancer_resync_period: Duration,
    /// Requests per second to the API server (upstream: 20).
    #[arg(long, default_value_t = 1000)]
    pub kube_api_qps: u32,
    /// Burst of requests to the API server (upstream: 30).
    #[arg(long, default_value_t = 2000)]
    pub kube_api_burst: u32,
}

impl RunArgs {
    /// The controllers' settings.
    ///
    /// # Errors
    /// When a flag is out of range.
    pub fn settings(&self) -> anyhow::Result<Settings> {
        let controllers =
            enabled_controllers(&self.controllers).map_err(|err| anyhow::anyhow!("--controllers: {err}"))?;
        for (flag, value) in [
            ("--concurrent-service-syncs", self.concurrent_service_syncs),
            ("--concurrent-node-syncs", self.concurrent_node_syncs),
        ] {
            anyhow::ensure!(value >= 1, "{flag} must be at least 1");
        }
        for (flag, period) in [
            ("--node-monitor-period", self.node_monitor_period),
            ("--node-status-update-frequency", self.node_status_update_frequency),
            ("--route-reconciliation-period", self.route_reconciliation_period),
        ] {
            anyhow::ensure!(!period.is_zero(), "{flag} must be longer than zero");
        }
        anyhow::ensure!(!self.cluster_name.is_empty(), "--cluster-name must not be empty");
        Ok(Settings {
            controllers,
            cluster_name: self.cluster_name.clone(),
            cluster_cidrs: self.cluster_cidr.clone(),
            route_explicitly_enabled: names_route(&self.controllers),
            configure_cloud_routes: self.configure_cloud_routes,
            concurrent_service_syncs: self.concurrent_service_syncs,
            concurrent_node_syncs: self.concurrent_node_syncs,
            node_monitor_period: self.node_monitor_period,
            node_status_update_frequency: self.node_status_update_frequency,
            route_reconciliation_period: self.route_reconciliation_period,
            load_balancer_resync_period: self.load_balancer_resync_period,
        })
    }
}

/// Checks the flags, loads the provider, then runs the controllers until a
/// signal asks to stop.
///
/// # Errors
/// When a flag, the provider or the cluster configuration is bad.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let name = args.provider.provider.file_stem().map_or("provider".into(), |stem| stem.to_string_lossy().into_owned());
    let spec = args.provider.spec(&name, &settings.cluster_name)?;
    let engine = Engine::new(EngineSettings::default())?;
    let provider = LoadedProvider::load(&engine, spec)
        .await
        .with_context(|| format!("cannot load the provider {}", args.provider.provider.display()))?;
    tracing::info!(provider = %provider.info().name, parts = ?provider.info().parts, "loaded the provider");
    let client =
        wasm_ccm_controllers::client(args.kubeconfig.as_deref(), args.kube_api_qps, args.kube_api_burst).await?;
    let manager = ControllerManager::new(client, ProviderHandle::new(provider), settings, Metrics::default());
    manager.plan()?;
    let stop = CancellationToken::new();
    signals::stop_on_signal(stop.clone())?;
    manager.run(stop, Readiness::default()).await?;
    tracing::info!("stopped");
    Ok(())
}
