//! Starting, addressing and stopping the server, and the accessors tests use.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::conversion;
use crate::create::create;
use crate::faults::Faults;
use crate::handler::{Shared, handle};
use crate::history::ObjectKey;
use crate::kubeconfig;
use crate::requests::{RequestCounter, RequestCounts};
use crate::resources::by_name;
use crate::review::Tokens;
use crate::store::Store;

/// The namespaces that exist when the server starts, as in a fresh cluster.
const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Settings of an [`ApiServer`].
#[derive(Clone, Debug)]
pub struct Config {
    /// How often a watch that asked for bookmarks gets one.
    pub bookmark_interval: Duration,
    /// How many writes are kept for resuming watches and paginated lists; older resourceVersions
    /// get 410 Gone.
    pub history: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self { bookmark_interval: Duration::from_secs(1), history: 100_000 }
    }
}

/// A Kubernetes API server on loopback, serving plain HTTP until dropped.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use wasm_ccm_apiserver::ApiServer;
///
/// let server = ApiServer::start().await?;
/// let client = server.client().await;
/// let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
/// # let _ = nodes;
/// println!("{}", server.requests());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ApiServer {
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl ApiServer {
    /// Starts a server on 127.0.0.1 at a free port with [`Config::default`].
    ///
    /// # Errors
    ///
    /// When no port can be bound.
    pub async fn start() -> std::io::Result<ApiServer> {
        Self::start_with(SocketAddr::from(([127, 0, 0, 1], 0)), Config::default()).await
    }

    /// Starts a server on `address` (port 0 picks a free one) with `config`.
    ///
    /// # Errors
    ///
    /// When `address` cannot be bound.
    pub async fn start_with(address: SocketAddr, config: Config) -> std::io::Result<ApiServer> {
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let store = Arc::new(Store::new(config.history));
        let namespaces = by_name("namespaces").expect("namespaces are served");
        for name in INITIAL_NAMESPACES {
            store
                .write(|state| create(state, namespaces, "", json!({ "metadata": { "name": name } }), false))
                .expect("the initial namespaces are valid");
        }
        let shared = Arc::new(Shared {
            faults: Faults::new(store.clone()),
            store,
            requests: RequestCounter::default(),
            bookmark_interval: config.bookmark_interval,
            address,
            tokens: Tokens::default(),
        });
        let router = Router::new().fallback(handle).with_state(shared.clone());
        let listener = listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "failed to set TCP_NODELAY");
            }
        });
        let (shutdown, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let serving = axum::serve(listener, router).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(error) = serving.await {
                tracing::warn!(%error, "the API server stopped serving");
            }
        });
        tracing::debug!(%address, "API server listening");
        Ok(ApiServer { shared, shutdown: Some(shutdown) })
    }

    /// Makes `token` a bearer token of `user` in `groups` for `TokenReview`s (the server
    /// authenticates no request with it; `system:authenticated` is added to the groups).
    pub fn add_token(&self, token: &str, user: &str, groups: &[&str]) {
        self.shared.tokens.add(token, user, groups);
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.address)
    }

    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.shared.address
    }

    /// A kubeconfig with cluster, user and context `wasm-ccm`, pointing at [`ApiServer::url`] without TLS.
    pub fn kubeconfig(&self) -> kube::config::Kubeconfig {
        kubeconfig::kubeconfig(&self.url())
    }

    /// Writes [`ApiServer::kubeconfig`] to `path` as JSON, which `kubectl` reads as YAML.
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        let encoded = serde_json::to_vec_pretty(&self.kubeconfig()).map_err(std::io::Error::other)?;
        std::fs::write(path, encoded)
    }

    /// A client configured from [`ApiServer::kubeconfig`].
    pub async fn client(&self) -> kube::Client {
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(self.kubeconfig(), &options)
            .await
            .expect("the generated kubeconfig is valid");
        kube::Client::try_from(config).expect("a client for a plain HTTP server can always be built")
    }

    /// The failures that can be injected into this server.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// The requests answered so far, by verb and resource.
    pub fn requests(&self) -> RequestCounts {
        self.shared.requests.snapshot()
    }

    /// Forgets the requests counted so far.
    pub fn reset_requests(&self) {
        self.shared.requests.reset();
    }

    /// The object `name` of `resource` in `namespace`, as a client of that resource would get it.
    ///
    /// `resource` is a plural such as `services`, `nodes`, `leases` or `events` (core), or
    /// `events.events.k8s.io`; `plural.group` spellings work too. `None` when the object or the
    /// resource does not exist.
    pub fn object(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let resource = by_name(resource)?;
        let key = ObjectKey { namespace: namespace.unwrap_or_default().to_string(), name: name.to_string() };
        let stored = self.shared.store.read(|state| state.get(resource, &key).cloned())?;
        Some((*conversion::to_client(resource, &stored)).clone())
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.shared.store.drop_watches();
    }
}
