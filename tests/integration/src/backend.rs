//! The API server a test runs against: the project's harness, in this
//! process, or a real kube-apiserver from the envtest assets. The
//! controllers' end-to-end tests run the same bodies against both, the
//! controllers under deploy/'s RBAC identity on the real one.

use std::path::Path;

use serde_json::Value;
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_envtest::{Assets, ControlPlane, Identity, Options};

/// Which API server to start.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The API server harness (`tests/apiserver`).
    Harness,
    /// kube-apiserver and etcd from these binaries.
    Real(Assets),
}

impl Backend {
    /// The real API server, or `None` (said on the terminal) when its
    /// binaries are missing and not required.
    ///
    /// # Panics
    /// When they are missing but required (`WASM_CCM_REQUIRE_ENVTEST`).
    pub fn real(test: &str) -> Option<Backend> {
        match Assets::find_or_skip(test) {
            Ok(assets) => assets.map(Backend::Real),
            Err(err) => panic!("{err}"),
        }
    }
}

/// A running API server of either kind.
pub struct TestApiServer {
    server: Server,
    admin: kube::Client,
}

enum Server {
    Harness(ApiServer),
    Real(Box<ControlPlane>),
}

impl TestApiServer {
    /// Starts `backend`'s API server.
    ///
    /// # Panics
    /// When it cannot start.
    pub async fn start(backend: &Backend) -> Self {
        Self::start_with(backend, Options::default()).await
    }

    /// Starts `backend`'s API server; `options` apply to a real one.
    ///
    /// # Panics
    /// When it cannot start.
    pub async fn start_with(backend: &Backend, options: Options) -> Self {
        let server = match backend {
            Backend::Harness => Server::Harness(ApiServer::start().await.expect("the API server harness starts")),
            Backend::Real(assets) => Server::Real(Box::new(
                ControlPlane::start(assets, options).await.unwrap_or_else(|err| panic!("the real API server: {err}")),
            )),
        };
        let admin = match &server {
            Server::Harness(server) => server.client().await,
            Server::Real(plane) => plane.client(Identity::Admin).await.expect("an admin client"),
        };
        TestApiServer { server, admin }
    }

    /// The harness, for tests that inject its faults or read its counts.
    ///
    /// # Panics
    /// On a real API server.
    pub fn harness(&self) -> &ApiServer {
        match &self.server {
            Server::Harness(server) => server,
            Server::Real(_) => panic!("this step needs the API server harness"),
        }
    }

    /// The real control plane, for tests that stop and start it.
    ///
    /// # Panics
    /// On the harness.
    pub fn real(&mut self) -> &mut ControlPlane {
        match &mut self.server {
            Server::Real(plane) => plane,
            Server::Harness(_) => panic!("this step needs the real API server"),
        }
    }

    /// Whether it is the real one.
    pub fn is_real(&self) -> bool {
        matches!(self.server, Server::Real(_))
    }

    /// A client allowed everything, for setting up and inspecting.
    pub fn admin(&self) -> kube::Client {
        self.admin.clone()
    }

    /// A client for the controllers: deploy/'s in-cluster identity on a
    /// real API server.
    pub async fn controller_client(&self) -> kube::Client {
        match &self.server {
            Server::Harness(server) => server.client().await,
            Server::Real(plane) => plane.client(Identity::CloudControllerManager).await.expect("a controller client"),
        }
    }

    /// Writes the kubeconfig of the controllers' client to `path`, for a
    /// `wasm-ccm` process.
    ///
    /// # Panics
    /// When it cannot be written.
    pub fn write_controller_kubeconfig(&self, path: &Path) {
        match &self.server {
            Server::Harness(server) => server.write_kubeconfig(path).expect("a kubeconfig"),
            Server::Real(plane) => {
                plane.write_kubeconfig(Identity::CloudControllerManager, path).expect("a kubeconfig");
            }
        }
    }

    /// A bearer token of `identity` that the server's `TokenReview`
    /// accepts: the real server's from its token file, or one registered
    /// with the harness for the same user and groups.
    pub fn token(&self, identity: Identity) -> String {
        match &self.server {
            Server::Harness(server) => {
                let token = format!("{identity:?}-token").to_lowercase();
                let groups: Vec<&str> =
                    identity.groups().split(',').filter(|group| *group != "system:authenticated").collect();
                server.add_token(&token, identity.user(), &groups);
                token
            }
            Server::Real(plane) => {
                let kubeconfig = serde_json::to_value(plane.kubeconfig(identity)).expect("a kubeconfig serializes");
                kubeconfig["users"][0]["user"]["token"].as_str().expect("a token").to_owned()
            }
        }
    }

    /// The object `name` of `resource` (a plural of the core group, or
    /// `leases`) in `namespace`, as JSON; `None` when it does not exist.
    pub async fn object(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let path = match (resource, namespace) {
            ("leases", Some(namespace)) => format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"),
            (resource, Some(namespace)) => format!("/api/v1/namespaces/{namespace}/{resource}/{name}"),
            (resource, None) => format!("/api/v1/{resource}/{name}"),
        };
        let request = http::Request::get(path).body(Vec::new()).expect("a valid request");
        let text = self.admin.request_text(request).await.ok()?;
        serde_json::from_str(&text).ok()
    }
}
