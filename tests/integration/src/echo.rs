//! A loopback HTTP server for providers to reach: it answers, echoes,
//! redirects, sends large bodies and stalls on request.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use tokio::sync::oneshot;

/// A running server; it stops when dropped.
pub struct EchoServer {
    address: SocketAddr,
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

impl EchoServer {
    /// Starts the server on a free loopback port.
    ///
    /// # Errors
    /// When no port can be bound.
    pub async fn start() -> std::io::Result<Self> {
        let router = Router::new()
            .route("/hello", get(hello))
            .route("/headers", get(headers))
            .route("/redirect", get(redirect))
            .route("/big", get(big))
            .route("/stall", get(stall));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(EchoServer { address, _stop: stop })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.address.port()
    }
}
