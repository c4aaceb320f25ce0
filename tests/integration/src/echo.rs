//! A loopback HTTP server for providers to reach: it answers, echoes,
//! redirects, sends large bodies and stalls on request.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum_server::tls_rustls::RustlsConfig;
use tokio::sync::oneshot;
use wasm_ccm_envtest::pki::LoopbackTls;

/// A running server; it stops when dropped.
pub struct EchoServer {
    address: SocketAddr,
    scheme: &'static str,
    _stop: oneshot::Sender<()>,
}

#[derive(serde::Deserialize)]
struct Target {
    to: String,
}

#[derive(serde::Deserialize)]
struct Size {
    bytes: usize,
}

async fn hello() -> &'static str {
    "hello from loopback"
}

async fn headers(headers: HeaderMap) -> String {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok()).unwrap_or("none");
    format!("authorization={authorization}")
}

async fn redirect(Query(target): Query<Target>) -> Redirect {
    Redirect::temporary(&target.to)
}

async fn big(Query(size): Query<Size>) -> Vec<u8> {
    vec![b'x'; size.bytes]
}

async fn stall() -> Response {
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    StatusCode::OK.into_response()
}

fn router() -> Router {
    Router::new()
        .route("/hello", get(hello))
        .route("/headers", get(headers))
        .route("/redirect", get(redirect))
        .route("/big", get(big))
        .route("/stall", get(stall))
}

impl EchoServer {
    /// Starts the server on a free loopback port.
    ///
    /// # Errors
    /// When no port can be bound.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router())
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(EchoServer { address, scheme: "http", _stop: stop })
    }

    /// Starts the server over HTTPS with `tls`'s certificate on a free
    /// loopback port.
    ///
    /// # Errors
    /// When no port can be bound or the certificate is refused.
    pub async fn start_tls(tls: &LoopbackTls) -> std::io::Result<Self> {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let config =
            RustlsConfig::from_pem(tls.certificate_pem.clone().into_bytes(), tls.key_pem.clone().into_bytes()).await?;
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let handle = axum_server::Handle::new();
        let server = axum_server::from_tcp_rustls(listener, config)?.handle(handle.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = stopped.await;
            handle.shutdown();
        });
        tokio::spawn(async move { server.serve(router().into_make_service()).await });
        Ok(EchoServer { address, scheme: "https", _stop: stop })
    }

    /// `http://127.0.0.1:<port>`, or `https://` for a TLS server.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.address)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.address.port()
    }
}
