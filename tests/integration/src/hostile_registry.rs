//! A hostile OCI registry on a local address: it answers with endless
//! manifests, token answers and error bodies (streamed, never held in
//! memory), token realms and redirects that point at loopback, private
//! networks or the cloud metadata address, and counts the bytes it managed
//! to send.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::stream;

/// One GiB: what every endless answer claims to be.
pub const ONE_GIB: u64 = 1 << 30;
/// The size of each chunk of an endless answer.
const CHUNK: usize = 64 << 10;

/// What the registry does wrong.
#[derive(Debug, Clone)]
pub enum Hostility {
    /// Every manifest is 1 GiB of JSON-looking bytes.
    EndlessManifest,
    /// A tag resolves, and its manifest fails with a 1 GiB error body.
    EndlessError,
    /// `/v2/` asks for a token from its own `/token`, which answers 1 GiB.
    EndlessToken,
    /// `/v2/` asks for a token from its own `/token`, which fails with a
    /// 1 GiB error body.
    FailingToken,
    /// `/v2/` asks for a token from this realm.
    Realm(String),
    /// A valid provider manifest whose layer redirects to this URL.
    BlobRedirect(String),
    /// A valid provider manifest whose referrers index, from the referrers
    /// API, is 1 GiB.
    EndlessReferrers,
}

struct Shared {
    hostility: Hostility,
    sent: AtomicU64,
    address: SocketAddr,
}

/// A running hostile registry; it stops when dropped.
pub struct HostileRegistry {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl HostileRegistry {
    /// Starts one on `ip`, on a free port.
    ///
    /// # Errors
    /// When it cannot listen.
    pub async fn start(ip: IpAddr, hostility: Hostility) -> anyhow::Result<HostileRegistry> {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared { hostility, sent: AtomicU64::new(0), address });
        let app = Router::new().fallback(answer).with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(HostileRegistry { shared, task })
    }

    /// `host:port`, as references name it.
    pub fn host(&self) -> String {
        self.shared.address.to_string()
    }

    /// The bytes of endless answers sent so far.
    pub fn sent(&self) -> u64 {
        self.shared.sent.load(Ordering::Relaxed)
    }
}

impl Drop for HostileRegistry {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// This machine's address on its default route, if it has one: a local
/// address that is neither loopback nor link-local.
pub fn primary_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    // Connecting a UDP socket sends nothing; it picks the source address.
    socket.connect((Ipv4Addr::new(192, 0, 2, 1), 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// 1 GiB of `{"a":"aaaa...`, produced chunk by chunk as the client reads.
fn endless(shared: &Arc<Shared>) -> Body {
    let shared = Arc::clone(shared);
    let chunks = (ONE_GIB / CHUNK as u64) as usize;
    Body::from_stream(stream::iter((0..chunks).map(move |index| {
        let mut chunk = vec![b'a'; CHUNK];
        if index == 0 {
            chunk[..6].copy_from_slice(br#"{"a":""#);
        }
        shared.sent.fetch_add(CHUNK as u64, Ordering::Relaxed);
        Ok::<_, std::io::Error>(chunk)
    })))
}

/// A provider manifest whose one layer is `layer_digest`.
fn provider_manifest() -> String {
    let layer = format!("sha256:{}", "ab".repeat(32));
    let config = format!("sha256:{}", "cd".repeat(32));
    serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config, "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": layer, "size": 1000}],
    })
    .to_string()
}

async fn answer(State(shared): State<Arc<Shared>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path();
    let challenge = |realm: &str| {
        let value = format!(r#"Bearer realm="{realm}",service="hostile""#);
        (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, value)], "").into_response()
    };
    let authorised = headers.contains_key(header::AUTHORIZATION);
    match (&shared.hostility, path) {
        (Hostility::EndlessToken, "/token") => {
            (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], endless(&shared)).into_response()
        }
        (Hostility::FailingToken, "/token") => (StatusCode::INTERNAL_SERVER_ERROR, endless(&shared)).into_response(),
        (Hostility::EndlessToken | Hostility::FailingToken, _) if !authorised => {
            challenge(&format!("http://{}/token", shared.address))
        }
        (Hostility::Realm(realm), _) if !authorised => challenge(realm),
        (_, "/v2/") => StatusCode::OK.into_response(),
        (Hostility::EndlessError, _) if method == Method::HEAD => {
            let digest = format!("sha256:{}", "0".repeat(64));
            (StatusCode::OK, [(header::HeaderName::from_static("docker-content-digest"), digest)]).into_response()
        }
        (Hostility::EndlessError, _) => (StatusCode::INTERNAL_SERVER_ERROR, endless(&shared)).into_response(),
        (Hostility::BlobRedirect(target), _) if path.contains("/blobs/") => {
            (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, target.clone())], "").into_response()
        }
        (Hostility::EndlessReferrers, _) if path.contains("/referrers/") => {
            let content_type = [(header::CONTENT_TYPE, "application/vnd.oci.image.index.v1+json")];
            (StatusCode::OK, content_type, endless(&shared)).into_response()
        }
        (Hostility::BlobRedirect(_) | Hostility::EndlessReferrers, _) if path.contains("/manifests/") => {
            let manifest = provider_manifest();
            let digest = wasm_ccm_distribution::sha256_digest(manifest.as_bytes());
            let headers = [
                (header::CONTENT_TYPE, "application/vnd.oci.image.manifest.v1+json".to_owned()),
                (header::HeaderName::from_static("docker-content-digest"), digest),
            ];
            let body = if method == Method::HEAD { String::new() } else { manifest };
            (StatusCode::OK, headers, body).into_response()
        }
        (_, _) if path.contains("/manifests/") => {
            // A HEAD without a digest header makes the client GET the manifest.
            if method == Method::HEAD {
                return StatusCode::OK.into_response();
            }
            let content_type = [(header::CONTENT_TYPE, "application/vnd.oci.image.manifest.v1+json")];
            (StatusCode::OK, content_type, endless(&shared)).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
