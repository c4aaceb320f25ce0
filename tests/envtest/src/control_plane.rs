//! Starting etcd and kube-apiserver, handing out clients, and stopping
//! them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::config::{
    AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};
use tempfile::TempDir;

use crate::assets::Assets;
use crate::audit::{self, AuditedRequests};
use crate::error::EnvtestError;
use crate::identity::{Identity, Tokens};
use crate::pki::{self, LoopbackTls};
use crate::process::ServerProcess;
use crate::rbac;

/// How long kube-apiserver may take to be ready (5 to 10 s on an idle
/// 2-core machine; more when tests share it).
const READY_WITHIN: Duration = Duration::from_secs(90);
/// Attempts at starting on free ports before giving up.
const ATTEMPTS: usize = 3;

/// How the control plane runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep an audit log of the controller managers' requests, read with
    /// [`ControlPlane::audited_requests`].
    pub audit: bool,
}

/// etcd and kube-apiserver on loopback, with deploy/'s RBAC applied; both
/// stop, and their data goes, when it is dropped.
#[derive(Debug)]
pub struct ControlPlane {
    // Fields drop in order: the processes are killed before `dir` goes.
    apiserver: Option<ServerProcess>,
    etcd: ServerProcess,
    assets: Assets,
    options: Options,
    dir: TempDir,
    tokens: Tokens,
    port: u16,
    etcd_url: String,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver on free ports, waits until the API
    /// server is ready, and applies `deploy/rbac.yaml`.
    ///
    /// # Errors
    /// When either cannot start or become ready.
    pub async fn start(assets: &Assets, options: Options) -> Result<Self, EnvtestError> {
        let mut attempt = 1;
        loop {
            match Self::start_once(assets, &options).await {
                Err(err) if err.is_retryable() && attempt < ATTEMPTS => {
                    tracing::warn!("the control plane did not start, trying other ports: {err}");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(assets: &Assets, options: &Options) -> Result<Self, EnvtestError> {
        let dir = tempfile::Builder::new().prefix("wasm-ccm-envtest-").tempdir().map_err(EnvtestError::file("/tmp"))?;
        let write = |name: &str, contents: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, contents).map_err(EnvtestError::file(&path))
        };
        let tls = LoopbackTls::generate("wasm-ccm envtest")?;
        write("ca.crt", &tls.ca_pem)?;
        write("apiserver.crt", &tls.certificate_pem)?;
        write("apiserver.key", &tls.key_pem)?;
        let (signing_key, verifying_key) = pki::signing_key_pair()?;
        write("sa.key", &signing_key)?;
        write("sa.pub", &verifying_key)?;
        let tokens = Tokens::generate();
        write("tokens.csv", &tokens.file())?;
        write("audit-policy.yaml", &audit::policy())?;

        let free_port = || wasm_ccm_test_support::free_port().map_err(EnvtestError::file("127.0.0.1:0"));
        let (etcd_port, peer_port) = (free_port()?, free_port()?);
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let etcd_args = vec![
            format!("--data-dir={}", dir.path().join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-cluster=default=http://127.0.0.1:{peer_port}"),
        ];
        let etcd = ServerProcess::spawn("etcd", &assets.etcd, &etcd_args, dir.path().join("etcd.log"))?;
        let mut plane = ControlPlane {
            apiserver: None,
            etcd,
            assets: assets.clone(),
            options: options.clone(),
            dir,
            tokens,
            port: free_port()?,
            etcd_url,
        };
        plane.start_apiserver().await?;
        let manifest = rbac::manifest();
        let text = std::fs::read_to_string(&manifest).map_err(EnvtestError::file(&manifest))?;
        plane.apply_rbac(&text, &manifest).await?;
        plane.apply_rbac(rbac::UPSTREAM_BINDING, Path::new(file!())).await?;
        plane.wait_for_rbac().await?;
        Ok(plane)
    }

    fn apiserver_args(&self) -> Vec<String> {
        let file = |name: &str| self.dir.path().join(name).display().to_string();
        let mut args = vec![
            format!("--etcd-servers={}", self.etcd_url),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            // No `kubernetes` Service endpoints: a loopback address may not
            // be advertised in them, as envtest does.
            "--endpoint-reconciler-type=none".to_owned(),
            format!("--secure-port={}", self.port),
            format!("--tls-cert-file={}", file("apiserver.crt")),
            format!("--tls-private-key-file={}", file("apiserver.key")),
            format!("--token-auth-file={}", file("tokens.csv")),
            "--authorization-mode=Node,RBAC".to_owned(),
            "--service-cluster-ip-range=10.96.0.0/16".to_owned(),
            // Room for the node ports of 10,000 LoadBalancer Services; the
            // default range holds 2768.
            "--service-node-port-range=30000-44999".to_owned(),
            "--service-account-issuer=https://kubernetes.default.svc".to_owned(),
            format!("--service-account-key-file={}", file("sa.pub")),
            format!("--service-account-signing-key-file={}", file("sa.key")),
        ];
        if self.options.audit {
            args.push(format!("--audit-policy-file={}", file("audit-policy.yaml")));
            args.push(format!("--audit-log-path={}", file("audit.log")));
        }
        args
    }

    /// Starts kube-apiserver (again, after [`ControlPlane::stop_apiserver`])
    /// on the same port and data, and waits until it is ready.
    ///
    /// # Errors
    /// When it cannot start or become ready.
    pub async fn start_apiserver(&mut self) -> Result<(), EnvtestError> {
        let log = self.dir.path().join("kube-apiserver.log");
        let args = self.apiserver_args();
        self.apiserver = Some(ServerProcess::spawn("kube-apiserver", &self.assets.kube_apiserver, &args, log)?);
        self.wait_until_ready().await
    }

    /// Kills kube-apiserver at once (SIGKILL), as a crash would; etcd and
    /// the data stay.
    pub fn stop_apiserver(&mut self) {
        if let Some(mut apiserver) = self.apiserver.take() {
            apiserver.kill();
        }
    }

    async fn wait_until_ready(&mut self) -> Result<(), EnvtestError> {
        let client = self.client(Identity::Admin).await?;
        let deadline = tokio::time::Instant::now() + READY_WITHIN;
        loop {
            let request = http::Request::get("/readyz").body(Vec::new()).expect("a valid request");
            if client.request_text(request).await.is_ok_and(|body| body.trim() == "ok") {
                return Ok(());
            }
            for process in [Some(&mut self.etcd), self.apiserver.as_mut()].into_iter().flatten() {
                if let Some(err) = process.exited() {
                    return Err(err);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                let apiserver = self.apiserver.as_ref().expect("started");
                return Err(EnvtestError::NotReady {
                    name: apiserver.name,
                    seconds: READY_WITHIN.as_secs(),
                    log: apiserver.log_tail(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the RBAC just applied lets both controller managers
    /// list nodes: the authorizer learns of new bindings through its own
    /// watch.
    async fn wait_for_rbac(&self) -> Result<(), EnvtestError> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        for identity in [Identity::CloudControllerManager, Identity::UpstreamControllerManager] {
            let nodes: Api<Node> = Api::all(self.client(identity).await?);
            loop {
                match nodes.list(&ListParams::default().limit(1)).await {
                    Ok(_) => break,
                    Err(err) if tokio::time::Instant::now() >= deadline => return Err(err.into()),
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }
        Ok(())
    }

    /// Applies the RBAC objects of the YAML stream `text`, read from
    /// `origin` (for errors), as an administrator: created, or replacing
    /// those of the same name; other kinds are skipped.
    ///
    /// # Errors
    /// When the stream is not YAML or the API server refuses an object.
    pub async fn apply_rbac(&self, text: &str, origin: &Path) -> Result<(), EnvtestError> {
        rbac::apply(&self.client(Identity::Admin).await?, text, origin).await
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The CA certificate the API server's serving certificate chains to.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// The process ID of kube-apiserver, while it runs.
    pub fn apiserver_pid(&self) -> Option<u32> {
        self.apiserver.as_ref().map(ServerProcess::id)
    }

    /// The process ID of etcd.
    pub fn etcd_pid(&self) -> u32 {
        self.etcd.id()
    }

    /// A kubeconfig for `identity`, trusting the server's CA.
    pub fn kubeconfig(&self, identity: Identity) -> Kubeconfig {
        let name = "envtest".to_owned();
        Kubeconfig {
            clusters: vec![NamedCluster {
                name: name.clone(),
                cluster: Some(Cluster {
                    server: Some(self.url()),
                    certificate_authority: Some(self.ca_file().display().to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            auth_infos: vec![NamedAuthInfo {
                name: name.clone(),
                auth_info: Some(AuthInfo {
                    token: Some(self.tokens.token(identity).to_owned().into()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            contexts: vec![NamedContext {
                name: name.clone(),
                context: Some(Context { cluster: name.clone(), user: Some(name.clone()), ..Default::default() }),
                ..Default::default()
            }],
            current_context: Some(name),
            kind: Some("Config".into()),
            api_version: Some("v1".into()),
            ..Default::default()
        }
    }

    /// Writes [`ControlPlane::kubeconfig`] to `path`, for another process.
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn write_kubeconfig(&self, identity: Identity, path: &Path) -> Result<(), EnvtestError> {
        let encoded = serde_json::to_vec_pretty(&self.kubeconfig(identity)).expect("a kubeconfig serializes");
        std::fs::write(path, encoded).map_err(EnvtestError::file(path))
    }

    /// A client acting as `identity`.
    ///
    /// # Errors
    /// When the client cannot be built.
    pub async fn client(&self, identity: Identity) -> Result<kube::Client, EnvtestError> {
        let config =
            kube::Config::from_custom_kubeconfig(self.kubeconfig(identity), &KubeConfigOptions::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// The controller managers' requests so far, from the audit log.
    ///
    /// # Errors
    /// When the control plane was started without [`Options::audit`], or
    /// the log cannot be read.
    pub fn audited_requests(&self) -> Result<AuditedRequests, EnvtestError> {
        AuditedRequests::read(&self.dir.path().join("audit.log"))
    }
}
