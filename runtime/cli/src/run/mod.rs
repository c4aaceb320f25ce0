//! `wasm-ccm run`: the cloud-controller-manager against a cluster: its
//! flags, the providers it loads (one, or a providers file followed as it
//! changes), the admin server, and the controllers under the lease.

pub(crate) mod admin;
mod component_loader;
mod delegation;
mod process;
pub(crate) mod providers_view;
pub(crate) mod signals;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use bytesize::ByteSize;
use clap::ArgAction;
use futures::Stream;
use ipnet::IpNet;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::Cloud;
use wasm_ccm_config::{FileDefaults, PlannedProvider, ProviderLoad, SettingsArgs, SourceArgs, TrustFile, plan};
use wasm_ccm_controllers::{
    Caches, ControllerManager, IngressRanges, LeaderElectionConfig, LeaderElector, LoadBalancerPolicy, Metrics, Serves,
    Settings, enabled_controllers, max_ingress, names_route,
};
use wasm_ccm_fleet::{Fleet, Offer, Outcome};
use wasm_ccm_host::{Confinement, Engine, EngineSettings, ProviderSpec};
use wasm_ccm_kube::{ClientSettings, Clients};
use wasm_ccm_reload::{
    InputFiles, Location, Observers, ReloadMetrics, Reporter, Source, SourceSettings, StatusBoard, VersionRecord,
    config_map_reference, own_pod_reference,
};

use self::admin::{AdminArgs, Health};
use self::component_loader::ComponentLoader;
use self::providers_view::ProvidersView;
use crate::ProviderArgs;
use crate::options::leader::LeaderArgs;
use crate::options::upstream::UpstreamArgs;

/// `run` flags: upstream's names; defaults differ where upstream's are its
/// users' known pain points (one service sync at a time, 20 requests per
/// second).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The kubeconfig to use; without it, kube's defaults (`KUBECONFIG`,
    /// `~/.kube/config`, then the in-cluster service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL, instead of the kubeconfig's.
    #[arg(long, value_name = "URL")]
    pub master: Option<String>,
    /// Each controller acts as its own ServiceAccount in kube-system
    /// (service-controller, cloud-node-controller,
    /// cloud-node-lifecycle-controller, route-controller), created when
    /// missing, with a token from the TokenRequest API renewed before it
    /// expires.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub use_service_account_credentials: bool,
    /// The provider component: a `.wasm` file, an OCI artifact
    /// `oci://registry/repository:tag` (or `@sha256:<digest>`), or the
    /// `binaryData` key of a ConfigMap, `configmap:NAMESPACE/NAME/KEY`.
    /// It is watched and each new version that passes its checks is
    /// swapped in. It serves everything; see `--providers-config` for
    /// several.
    #[arg(
        long = "provider",
        value_name = "FILE|oci://REF|configmap:NS/NAME/KEY",
        env = "WASM_CCM_PROVIDER",
        required_unless_present = "providers_config",
        conflicts_with = "providers_config"
    )]
    pub provider: Option<String>,
    /// Several providers side by side, each with its source, sandbox,
    /// limits and what it serves (load balancer classes, Services without
    /// a class, nodes, routes): a YAML or JSON file, or a ConfigMap key
    /// `configmap:NAMESPACE/NAME/KEY`, watched; a change that does not
    /// check is refused and the providers serving keep serving.
    #[arg(long, value_name = "FILE|configmap:NS/NAME/KEY")]
    pub providers_config: Option<String>,
    /// A directory the providers file's paths (`source`, `signature`,
    /// `publicKey`, `cloudConfig`, `credentials`, `caFile`) may lead into,
    /// symbolic links resolved; repeated for more. Without one, a providers
    /// file naming a file is refused.
    #[arg(long, value_name = "DIR", requires = "providers_config")]
    pub providers_root: Vec<PathBuf>,
    /// What each provider of the providers file is trusted with, which the
    /// providers file may only narrow: a YAML or JSON file keyed by
    /// provider name (`publicKey`, `minimumVersion`, `sealedCredentials`,
    /// `credentials`), read at start.
    #[arg(long, value_name = "FILE", requires = "providers_config")]
    pub provider_trust: Option<PathBuf>,
    /// The provider's sandbox (with `--provider`).
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// The name the provider's logs, metrics and `/providers` entry carry;
    /// by default the file's, ConfigMap key's or repository's name.
    #[arg(long, value_name = "NAME")]
    pub provider_name: Option<String>,
    /// Where new versions of the provider come from and how they are
    /// verified.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Controllers to run: `*` for all, a name to enable one, `-name` to
    /// disable one (service, cloud-node, cloud-node-lifecycle, route).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// The cluster's name, passed to the provider.
    #[arg(long, default_value_t = Settings::default().cluster_name)]
    pub cluster_name: String,
    /// The cluster's pod networks, for the route controller (comma-separated
    /// for dual-stack).
    #[arg(long, value_delimiter = ',', value_name = "CIDR")]
    pub cluster_cidr: Vec<IpNet>,
    /// The cluster's Service networks (as the API server's flag), which no
    /// load balancer may answer as its ingress (comma-separated for
    /// dual-stack).
    #[arg(long, value_delimiter = ',', value_name = "CIDR")]
    pub service_cluster_ip_range: Vec<IpNet>,
    /// Where the provider's load balancer ingress answers must fall:
    /// networks, IP addresses, host names and `*.suffix`es
    /// (comma-separated); others are refused and nothing is published.
    #[arg(long, value_delimiter = ',', value_name = "RANGE")]
    pub provider_ingress_ranges: Vec<String>,
    /// The most entries one of the provider's ingress answers may hold (1
    /// to 16); by default an address for each of the Service's IP families
    /// for each of its ports. A larger answer is refused whole.
    #[arg(long, value_name = "N", value_parser = parse_max_ingress)]
    pub provider_max_ingress: Option<NonZeroUsize>,
    /// Whether routes for pod CIDRs are configured in the cloud.
    #[arg(
        long,
        default_value_t = Settings::default().configure_cloud_routes,
        action = ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub configure_cloud_routes: bool,
    /// Services synced at once (upstream: 1).
    #[arg(long, default_value_t = Settings::default().concurrent_service_syncs)]
    pub concurrent_service_syncs: usize,
    /// Nodes initialised at once (upstream: 1).
    #[arg(long, default_value_t = Settings::default().concurrent_node_syncs)]
    pub concurrent_node_syncs: usize,
    /// Initialised nodes whose addresses are refreshed at once (upstream: 1).
    #[arg(long, default_value_t = Settings::default().concurrent_node_status_updates)]
    pub concurrent_node_status_updates: usize,
    /// Not-Ready nodes the node lifecycle controller checks at once
    /// (upstream: 1).
    #[arg(long, default_value_t = Settings::default().concurrent_node_lifecycle_syncs)]
    pub concurrent_node_lifecycle_syncs: usize,
    /// How often the node lifecycle controller checks nodes.
    #[arg(long, default_value_t = Settings::default().node_monitor_period.into())]
    pub node_monitor_period: humantime::Duration,
    /// How often initialised nodes' addresses are refreshed from the cloud.
    #[arg(long, default_value_t = Settings::default().node_status_update_frequency.into())]
    pub node_status_update_frequency: humantime::Duration,
    /// How often routes are reconciled.
    #[arg(long, default_value_t = Settings::default().route_reconciliation_period.into())]
    pub route_reconciliation_period: humantime::Duration,
    /// How often every load balancer is ensured again, repairing drift in
    /// the cloud; 0 disables it.
    #[arg(long, default_value_t = Settings::default().load_balancer_resync_period.into())]
    pub load_balancer_resync_period: humantime::Duration,
    /// Requests per second to the API server (upstream: 20).
    #[arg(long, default_value_t = 1000)]
    pub kube_api_qps: u32,
    /// Burst of requests to the API server (upstream: 30).
    #[arg(long, default_value_t = 2000)]
    pub kube_api_burst: u32,
    /// How long syncs in flight may take to finish after SIGTERM or SIGINT.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub shutdown_grace_period: Duration,
    /// A directory to keep compiled providers in, so that a restart or a
    /// reload of a version compiled before skips compiling; only entries
    /// this host wrote and authenticated are loaded.
    #[arg(long, value_name = "DIR")]
    pub compile_cache: Option<PathBuf>,
    /// How much compiled code the compile cache keeps; the least recently
    /// used entries are removed beyond it.
    #[arg(long, value_name = "SIZE", default_value = "128MiB")]
    pub compile_cache_max_size: ByteSize,
    /// Leader election.
    #[command(flatten)]
    pub leader: LeaderArgs,
    /// The admin server.
    #[command(flatten)]
    pub admin: AdminArgs,
    /// Upstream's flags that mean nothing here.
    #[command(flatten)]
    pub upstream: UpstreamArgs,
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
            ("--concurrent-node-status-updates", self.concurrent_node_status_updates),
            ("--concurrent-node-lifecycle-syncs", self.concurrent_node_lifecycle_syncs),
        ] {
            anyhow::ensure!(value >= 1, "{flag} must be at least 1");
        }
        for (flag, period) in [
            ("--node-monitor-period", *self.node_monitor_period),
            ("--node-status-update-frequency", *self.node_status_update_frequency),
            ("--route-reconciliation-period", *self.route_reconciliation_period),
        ] {
            anyhow::ensure!(!period.is_zero(), "{flag} must be longer than zero");
        }
        anyhow::ensure!(!self.cluster_name.is_empty(), "--cluster-name must not be empty");
        Ok(Settings {
            controllers,
            cluster_name: self.cluster_name.clone(),
            cluster_cidrs: self.cluster_cidr.clone(),
            service_cidrs: self.service_cluster_ip_range.clone(),
            route_explicitly_enabled: names_route(&self.controllers),
            configure_cloud_routes: self.configure_cloud_routes,
            concurrent_service_syncs: self.concurrent_service_syncs,
            concurrent_node_syncs: self.concurrent_node_syncs,
            concurrent_node_status_updates: self.concurrent_node_status_updates,
            concurrent_node_lifecycle_syncs: self.concurrent_node_lifecycle_syncs,
            node_monitor_period: *self.node_monitor_period,
            node_status_update_frequency: *self.node_status_update_frequency,
            route_reconciliation_period: *self.route_reconciliation_period,
            watch_based_routes: self.upstream.watch_based_routes()?,
            load_balancer_resync_period: *self.load_balancer_resync_period,
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
    // A single provider's limits, or those of a providers file's ceilings.
    let limits = args.settings.limits()?;
    let provider = match (&args.providers_config, &args.provider) {
        (Some(config), _) => {
            let location: Location = config.parse().context("--providers-config")?;
            anyhow::ensure!(
                !matches!(location, Location::Oci(_)),
                "--providers-config is a file or a ConfigMap key, not {location}"
            );
            let roots = Confinement::beneath(&args.providers_root)
                .map_err(|(root, err)| anyhow::anyhow!("--providers-root {}: {err}", root.display()))?;
            let trust = match &args.provider_trust {
                Some(path) => TrustFile::read(path)?,
                None => TrustFile::default(),
            };
            let defaults = FileDefaults {
                cluster_name: settings.cluster_name.clone(),
                poll_interval: args.source.poll_interval,
                registry: args.source.registry.clone(),
                roots,
                trust,
                ceilings: limits.clone(),
                transparency_log: args.source.transparency_log()?,
            };
            let settings = SourceSettings { poll_interval: args.source.poll_interval, ..SourceSettings::new(location) };
            Providers::File(Box::new(ProvidersFileSetup { settings, defaults }))
        }
        (None, Some(provider)) => {
            let provider = ProviderArgs { provider: provider.clone(), settings: args.settings.clone() };
            let location = provider.location()?;
            let name = args.provider_name.clone().unwrap_or_else(|| location.default_name());
            if name.trim().is_empty() {
                anyhow::bail!("--provider-name must not be empty");
            }
            let ingress_ranges =
                IngressRanges::new(&args.provider_ingress_ranges).context("--provider-ingress-ranges")?;
            Providers::Single(Box::new(ProviderSetup {
                template: provider.template(&name, &settings.cluster_name)?,
                source: Some(args.source.settings(location)?),
                inputs: provider.input_files(),
                load_balancers: LoadBalancerPolicy {
                    ingress_ranges,
                    max_ingress: args.provider_max_ingress,
                    ..LoadBalancerPolicy::default()
                },
            }))
        }
        (None, None) => anyhow::bail!("--provider or --providers-config is needed"),
    };
    let leader = args.leader.config()?;
    args.upstream.report();
    let stop = CancellationToken::new();
    signals::stop_on_signal(stop.clone())?;
    let options = ManagerOptions {
        client: ClientSettings {
            kubeconfig: args.kubeconfig.clone(),
            master: args.master.clone(),
            qps: args.kube_api_qps,
            burst: args.kube_api_burst,
            per_controller_identity: args.use_service_account_credentials,
        },
        settings,
        providers: provider,
        admin: args.admin.clone(),
        leader,
        shutdown_grace: args.shutdown_grace_period,
        engine: EngineSettings {
            compile_cache: args.compile_cache.clone(),
            compile_cache_max_bytes: args.compile_cache_max_size.as_u64(),
            compiler: crate::compile_worker::compiler()?,
            max_memory: limits.memory,
            ..EngineSettings::default()
        },
        version_record: Some((
            args.leader.leader_elect_resource_namespace.clone(),
            format!("{}-provider-versions", args.leader.leader_elect_resource_name),
        )),
    };
    serve(options, stop).await
}

/// The providers to run.
pub(crate) enum Providers {
    /// One, serving everything.
    Single(Box<ProviderSetup>),
    /// Those of a providers file, followed.
    File(Box<ProvidersFileSetup>),
}

/// Where the providers file is, and what the flags give its providers.
pub(crate) struct ProvidersFileSetup {
    /// Where the file is, and how often it is polled.
    settings: SourceSettings,
    /// What the flags give every provider of it.
    defaults: FileDefaults,
}

/// The provider to run and where its new versions come from.
pub(crate) struct ProviderSetup {
    /// Its name, cluster name, allow-list and limits, first configuration
    /// and credentials; its component too when `source` is `None`.
    pub(crate) template: ProviderSpec,
    /// Where versions come from; `None`: the template's component, fixed.
    pub(crate) source: Option<SourceSettings>,
    /// Its configuration file and credentials directory, watched.
    pub(crate) inputs: InputFiles,
    /// What the operator sets for its load balancers.
    pub(crate) load_balancers: LoadBalancerPolicy,
}

impl ProviderSetup {
    /// The component of `spec`, never reloaded.
    #[cfg(feature = "local")]
    pub(crate) fn fixed(spec: ProviderSpec) -> Self {
        ProviderSetup {
            template: spec,
            source: None,
            inputs: InputFiles::default(),
            load_balancers: LoadBalancerPolicy::default(),
        }
    }

    /// The one provider of a single-provider run, serving everything it
    /// supports.
    fn planned(self) -> PlannedProvider {
        PlannedProvider {
            name: Arc::from(self.template.name.as_str()),
            spec: ProviderLoad::single(self.template, self.source, self.inputs),
            serves: Serves::everything(),
            load_balancers: self.load_balancers,
            fit_to_support: true,
        }
    }
}

/// `--provider-max-ingress`, within its range.
fn parse_max_ingress(most: &str) -> Result<NonZeroUsize, String> {
    let most = most.parse::<usize>().map_err(|err| format!("{most:?}: {err}"))?;
    max_ingress(most).map_err(|err| err.to_string())
}

/// The versions of the providers file `source` offers, each read with
/// `defaults`; a version that cannot be fetched is logged and skipped.
fn offers(source: Source, defaults: FileDefaults) -> impl Stream<Item = Offer<ProviderLoad>> + Send + Unpin {
    Box::pin(futures::stream::unfold(source, move |mut source| {
        let defaults = defaults.clone();
        async move {
            loop {
                match source.next().await {
                    Ok(candidate) => {
                        let plan = plan(&candidate.wasm, &defaults).map_err(Into::into);
                        return Some((Offer { origin: candidate.origin, plan }, source));
                    }
                    Err(err) => tracing::warn!("the providers file: {err}; the providers serving keep serving"),
                }
            }
        }
    }))
}

/// Tells of a change of the providers serving: in an event regarding the
/// providers file, and on the status board for a provider that left.
fn report(outcome: &Outcome<'_>, reporter: Option<&Reporter>, status: &StatusBoard) {
    match (outcome, reporter) {
        (Outcome::Refused { origin, reason }, Some(reporter)) => {
            reporter.rejected(format!("refused the providers file from {origin}: {reason}"));
        }
        (Outcome::Serving { name }, Some(reporter)) => {
            reporter.reloaded(format!("provider {name} serves as the providers file says"));
        }
        (Outcome::Failed(failure), Some(reporter)) => {
            reporter.rejected(format!(
                "provider {} of the providers file did not load: {}",
                failure.name,
                failure.why()
            ));
        }
        (Outcome::Left { name }, _) => status.remove(name),
        (_, None) => {}
    }
}

/// Everything a controller manager needs, whether from `run` or `local`.
pub(crate) struct ManagerOptions {
    pub(crate) client: ClientSettings,
    pub(crate) settings: Settings,
    pub(crate) providers: Providers,
    pub(crate) admin: AdminArgs,
    pub(crate) leader: Option<LeaderElectionConfig>,
    pub(crate) shutdown_grace: Duration,
    pub(crate) engine: EngineSettings,
    /// The Lease (`namespace`, `name`) recording the highest version of
    /// each provider accepted under roll-back protection.
    pub(crate) version_record: Option<(String, String)>,
}

/// Serves the admin endpoints, loads the provider and keeps it up to date
/// with its source, and runs the controllers (under leader election when
/// asked) until `stop`; then lets syncs in flight finish within the
/// shutdown grace period.
///
/// # Errors
/// When the provider cannot be loaded, the cluster cannot be reached, the
/// controllers cannot start, or leadership is lost.
pub(crate) async fn serve(options: ManagerOptions, stop: CancellationToken) -> anyhow::Result<()> {
    let engine = Engine::new(options.engine.clone())?;
    let metrics = Metrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    engine.metrics().register(&mut registry);
    let reloads = ReloadMetrics::default();
    reloads.register(&mut registry);
    process::register(&mut registry);
    let providers = StatusBoard::default();
    let ceilings = match &options.providers {
        Providers::Single(setup) => setup.template.limits.clone(),
        Providers::File(setup) => setup.defaults.ceilings.clone(),
    };
    let view = ProvidersView::new(providers.clone(), ceilings);
    let health = Health::default();
    admin::serve(&options.admin, &options.client, health.clone(), registry, view.clone()).await?;
    {
        let (health, stop) = (health.clone(), stop.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            health.stopping();
        });
    }

    let clients = Clients::new(&options.client).await?;
    let client = clients.root();
    // The caches fill while the providers load, and stay warm while this
    // replica waits to lead.
    let caches = Caches::start(client.clone(), &options.settings, stop.child_token());
    let loader = ComponentLoader {
        engine: engine.clone(),
        client: client.clone(),
        observers: Observers {
            metrics: reloads,
            status: providers,
            reporter: None,
            versions: options
                .version_record
                .as_ref()
                .map(|(namespace, name)| VersionRecord::new(client.clone(), namespace, name)),
        },
    };
    if own_pod_reference().is_none() {
        tracing::info!(
            "POD_NAME and POD_NAMESPACE are not set: provider reloads are logged and counted, not reported as events"
        );
    }
    let members = match options.providers {
        Providers::Single(setup) => {
            let fleet = Fleet::start(loader, vec![(*setup).planned()], stop.child_token()).await?;
            fleet.members()
        }
        Providers::File(setup) => {
            let ProvidersFileSetup { settings, defaults } = *setup;
            let regarding = match &settings.location {
                Location::ConfigMap { namespace, name, .. } => Some(config_map_reference(namespace, name)),
                _ => own_pod_reference(),
            };
            let mut source: Source = settings.build(Some(client.clone()))?;
            let file = source.next().await.context("cannot read the providers file")?;
            let planned = plan(&file.wasm, &defaults)?;
            let status = loader.observers.status.clone();
            let fleet = Fleet::start(loader, planned, stop.child_token()).await?;
            let members = fleet.members();
            let reporter = regarding.map(|regarding| Reporter::new(client.clone(), regarding));
            tokio::spawn(
                fleet.follow(offers(source, defaults), move |outcome| report(&outcome, reporter.as_ref(), &status)),
            );
            members
        }
    };
    for (name, member) in members.borrow().iter() {
        tracing::info!(provider = %name, parts = ?member.cloud.info().parts, serves = ?member.serves, "loaded the provider");
    }
    view.serving(members.clone());
    health.provider_loaded();
    let manager =
        ControllerManager::with_providers(clients, members, options.settings, metrics.clone()).with_caches(caches);
    manager.plan()?;
    let readiness = health.controllers();
    // A controller that stops on its own ends the process with its error,
    // as upstream's crashes; its replacement starts afresh.
    let failure = Arc::new(Mutex::new(None));
    let run_controllers = {
        let failure = failure.clone();
        move |working: CancellationToken| async move {
            if let Err(err) = manager.run(working, readiness).await {
                tracing::error!("the controllers stopped: {err}");
                *failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(err);
            }
        }
    };
    match options.leader {
        Some(config) => {
            health.set_standby(true);
            let elector = LeaderElector::new(client, config, metrics)?;
            let standby = health.clone();
            elector
                .lead(stop, options.shutdown_grace, move |working| {
                    standby.set_standby(false);
                    async move {
                        run_controllers(working).await;
                        standby.set_standby(true);
                    }
                })
                .await?;
        }
        None => {
            let working = CancellationToken::new();
            let mut controllers = tokio::spawn(run_controllers(working.clone()));
            tokio::select! {
                _ = &mut controllers => {}
                () = stop.cancelled() => {
                    working.cancel();
                    if tokio::time::timeout(options.shutdown_grace, &mut controllers).await.is_err() {
                        tracing::warn!("the controllers did not stop within {:?}; stopping them now", options.shutdown_grace);
                        controllers.abort();
                    }
                }
            }
        }
    }
    if let Some(err) = failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take() {
        return Err(err.into());
    }
    tracing::info!("stopped");
    Ok(())
}
