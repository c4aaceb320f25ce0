//! Kubernetes events about the objects the controllers act on, written in
//! the background so that a sync never waits for them, as upstream's event
//! broadcaster does.
//!
//! Events are core `v1` Events, as upstream's recorder writes them: with
//! the controller as `source.component` (so that `kubectl get events
//! --field-selector source=service-controller` finds them), and a repeat of
//! an event (same object, type, reason and message) within
//! [`REPEAT_WINDOW`] counted on the first one (`count`, `lastTimestamp`)
//! instead of creating another. A new message, such as a different cloud
//! error, is a new event, so that no error message is hidden behind an
//! older one.
//!
//! Each provider's events may take only a share of the backlog, so that a
//! provider whose every call fails cannot crowd out the events of the
//! others and of the controllers' own: with `n` providers writing, each may
//! hold `1/(n+1)` of it, half of it when there is one.
//!
//! Routine (`Normal`) events give way first: once [`ROUTINE_BACKLOG`]
//! routine events wait, another is dropped, as upstream's broadcaster
//! drops any event past its queue of 1000. A burst (every Service ensured
//! at start) then spares the API server about as many routine writes as
//! upstream's does, while warnings, which say what failed, may still fill
//! the provider's share.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event as K8sEvent, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Events waiting to be written; more are dropped, as upstream drops them.
const BACKLOG: usize = 4096;
/// Routine events waiting past which another is dropped: upstream's queue.
const ROUTINE_BACKLOG: usize = 1000;
/// Events written at once.
const WRITERS: usize = 2;
/// The most bytes of a message written; longer ones are cut, marked as
/// cut, as `events.k8s.io/v1` readers of the same events accept no more.
const NOTE_LIMIT: usize = 1024;
/// How long a repeat counts towards the same event.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(6 * 60);
/// How often events older than the repeat window are forgotten.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Whether an event is routine or calls for attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something happened as intended.
    Normal,
    /// Something failed or needs attention.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// What makes two events the same event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    type_: EventType,
    reason: String,
    note: String,
    provider: Option<Arc<str>>,
}

/// An event already written, and how often it happened.
struct Written {
    namespace: String,
    name: String,
    count: i32,
    last: Instant,
}

/// One event to write.
pub struct Pending {
    reference: ObjectReference,
    type_: EventType,
    reason: String,
    note: String,
    provider: Option<Arc<str>>,
    /// Its place in its provider's share, given back when it is written
    /// or dropped.
    _place: Option<Place>,
    /// Its place among the routine events waiting, when it is one.
    _routine: Option<Place>,
}

/// How many of one provider's events wait to be written; clones share it.
#[derive(Clone)]
struct Share(Arc<Waiting>);

/// One provider's waiting events, counted among the writer's providers
/// while it lives.
struct Waiting {
    count: Arc<AtomicUsize>,
    providers: Arc<Providers>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.providers.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The providers writing through one writer, each with its share.
#[derive(Default)]
struct Providers {
    shares: Mutex<HashMap<Arc<str>, std::sync::Weak<Waiting>>>,
    live: AtomicUsize,
}

impl Providers {
    /// The share of provider `name`: the one its other writers use, or a
    /// new one.
    fn share(self: &Arc<Self>, name: &Arc<str>) -> Share {
        let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(waiting) = shares.get(name).and_then(std::sync::Weak::upgrade) {
            return Share(waiting);
        }
        shares.retain(|_, waiting| waiting.strong_count() > 0);
        self.live.fetch_add(1, Ordering::AcqRel);
        let waiting = Arc::new(Waiting { count: Arc::default(), providers: self.clone() });
        shares.insert(name.clone(), Arc::downgrade(&waiting));
        Share(waiting)
    }

    /// How many events one provider may have waiting now.
    fn limit(&self) -> usize {
        BACKLOG / (1 + self.live.load(Ordering::Acquire))
    }
}

impl Share {
    /// A place for one more event, unless the share is taken.
    fn take(&self) -> Option<Place> {
        take_place(&self.0.count, self.0.providers.limit())
    }
}

/// A place among the events `waiting` counts, unless `limit` wait already.
fn take_place(waiting: &Arc<AtomicUsize>, limit: usize) -> Option<Place> {
    let taken = waiting.fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| (count < limit).then_some(count + 1));
    taken.is_ok().then(|| Place(waiting.clone()))
}

/// One waiting event's place in its provider's share.
struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `note` cut to [`NOTE_LIMIT`] bytes at a character boundary, marked as
/// cut.
fn fit_note(mut note: String) -> String {
    const CUT: &str = " ...";
    if note.len() > NOTE_LIMIT {
        let mut end = NOTE_LIMIT - CUT.len();
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str(CUT);
    }
    note
}

/// The events written within the repeat window, forgotten a minute at a
/// time rather than on every write.
struct Recent {
    events: HashMap<EventKey, Written>,
    pruned: Instant,
}

impl Default for Recent {
    fn default() -> Self {
        Recent { events: HashMap::new(), pruned: Instant::now() }
    }
}

impl Recent {
    /// Counts a repeat of `key` if it was written within the window: its
    /// namespace, name and new count.
    fn repeat(&mut self, key: &EventKey) -> Option<(String, String, i32)> {
        if self.pruned.elapsed() >= PRUNE_EVERY {
            self.events.retain(|_, event| event.last.elapsed() < REPEAT_WINDOW);
            self.pruned = Instant::now();
        }
        let event = self.events.get_mut(key).filter(|event| event.last.elapsed() < REPEAT_WINDOW)?;
        event.count += 1;
        event.last = Instant::now();
        Some((event.namespace.clone(), event.name.clone(), event.count))
    }
}

/// Writes events and counts their repeats.
struct Writer {
    client: Client,
    controller: String,
    instance: String,
    written: Mutex<Recent>,
}

impl Writer {
    async fn write(&self, pending: Pending) -> kube::Result<()> {
        let key = EventKey {
            kind: pending.reference.kind.clone(),
            namespace: pending.reference.namespace.clone(),
            name: pending.reference.name.clone(),
            uid: pending.reference.uid.clone(),
            type_: pending.type_,
            reason: pending.reason.clone(),
            note: pending.note.clone(),
            provider: pending.provider.clone(),
        };
        let now = Timestamp::now();
        let repeat = self.written.lock().unwrap_or_else(PoisonError::into_inner).repeat(&key);
        if let Some((namespace, name, count)) = repeat {
            let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
            let patch = json!({ "count": count, "lastTimestamp": Time(now) });
            api.patch(&name, &PatchParams::default(), &Patch::Strategic(patch)).await?;
            return Ok(());
        }
        let namespace = pending.reference.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let name =
            format!("{}.{:x}", pending.reference.name.as_deref().unwrap_or(&self.controller), now.as_nanosecond());
        let instance = match &pending.provider {
            Some(provider) => format!("{}/{provider}", self.instance),
            None => self.instance.clone(),
        };
        let event = K8sEvent {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: pending.reference,
            reason: Some(pending.reason),
            message: Some(fit_note(pending.note)),
            type_: Some(pending.type_.as_str().to_owned()),
            source: Some(EventSource { component: Some(self.controller.clone()), host: None }),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            reporting_component: Some(self.controller.clone()),
            reporting_instance: Some(instance),
            ..K8sEvent::default()
        };
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &event).await?;
        let written = Written { namespace, name, count: 1, last: Instant::now() };
        self.written.lock().unwrap_or_else(PoisonError::into_inner).events.insert(key, written);
        Ok(())
    }
}

/// Writes events in the background; clones share the writer.
///
/// Events of work done with one provider, from
/// [`Events::for_provider`], name it after the replica in their
/// `reportingInstance`: `<replica>/<provider>`.
#[derive(Clone)]
pub struct Events {
    queue: mpsc::Sender<Pending>,
    providers: Arc<Providers>,
    provider: Option<(Arc<str>, Share)>,
    /// Routine events waiting, whoever published them.
    routine: Arc<AtomicUsize>,
}

impl Events {
    /// Starts the writer, reporting as `controller`.
    pub fn new(client: Client, controller: &str) -> Self {
        let writer = Arc::new(Writer {
            client,
            controller: controller.to_owned(),
            instance: instance().unwrap_or_else(|| controller.to_owned()),
            written: Mutex::default(),
        });
        let (queue, pending) = mpsc::channel::<Pending>(BACKLOG);
        tokio::spawn(async move {
            ReceiverStream::new(pending)
                .for_each_concurrent(WRITERS, |pending| {
                    let writer = writer.clone();
                    async move {
                        let reason = pending.reason.clone();
                        if let Err(err) = writer.write(pending).await {
                            tracing::debug!(%reason, "cannot write an event: {err}");
                        }
                    }
                })
                .await;
        });
        Events { queue, providers: Arc::default(), provider: None, routine: Arc::default() }
    }

    /// The same writer, for events of work done with the provider `name`,
    /// which take at most its share of the backlog, whichever of its
    /// writers they come through.
    pub fn for_provider(&self, name: &str) -> Events {
        let name: Arc<str> = Arc::from(name);
        let share = self.providers.share(&name);
        Events {
            queue: self.queue.clone(),
            providers: self.providers.clone(),
            provider: Some((name, share)),
            routine: self.routine.clone(),
        }
    }

    /// Records an event about `reference`.
    pub fn publish(&self, reference: ObjectReference, type_: EventType, reason: &str, note: String) {
        let routine = match type_ {
            EventType::Warning => None,
            EventType::Normal => {
                let Some(place) = take_place(&self.routine, ROUTINE_BACKLOG) else {
                    tracing::debug!(reason, "{ROUTINE_BACKLOG} routine events wait to be written, dropping one");
                    return;
                };
                Some(place)
            }
        };
        let (provider, place) = match &self.provider {
            None => (None, None),
            Some((name, share)) => {
                let Some(place) = share.take() else {
                    tracing::debug!(reason, provider = %name, "the provider's share of the event backlog is full, dropping an event");
                    return;
                };
                (Some(name.clone()), Some(place))
            }
        };
        let pending =
            Pending { reference, type_, reason: reason.to_owned(), note, provider, _place: place, _routine: routine };
        if self.queue.try_send(pending).is_err() {
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

/// An event recorded by [`Events::recorder`]: `(type, reason, object name,
/// note)`.
#[cfg(any(test, feature = "testing"))]
pub type Recorded = (EventType, String, String, String);

#[cfg(any(test, feature = "testing"))]
impl Events {
    /// Events kept for a test to read rather than written.
    pub fn recorder() -> (Self, mpsc::Receiver<Pending>) {
        let (queue, pending) = mpsc::channel::<Pending>(BACKLOG);
        (Events { queue, providers: Arc::default(), provider: None, routine: Arc::default() }, pending)
    }

    /// The events `pending` has received so far.
    pub fn recorded(pending: &mut mpsc::Receiver<Pending>) -> Vec<Recorded> {
        let mut recorded = Vec::new();
        while let Ok(event) = pending.try_recv() {
            let name = event.reference.name.unwrap_or_default();
            recorded.push((event.type_, event.reason, name, event.note));
        }
        recorded
    }
}

/// This replica's name for events: the pod's name when it runs in one.
fn instance() -> Option<String> {
    std::env::var("POD_NAME").ok().or_else(|| std::env::var("HOSTNAME").ok()).filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(note: &str) -> EventKey {
        EventKey {
            kind: Some("Service".into()),
            namespace: Some("default".into()),
            name: Some("web".into()),
            uid: None,
            type_: EventType::Warning,
            reason: "SyncLoadBalancerFailed".into(),
            note: note.into(),
            provider: None,
        }
    }

    fn written(last: Instant) -> Written {
        Written { namespace: "default".into(), name: "web.1".into(), count: 1, last }
    }

    /// Fills `events`' share with `reason`, more than the whole backlog.
    fn flood(events: &Events, reason: &str) {
        let reference = ObjectReference { name: Some("web".into()), ..ObjectReference::default() };
        for _ in 0..BACKLOG {
            events.warning(reference.clone(), reason, "quota");
        }
    }

    fn count(recorded: &[Recorded], reason: &str) -> usize {
        recorded.iter().filter(|event| event.1 == reason).count()
    }

    #[test]
    fn a_provider_fills_only_its_share_of_the_backlog() {
        let (events, mut pending) = Events::recorder();
        let reference = ObjectReference { name: Some("web".into()), ..ObjectReference::default() };
        let (a, b) = (events.for_provider("a"), events.for_provider("b"));
        flood(&a, "A");
        b.warning(reference.clone(), "B", "quota");
        events.normal(reference.clone(), "Synced", "node");
        let recorded = Events::recorded(&mut pending);
        assert_eq!(count(&recorded, "A"), BACKLOG / 3, "a third with two providers writing");
        assert_eq!((count(&recorded, "B"), count(&recorded, "Synced")), (1, 1), "the others find room");
        a.warning(reference, "A", "again");
        assert_eq!(Events::recorded(&mut pending).len(), 1, "events written give their places back");
    }

    #[test]
    fn one_provider_may_hold_half_the_backlog_through_all_its_writers() {
        let (events, mut pending) = Events::recorder();
        let (service, node) = (events.for_provider("a"), events.for_provider("a"));
        flood(&service, "service");
        flood(&node, "node");
        let recorded = Events::recorded(&mut pending);
        assert_eq!(recorded.len(), BACKLOG / 2, "one share for the provider, however many writers: {}", recorded.len());
        drop((service, node));
        let gone_and_back = events.for_provider("b");
        flood(&gone_and_back, "b");
        assert_eq!(Events::recorded(&mut pending).len(), BACKLOG / 2, "a provider gone no longer counts");
    }

    #[test]
    fn routine_events_give_way_past_upstream_s_queue_and_warnings_do_not() {
        let (events, mut pending) = Events::recorder();
        let provider = events.for_provider("a");
        let reference = ObjectReference { name: Some("web".into()), ..ObjectReference::default() };
        for _ in 0..ROUTINE_BACKLOG + 10 {
            provider.normal(reference.clone(), "EnsuringLoadBalancer", "ensuring");
        }
        events.normal(reference.clone(), "Synced", "node");
        for _ in 0..10 {
            provider.warning(reference.clone(), "SyncLoadBalancerFailed", "quota");
        }
        let recorded = Events::recorded(&mut pending);
        assert_eq!(count(&recorded, "EnsuringLoadBalancer"), ROUTINE_BACKLOG, "routine events up to the queue");
        assert_eq!(count(&recorded, "Synced"), 0, "the controllers' routine events give way too");
        assert_eq!(count(&recorded, "SyncLoadBalancerFailed"), 10, "warnings still find room");
        provider.normal(reference, "EnsuringLoadBalancer", "again");
        assert_eq!(Events::recorded(&mut pending).len(), 1, "written events make room for routine ones");
    }

    #[test]
    fn notes_are_cut_to_what_the_api_accepts_at_a_character_boundary() {
        assert_eq!(fit_note("short".into()), "short");
        let exact = "x".repeat(NOTE_LIMIT);
        assert_eq!(fit_note(exact.clone()), exact);
        let cut = fit_note(format!("{}é{}", "x".repeat(NOTE_LIMIT - 5), "y".repeat(100)));
        assert!(cut.len() <= NOTE_LIMIT && cut.ends_with("x ..."), "{cut}");
    }

    #[test]
    fn a_repeat_within_the_window_is_counted_and_an_old_one_is_not() {
        let mut recent = Recent::default();
        recent.events.insert(key("quota"), written(Instant::now()));
        assert_eq!(recent.repeat(&key("quota")), Some(("default".into(), "web.1".into(), 2)));
        assert_eq!(recent.repeat(&key("another error")), None, "another note is another event");
        let long_ago = Instant::now().checked_sub(REPEAT_WINDOW + Duration::from_secs(1)).unwrap();
        recent.events.insert(key("quota"), written(long_ago));
        assert_eq!(recent.repeat(&key("quota")), None, "past the window: a new event");
    }
}
