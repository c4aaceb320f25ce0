//! Kubernetes events about the objects the controllers act on, written in
//! the background so that a sync never waits for them, as upstream's event
//! broadcaster does.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Events waiting to be written; more are dropped, as upstream drops them.
const BACKLOG: usize = 4096;
/// Events written at once.
const WRITERS: usize = 8;

/// Writes events in the background; clones share the writer.
#[derive(Clone)]
pub struct Events {
    queue: mpsc::Sender<(ObjectReference, Event)>,
}

impl Events {
    /// Starts the writer, reporting as `controller`.
    pub fn new(client: Client, controller: &str) -> Self {
        let recorder = Recorder::new(client, Reporter { controller: controller.to_owned(), instance: instance() });
        let (queue, pending) = mpsc::channel::<(ObjectReference, Event)>(BACKLOG);
        tokio::spawn(async move {
            ReceiverStream::new(pending)
                .for_each_concurrent(WRITERS, |(reference, event)| {
                    let recorder = &recorder;
                    async move {
                        if let Err(err) = recorder.publish(&event, &reference).await {
                            tracing::debug!(reason = %event.reason, "cannot write an event: {err}");
                        }
                    }
                })
                .await;
        });
        Events { queue }
    }

    /// Records an event about `reference`.
    pub fn publish(&self, reference: ObjectReference, type_: EventType, reason: &str, note: String) {
        let event =
            Event { type_, reason: reason.to_owned(), note: Some(note), action: reason.to_owned(), secondary: None };
        if self.queue.try_send((reference, event)).is_err() {
            tracing::debug!(reason, "event backlog full, dropping an event");
        }
    }

    /// Records a normal event.
    pub fn normal(&self, reference: ObjectReference, reason: &str, note: impl Into<String>) {
        self.publish(reference, EventType::Normal, reason, note.into());
    }

    /// Records a warning.
    pub fn warning(&self, reference: ObjectReference, reason: &str, note: impl Into<String>) {
        self.publish(reference, EventType::Warning, reason, note.into());
    }
}

/// This replica's name for events: the pod's name when it runs in one.
fn instance() -> Option<String> {
    std::env::var("POD_NAME").ok().or_else(|| std::env::var("HOSTNAME").ok()).filter(|name| !name.is_empty())
}
