//! The fake provider's cloud: collections of JSON objects with versions,
//! served over HTTP on loopback, inspectable by tests and by `wasm-ccm local`.
//!
//! - `GET /v1/{collection}`: every object, `[{key, version, value}]`;
//! - `GET /v1/{collection}/{key}`: one object, or 404;
//! - `PUT /v1/{collection}/{key}`: writes the body; `if-none-match: *` only
//!   creates, `if-match: <version>` only replaces that version (412 otherwise);
//! - `DELETE /v1/{collection}/{key}`: 204, or 404.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

/// A stored object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Object {
    /// Its key in its collection.
    pub key: String,
    /// Raised by every write.
    pub version: u64,
    /// What was written.
    pub value: Value,
}

#[derive(Default)]
struct Shared {
    collections: Mutex<BTreeMap<String, BTreeMap<String, Object>>>,
    version: AtomicU64,
    requests: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, BTreeMap<String, Object>>> {
        self.collections.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running fake cloud; it stops when dropped.
pub struct FakeCloud {
    address: SocketAddr,
    shared: Arc<Shared>,
    _stop: oneshot::Sender<()>,
}

impl FakeCloud {
    /// Starts a fake cloud on a free loopback port.
    ///
    /// # Errors
    /// When no port can be bound.
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let router = Router::new()
            .route("/v1/{collection}", get(list))
            .route("/v1/{collection}/{key}", get(read).put(write).delete(remove))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, router).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(err) = served.await {
                tracing::warn!("fake cloud stopped: {err}");
            }
        });
        Ok(FakeCloud { address, shared, _stop: stop })
    }

    /// Its base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Its address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The objects of `collection`, by key.
    pub fn objects(&self, collection: &str) -> Vec<Object> {
        self.shared.lock().get(collection).map(|objects| objects.values().cloned().collect()).unwrap_or_default()
    }

    /// Stores an object behind the provider's back, as another client of the
    /// cloud would.
    pub fn insert(&self, collection: &str, key: &str, value: Value) {
        let version = self.shared.version.fetch_add(1, Ordering::Relaxed) + 1;
        let object = Object { key: key.to_owned(), version, value };
        self.shared.lock().entry(collection.to_owned()).or_default().insert(key.to_owned(), object);
    }

    /// Deletes an object behind the provider's back, as drift would.
    pub fn remove(&self, collection: &str, key: &str) -> Option<Object> {
        self.shared.lock().get_mut(collection).and_then(|objects| objects.remove(key))
    }

    /// How many requests it has answered.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }
}

async fn list(State(shared): State<Arc<Shared>>, Path(collection): Path<String>) -> Json<Vec<Object>> {
    shared.requests.fetch_add(1, Ordering::Relaxed);
    Json(shared.lock().get(&collection).map(|objects| objects.values().cloned().collect()).unwrap_or_default())
}

async fn read(State(shared): State<Arc<Shared>>, Path((collection, key)): Path<(String, String)>) -> Response {
    shared.requests.fetch_add(1, Ordering::Relaxed);
    match shared.lock().get(&collection).and_then(|objects| objects.get(&key)) {
        Some(object) => Json(object.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn write(
    State(shared): State<Arc<Shared>>,
    Path((collection, key)): Path<(String, String)>,
    headers: HeaderMap,
    Json(value): Json<Value>,
) -> Response {
    shared.requests.fetch_add(1, Ordering::Relaxed);
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let mut collections = shared.lock();
    let objects = collections.entry(collection).or_default();
    let current = objects.get(&key).map(|object| object.version);
    let allowed = match (header("if-none-match"), header("if-match")) {
        (Some("*"), _) => current.is_none(),
        (_, Some(version)) => current.is_some_and(|current| version.parse() == Ok(current)),
        _ => true,
    };
    if !allowed {
        return StatusCode::PRECONDITION_FAILED.into_response();
    }
    let version = shared.version.fetch_add(1, Ordering::Relaxed) + 1;
    let object = Object { key: key.clone(), version, value };
    objects.insert(key, object.clone());
    let status = if current.is_some() { StatusCode::OK } else { StatusCode::CREATED };
    (status, Json(object)).into_response()
}

async fn remove(State(shared): State<Arc<Shared>>, Path((collection, key)): Path<(String, String)>) -> StatusCode {
    shared.requests.fetch_add(1, Ordering::Relaxed);
    match shared.lock().get_mut(&collection).and_then(|objects| objects.remove(&key)) {
        Some(_) => StatusCode::NO_CONTENT,
        None => StatusCode::NOT_FOUND,
    }
}
