//! A loopback HTTP server for providers to reach: it answers, echoes (in
//! several encodings), checks AWS signatures, redirects, sends large bodies, answers with any
//! status, slowly or encoded, and stalls on request, counts its open
//! connections and notes when each request arrived.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::serve::Listener;
use axum_server::tls_rustls::RustlsConfig;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;
use wasm_ccm_envtest::pki::LoopbackTls;

/// A running server; it stops when dropped.
pub struct EchoServer {
    address: SocketAddr,
    scheme: &'static str,
    open: Arc<AtomicUsize>,
    arrivals: Arrivals,
    _stop: oneshot::Sender<()>,
}

/// When each request arrived, in order.
type Arrivals = Arc<Mutex<Vec<Instant>>>;

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

/// How `/headers` echoes: `raw`, `base64`, `base64url` or `percent`.
#[derive(serde::Deserialize)]
struct Echo {
    #[serde(default)]
    encoding: Option<String>,
}

/// The request's `Authorization`, in the body and in `x-authorization`,
/// encoded as asked.
async fn headers(Query(echo): Query<Echo>, headers: HeaderMap) -> Response {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok()).unwrap_or("none");
    let echoed = match echo.encoding.as_deref() {
        Some("base64") => STANDARD.encode(authorization),
        Some("base64url") => URL_SAFE_NO_PAD.encode(authorization),
        Some("percent") => authorization
            .bytes()
            .map(
                |byte| if byte.is_ascii_alphanumeric() { char::from(byte).to_string() } else { format!("%{byte:02X}") },
            )
            .collect(),
        _ => authorization.to_owned(),
    };
    ([("x-authorization", echoed.clone())], format!("authorization={echoed}")).into_response()
}

#[derive(serde::Deserialize)]
struct Expected {
    token: String,
}

/// Whether the request carried `Authorization: Bearer <token>`.
async fn authorized(Query(expected): Query<Expected>, headers: HeaderMap) -> &'static str {
    let bearer = format!("Bearer {}", expected.token);
    if headers.get(header::AUTHORIZATION).is_some_and(|value| value.as_bytes() == bearer.as_bytes()) {
        "yes"
    } else {
        "no"
    }
}

/// Whether the request carries a valid AWS Signature Version 4 of
/// [`sigv4::SECRET_ACCESS_KEY`]: `valid`, or `invalid: ` and why.
async fn sigv4(method: Method, uri: Uri, headers: HeaderMap) -> String {
    match crate::sigv4::verify(&method, &uri, &headers, crate::sigv4::SECRET_ACCESS_KEY) {
        Ok(_) => "valid".to_owned(),
        Err(why) => format!("invalid: {why}"),
    }
}

/// An answer that says it is gzip-encoded.
async fn encoded() -> Response {
    ([(header::CONTENT_ENCODING, "gzip")], "not really gzip").into_response()
}

#[derive(serde::Deserialize)]
struct Code {
    code: u16,
}

/// An empty answer with the status asked for.
async fn status(Query(code): Query<Code>) -> StatusCode {
    StatusCode::from_u16(code.code).unwrap_or(StatusCode::BAD_REQUEST)
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

async fn slow() -> &'static str {
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    "slow"
}

/// A connection that counts itself among the open ones until dropped.
struct Counted {
    stream: tokio::net::TcpStream,
    open: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// A listener whose connections count themselves while open.
struct CountingListener {
    listener: tokio::net::TcpListener,
    open: Arc<AtomicUsize>,
}

impl Listener for CountingListener {
    type Io = Counted;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, address) = Listener::accept(&mut self.listener).await;
        self.open.fetch_add(1, Ordering::SeqCst);
        (Counted { stream, open: self.open.clone() }, address)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

async fn note_arrival(State(arrivals): State<Arrivals>, request: Request, next: Next) -> Response {
    arrivals.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Instant::now());
    next.run(request).await
}

fn router(arrivals: Arrivals) -> Router {
    Router::new()
        .route("/slow", get(slow))
        .route("/hello", get(hello))
        .route("/headers", get(headers))
        .route("/authorized", get(authorized))
        .route("/sigv4", get(sigv4))
        .route("/encoded", get(encoded))
        .route("/status", get(status))
        .route("/redirect", get(redirect))
        .route("/big", get(big))
        .route("/stall", get(stall))
        .layer(middleware::from_fn_with_state(arrivals, note_arrival))
}

impl EchoServer {
    /// Starts the server on a free loopback port.
    ///
    /// # Errors
    /// When no port can be bound.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let open = Arc::new(AtomicUsize::new(0));
        let listener = CountingListener { listener, open: open.clone() };
        let arrivals = Arrivals::default();
        let (stop, stopped) = oneshot::channel::<()>();
        let app = router(arrivals.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(EchoServer { address, scheme: "http", open, arrivals, _stop: stop })
    }

    /// Starts the server over HTTPS with `tls`'s certificate on a free
    /// loopback port.
    ///
    /// # Errors
    /// When no port can be bound or the certificate is refused.
    pub async fn start_tls(tls: &LoopbackTls) -> std::io::Result<Self> {
        crate::install_crypto_provider();
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
        let arrivals = Arrivals::default();
        let app = router(arrivals.clone());
        tokio::spawn(async move { server.serve(app.into_make_service()).await });
        Ok(EchoServer { address, scheme: "https", open: Arc::default(), arrivals, _stop: stop })
    }

    /// `http://127.0.0.1:<port>`, or `https://` for a TLS server.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.address)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// Connections open to it now (plain HTTP servers only).
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// When each request so far arrived, in order.
    pub fn arrivals(&self) -> Vec<Instant> {
        self.arrivals.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}
