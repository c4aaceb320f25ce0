//! The admin server: `/healthz`, `/livez`, `/readyz`, `/metrics` in
//! Prometheus format and `/providers` (each provider's version, last
//! rejection, what it serves, its limits and usage, as JSON), over HTTPS
//! (with a self-signed certificate unless one is given) or, for local use,
//! plain HTTP.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use axum_server::tls_rustls::RustlsConfig;
use prometheus_client::registry::Registry;
use wasm_ccm_controllers::Readiness;
use wasm_ccm_kube::ClientSettings;

use crate::run::delegation::{Delegation, DelegationArgs, guard};
use crate::run::providers_view::ProvidersView;

/// Admin server flags, as upstream's secure serving flags.
#[derive(Debug, Clone, clap::Args)]
pub struct AdminArgs {
    /// The admin server's port; 0 turns it off.
    #[arg(long, default_value_t = 10258)]
    pub secure_port: u16,
    /// The address the admin server listens on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// The admin server's certificate (PEM); without it, a self-signed one
    /// is made at start.
    #[arg(long, value_name = "FILE", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Serve plain HTTP instead of HTTPS, for local use: without TLS and
    /// without delegated authentication and authorization.
    #[arg(long)]
    pub admin_plain_http: bool,
    /// Delegated authentication and authorization (HTTPS only).
    #[command(flatten)]
    pub delegation: DelegationArgs,
}

/// What the health endpoints report; clones share it.
#[derive(Clone, Default)]
pub struct Health {
    inner: Arc<HealthState>,
}

#[derive(Default)]
struct HealthState {
    provider_loaded: AtomicBool,
    stopping: AtomicBool,
    standby: AtomicBool,
    controllers: Readiness,
}

impl Health {
    /// The controllers' readiness, which the manager turns on once its caches
    /// are synced.
    pub fn controllers(&self) -> Readiness {
        self.inner.controllers.clone()
    }

    /// Notes that the provider is loaded and initialised.
    pub fn provider_loaded(&self) {
        self.inner.provider_loaded.store(true, Ordering::Release);
    }

    /// Notes that this replica waits for the lease (it is then ready without
    /// running controllers) or leads.
    pub fn set_standby(&self, standby: bool) {
        self.inner.standby.store(standby, Ordering::Release);
    }

    /// Notes that the process is stopping.
    pub fn stopping(&self) {
        self.inner.stopping.store(true, Ordering::Release);
    }

    /// Why the process is not ready, if it is not.
    pub fn unready(&self) -> Option<&'static str> {
        let state = &self.inner;
        if state.stopping.load(Ordering::Acquire) {
            Some("stopping")
        } else if !state.provider_loaded.load(Ordering::Acquire) {
            Some("the provider is not loaded yet")
        } else if !state.standby.load(Ordering::Acquire) && !state.controllers.is_ready() {
            Some("the caches are not synced yet")
        } else {
            None
        }
    }
}

struct AppState {
    health: Health,
    registry: Registry,
    providers: ProvidersView,
}

async fn ok() -> &'static str {
    "ok"
}

async fn ready(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    match state.health.unready() {
        None => (StatusCode::OK, "ok".to_owned()),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}")),
    }
}

async fn metrics(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &state.registry) {
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
            text,
        ),
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, [(header::CONTENT_TYPE, "text/plain")], err.to_string()),
    }
}

async fn providers(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let body = serde_json::to_string_pretty(&state.providers.snapshot()).unwrap_or_else(|_| "[]".to_owned());
    ([(header::CONTENT_TYPE, "application/json")], body)
}

/// Binds the admin server and serves it in the background; returns the
/// address it listens on, or `None` when it is turned off.
///
/// Over HTTPS, every path but the always-allowed ones needs a bearer token
/// that the cluster's `TokenReview` accepts and a `SubjectAccessReview`
/// allowing `get` on the path (see [`Delegation`]); `cluster` is the
/// cluster that reviews them when the delegation flags name none.
///
/// # Errors
/// When the address cannot be bound, the certificate cannot be loaded, or
/// there is no cluster to delegate to.
pub async fn serve(
    args: &AdminArgs,
    cluster: &ClientSettings,
    health: Health,
    registry: Registry,
    providers: ProvidersView,
) -> anyhow::Result<Option<SocketAddr>> {
    if args.secure_port == 0 {
        return Ok(None);
    }
    let mut app = Router::new()
        .route("/healthz", get(ok))
        .route("/livez", get(ok))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .route("/providers", get(self::providers))
        .with_state(Arc::new(AppState { health, registry, providers }));
    if args.admin_plain_http {
        tracing::warn!("the admin server speaks plain HTTP and serves every path to anyone (--admin-plain-http)");
    } else {
        let delegation = Arc::new(Delegation::new(&args.delegation, cluster).await?);
        app = app.route_layer(axum::middleware::from_fn_with_state(delegation, guard));
    }
    let address = SocketAddr::new(args.bind_address, args.secure_port);
    let listener = std::net::TcpListener::bind(address).with_context(|| format!("cannot listen on {address}"))?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    if args.admin_plain_http {
        let server = axum_server::from_tcp(listener)?;
        tokio::spawn(async move { server.serve(app.into_make_service()).await });
    } else {
        let tls = match (&args.tls_cert_file, &args.tls_private_key_file) {
            (Some(cert), Some(key)) => RustlsConfig::from_pem_file(cert, key)
                .await
                .with_context(|| format!("cannot load the certificate {} and key {}", cert.display(), key.display()))?,
            _ => {
                let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "wasm-ccm".to_owned()])
                    .context("cannot make a self-signed certificate")?;
                RustlsConfig::from_pem(
                    certified.cert.pem().into_bytes(),
                    certified.signing_key.serialize_pem().into_bytes(),
                )
                .await
                .context("cannot use the self-signed certificate")?
            }
        };
        let server = axum_server::from_tcp_rustls(listener, tls)?;
        tokio::spawn(async move { server.serve(app.into_make_service()).await });
    }
    tracing::info!(address = %bound, tls = !args.admin_plain_http, "serving /healthz, /livez, /readyz, /metrics and /providers");
    Ok(Some(bound))
}
