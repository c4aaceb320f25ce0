//! Watch streams: newline-delimited JSON events replayed from the history, with bookmarks and expiry.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use crate::conversion;
use crate::error::ApiError;
use crate::history::{Change, ChangeKind};
use crate::list::ListOptions;
use crate::render::{self, Format};
use crate::resources::ResourceType;
use crate::store::{State, Store};

/// The annotation of the bookmark that ends the initial events of a streaming list.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// What a watch request asks for.
#[derive(Debug)]
pub(crate) struct WatchRequest {
    pub resource: &'static ResourceType,
    /// Namespace, selectors and the `resourceVersion` to start after.
    pub options: ListOptions,
    pub bookmarks: bool,
    pub timeout: Option<Duration>,
    pub send_initial_events: Option<bool>,
    pub format: Format,
}

/// An open watch: where it is in the history and what ends it.
struct Stream {
    store: Arc<Store>,
    request: WatchRequest,
    position: u64,
    revisions: watch::Receiver<u64>,
    drops: watch::Receiver<u64>,
    bookmarks: Option<Interval>,
    deadline: Option<Instant>,
    pending: Option<Bytes>,
    finished: bool,
}

/// Opens a watch and returns the streaming response body.
///
/// Without a resourceVersion (or with `0`) the stream starts with ADDED events for the current
/// objects; with one, it replays every later change from the history. A resourceVersion older than
/// the compaction point yields one ERROR event with a 410 Expired Status, then the stream ends.
///
/// # Errors
///
/// 400 for a resourceVersion that is not a number or `sendInitialEvents` without bookmarks.
pub(crate) fn watch(store: Arc<Store>, bookmark_interval: Duration, request: WatchRequest) -> Result<Body, ApiError> {
    let requested = match request.options.resource_version.as_deref() {
        None | Some("") | Some("0") => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            ApiError::BadRequest(format!("resourceVersion: Invalid value: \"{text}\": must be a number"))
        })?),
    };
    if request.send_initial_events == Some(true) && !request.bookmarks {
        return Err(ApiError::BadRequest(
            "allowWatchBookmarks: Required value: must be set to true when sendInitialEvents is set".into(),
        ));
    }
    let (revisions, drops) = store.subscribe();
    let bookmarks = request.bookmarks.then(|| {
        let mut interval = tokio::time::interval_at(Instant::now() + bookmark_interval, bookmark_interval);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        interval
    });
    let deadline = request.timeout.filter(|t| !t.is_zero()).map(|t| Instant::now() + t);
    let mut stream = Stream {
        store: store.clone(),
        request,
        position: 0,
        revisions,
        drops,
        bookmarks,
        deadline,
        pending: None,
        finished: false,
    };
    let initial_events = stream.request.send_initial_events.unwrap_or(requested.is_none());
    let first = store.read(|state| {
        let mut out = Vec::new();
        if initial_events {
            stream.initial_events(state, &mut out);
        } else {
            stream.position = requested.unwrap_or(state.revision());
            stream.catch_up(state, &mut out);
        }
        out
    });
    stream.pending = (!first.is_empty()).then(|| Bytes::from(first));
    let chunks = futures::stream::unfold(stream, |mut stream| async move {
        let chunk = stream.next_chunk().await?;
        Some((Ok::<_, Infallible>(chunk), stream))
    });
    Ok(Body::from_stream(chunks))
}

impl Stream {
    fn initial_events(&mut self, state: &State, out: &mut Vec<u8>) {
        let resource = self.request.resource;
        let objects = state.objects_at(resource, state.revision()).unwrap_or_default();
        let namespace = self.request.options.namespace.as_deref();
        for (_, object) in objects.iter().filter(|(key, _)| namespace.is_none_or(|n| key.namespace == n)) {
            let object = conversion::to_client(resource, object);
            if self.request.options.matches(&object) {
                self.event(out, "ADDED", &render::object(resource, self.request.format, &object));
            }
        }
        self.position = state.revision();
        if self.request.send_initial_events == Some(true) {
            self.bookmark(out, true);
        }
    }

    /// Appends every change after the current position, or the expiry error when it was compacted.
    fn catch_up(&mut self, state: &State, out: &mut Vec<u8>) {
        let changes = match state.history().since(self.position) {
            Ok(changes) => changes,
            Err(compacted) => {
                let error =
                    ApiError::Expired(format!("too old resource version: {} ({})", self.position, compacted.oldest));
                self.event(out, "ERROR", &Bytes::from(serde_json::to_vec(&error.status()).unwrap_or_default()));
                self.finished = true;
                return;
            }
        };
        let storage = self.request.resource.storage;
        let namespace = self.request.options.namespace.as_deref();
        for change in changes.filter(|c| c.storage == storage && namespace.is_none_or(|n| c.key.namespace == n)) {
            self.change(out, change);
        }
        self.position = self.position.max(state.revision());
    }

    fn change(&self, out: &mut Vec<u8>, change: &Change) {
        let resource = self.request.resource;
        let options = &self.request.options;
        let object = conversion::to_client(resource, &change.object);
        let before = change.previous.as_ref().map(|p| options.matches(&conversion::to_client(resource, p)));
        let now = options.matches(&object);
        let event = match (change.kind, before.unwrap_or(false), now) {
            (ChangeKind::Added, _, true) | (ChangeKind::Modified, false, true) => "ADDED",
            (ChangeKind::Modified, true, true) => "MODIFIED",
            (ChangeKind::Modified, true, false) | (ChangeKind::Deleted, true, _) | (ChangeKind::Deleted, _, true) => {
                "DELETED"
            }
            _ => return,
        };
        let plain = self.request.format == Format::Json && Arc::ptr_eq(&object, &change.object);
        let encoded =
            if plain { change.encoded().clone() } else { render::object(resource, self.request.format, &object) };
        self.event(out, event, &encoded);
    }

    fn event(&self, out: &mut Vec<u8>, kind: &str, object: &Bytes) {
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        out.extend_from_slice(object);
        out.extend_from_slice(b"}\n");
    }

    fn bookmark(&self, out: &mut Vec<u8>, initial_events_end: bool) {
        let resource = self.request.resource;
        let (kind, api_version) = match self.request.format {
            Format::Json => (resource.kind.to_string(), resource.api_version()),
            Format::Table => ("Table".to_string(), "meta.k8s.io/v1".to_string()),
            Format::Metadata => ("PartialObjectMetadata".to_string(), "meta.k8s.io/v1".to_string()),
        };
        let mut metadata = json!({ "resourceVersion": self.position.to_string() });
        if initial_events_end {
            metadata["annotations"] = json!({ INITIAL_EVENTS_END: "true" });
        }
        let object: Value = json!({ "kind": kind, "apiVersion": api_version, "metadata": metadata });
        self.event(out, "BOOKMARK", &Bytes::from(serde_json::to_vec(&object).unwrap_or_default()));
    }

    /// Waits for the next chunk to send; `None` ends the stream.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        if let Some(pending) = self.pending.take() {
            return Some(pending);
        }
        while !self.finished {
            let deadline = self.deadline;
            let Self { revisions, drops, bookmarks, .. } = self;
            tokio::select! {
                biased;
                _ = drops.changed() => return None,
                _ = async { tokio::time::sleep_until(deadline?).await; Some(()) }, if deadline.is_some() => return None,
                changed = revisions.changed() => {
                    changed.ok()?;
                    let store = self.store.clone();
                    let chunk = store.read(|state| {
                        let mut out = Vec::new();
                        self.catch_up(state, &mut out);
                        out
                    });
                    if !chunk.is_empty() {
                        return Some(Bytes::from(chunk));
                    }
                }
                _ = async { bookmarks.as_mut()?.tick().await; Some(()) }, if bookmarks.is_some() => {
                    let mut out = Vec::new();
                    self.bookmark(&mut out, false);
                    return Some(Bytes::from(out));
                }
            }
        }
        None
    }
}
