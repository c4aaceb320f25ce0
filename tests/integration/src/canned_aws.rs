//! A loopback server that answers every request with one canned status and
//! body, such as an AWS throttling error or an HTML error page, and records
//! the requests it received.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::oneshot;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Recorded {
    /// The value of the header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

#[derive(Default)]
struct Canned {
    status: u16,
    body: String,
    requests: Vec<Recorded>,
}

type Shared = Arc<Mutex<Canned>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Canned> {
    shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn answer(State(shared): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let mut canned = lock(&shared);
    let headers = headers
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect();
    canned.requests.push(Recorded { headers, body });
    let status = StatusCode::from_u16(canned.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, canned.body.clone()).into_response()
}

/// A running server; it stops when dropped.
pub struct CannedAws {
    address: SocketAddr,
    shared: Shared,
    _stop: oneshot::Sender<()>,
}

impl CannedAws {
    /// Starts the server on a free loopback port, answering 200 with an
    /// empty body until told otherwise.
    ///
    /// # Errors
    /// When no port can be bound.
    pub async fn start() -> std::io::Result<Self> {
        let shared: Shared = Arc::new(Mutex::new(Canned { status: 200, ..Canned::default() }));
        let router = Router::new().fallback(answer).with_state(shared.clone());
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
        Ok(CannedAws { address, shared, _stop: stop })
    }

    /// Answers every following request with `status` and `body`.
    pub fn answer(&self, status: u16, body: impl Into<String>) {
        let mut canned = lock(&self.shared);
        canned.status = status;
        canned.body = body.into();
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared).requests.clone()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}
