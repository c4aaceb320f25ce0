//! The Kubernetes clients of the controller manager: from a kubeconfig or
//! the in-cluster configuration, each with upstream's client-side rate limit
//! (`--kube-api-qps`, `--kube-api-burst`) and the API server's reachability
//! logged once per outage; with `--use-service-account-credentials`, one per
//! controller acting as its own ServiceAccount.

mod rate_limit;
pub mod reachability;
mod service_account;
mod stack;

use std::num::NonZeroU32;
use std::path::PathBuf;

use governor::Quota;
use http::HeaderValue;
use http::header::USER_AGENT;
use kube::Client;
use kube::config::{AuthInfo, Config, KubeConfigOptions, Kubeconfig};
use tokio_util::sync::CancellationToken;

use self::rate_limit::RateLimitLayer;
use self::reachability::ReachabilityLayer;
use self::service_account::BearerLayer;

/// Who makes the requests, as client-go's `<program>/<version>`: the API
/// server takes the part before the slash as the writes' field manager.
const USER_AGENT_VALUE: &str = concat!("wasm-ccm/", env!("CARGO_PKG_VERSION"));

/// A client for `config` on the controllers' HTTP stack, naming itself as
/// they do, without their rate limit: for the admin server's delegated
/// checks and other requests outside the controllers'.
///
/// # Errors
/// When the TLS settings or the credentials of `config` are bad.
pub fn unlimited(mut config: Config) -> Result<Client, kube::Error> {
    name_the_agent(&mut config);
    Ok(stack::builder(&config)?.build())
}

/// Sends the user agent: the API server names the field manager of every
/// write after it, and audit logs show it.
fn name_the_agent(config: &mut Config) {
    config.headers.push((USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE)));
}

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig could not be read.
    #[error("cannot read the kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// No configuration was found.
    #[error("cannot find a Kubernetes configuration: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// `--master` is not a URL.
    #[error("invalid --master {0:?}: {1}")]
    Master(String, http::uri::InvalidUri),
    /// The client could not be built.
    #[error("cannot build the Kubernetes client: {0}")]
    Build(#[from] kube::Error),
    /// The rate limit is not positive.
    #[error("--kube-api-qps and --kube-api-burst must be at least 1")]
    RateLimit,
    /// A controller's ServiceAccount or its token could not be had.
    #[error("cannot act as the ServiceAccount {namespace}/{name}: {source}")]
    ServiceAccount {
        /// Its namespace.
        namespace: &'static str,
        /// Its name, the controller's.
        name: String,
        /// The API server's error.
        #[source]
        source: kube::Error,
    },
}

/// Where the clients connect and how fast they may go.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The kubeconfig; without it, kube's defaults (`KUBECONFIG`,
    /// `~/.kube/config`, then the in-cluster service account).
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL instead of the kubeconfig's (upstream's
    /// `--master`).
    pub master: Option<String>,
    /// Requests per second.
    pub qps: u32,
    /// Requests at once beyond the rate.
    pub burst: u32,
    /// Whether each controller acts as its own ServiceAccount.
    pub per_controller_identity: bool,
}

/// The controller manager's clients; clones share them.
#[derive(Clone)]
pub struct Clients {
    root: Client,
    /// How to build a client per controller, when each has its identity.
    per_controller: Option<PerController>,
}

/// What a controller's own client is built from.
#[derive(Clone)]
struct PerController {
    config: Config,
    quota: Quota,
    reachability: ReachabilityLayer,
}

/// Every controller acts as `client`'s identity.
impl From<Client> for Clients {
    fn from(root: Client) -> Self {
        Clients { root, per_controller: None }
    }
}

impl Clients {
    /// Reads the configuration and builds the root client.
    ///
    /// # Errors
    /// When no configuration is found, `--master` is not a URL or the limits
    /// are zero.
    pub async fn new(settings: &ClientSettings) -> Result<Self, ClientError> {
        let mut config = match &settings.kubeconfig {
            Some(path) => {
                Config::from_custom_kubeconfig(Kubeconfig::read_from(path)?, &KubeConfigOptions::default()).await?
            }
            None => Config::infer().await?,
        };
        if let Some(master) = &settings.master {
            config.cluster_url = master.parse().map_err(|err| ClientError::Master(master.to_owned(), err))?;
        }
        name_the_agent(&mut config);
        let quota = Quota::per_second(NonZeroU32::new(settings.qps).ok_or(ClientError::RateLimit)?)
            .allow_burst(NonZeroU32::new(settings.burst).ok_or(ClientError::RateLimit)?);
        let reachability = ReachabilityLayer::default();
        let root = stack::builder(&config)?.with_layer(&reachability).with_layer(&RateLimitLayer::new(quota)).build();
        let per_controller = settings.per_controller_identity.then_some(PerController { config, quota, reachability });
        Ok(Clients { root, per_controller })
    }

    /// The controller manager's own client: the shared caches, leader
    /// election, provider sources.
    pub fn root(&self) -> Client {
        self.root.clone()
    }

    /// The client controller `name` acts with: the root one, or, with a
    /// per-controller identity, one acting as the ServiceAccount
    /// `kube-system/<name>` (created when missing) on a token renewed until
    /// `stop`, rate-limited on its own as upstream's.
    ///
    /// # Errors
    /// When the ServiceAccount or its token cannot be had.
    pub async fn controller(&self, name: &str, stop: CancellationToken) -> Result<Client, ClientError> {
        let Some(own) = &self.per_controller else {
            return Ok(self.root.clone());
        };
        let error = |source| ClientError::ServiceAccount {
            namespace: service_account::NAMESPACE,
            name: name.to_owned(),
            source,
        };
        let token = service_account::token(&self.root, name, stop).await.map_err(error)?;
        let mut config = own.config.clone();
        config.auth_info = AuthInfo::default();
        Ok(stack::builder(&config)?
            .with_layer(&BearerLayer(token))
            .with_layer(&own.reachability)
            .with_layer(&RateLimitLayer::new(own.quota))
            .build())
    }
}
