//! A keyed work queue as controllers use it: a key waits in the queue once
//! however often it is added, is never processed by two workers at once (an
//! add while it is processed brings it back afterwards), and can come back
//! after a delay or after a per-key exponential backoff.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::metrics::QueueMetrics;

/// Per-key exponential backoff: `base`, doubled after every failure, up to
/// `max`; with an `overall` bucket, retries of all keys together are
/// paced too, and a retry waits for whichever is later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay after the first failure.
    pub base: Duration,
    /// The longest delay.
    pub max: Duration,
    /// The pace of all keys' retries together.
    pub overall: Option<Bucket>,
}

/// A token bucket: `burst` retries at once, then `per_second`, as
/// client-go's `BucketRateLimiter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Retries per second once the burst is spent.
    pub per_second: u32,
    /// Retries at once.
    pub burst: u32,
}

impl Backoff {
    /// Upstream's service controller backoff: 5 s to 300 s.
    pub const SERVICE: Backoff = Backoff { base: Duration::from_secs(5), max: Duration::from_secs(300), overall: None };
    /// A Service waiting for its load balancer's cleanup: upstream's backoff,
    /// but at least every 30 s, as upstream's informer resync (30 s) queues
    /// such a Service again whatever its backoff.
    pub const SERVICE_CLEANUP: Backoff =
        Backoff { base: Duration::from_secs(5), max: Duration::from_secs(30), overall: None };
    /// client-go's default controller rate limiter, which upstream's cloud
    /// node controller uses: 5 ms to 1000 s per key, and 10 retries per
    /// second with bursts of 100 overall.
    pub const CONTROLLER: Backoff = Backoff {
        base: Duration::from_millis(5),
        max: Duration::from_secs(1000),
        overall: Some(Bucket { per_second: 10, burst: 100 }),
    };

    /// The delay after `failures` earlier failures.
    pub fn delay(&self, failures: u32) -> Duration {
        self.base.saturating_mul(1u32.checked_shl(failures).unwrap_or(u32::MAX)).min(self.max)
    }
}

/// How often the gauges of the work in progress are set: client-go's period.
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

struct State<K> {
    queue: VecDeque<K>,
    /// Keys in `queue`, with the time they were added.
    queued: HashMap<K, Instant>,
    /// Keys handed to a worker, with the time they were.
    processing: HashMap<K, Instant>,
    /// Keys added while being processed.
    dirty: HashSet<K>,
    failures: HashMap<K, u32>,
    /// When the overall bucket's next retry is due, were it never to
    /// burst (the theoretical arrival time of the generic cell rate
    /// algorithm).
    overall_due: Option<Instant>,
    shut_down: bool,
}

impl<K> State<K> {
    /// Reserves a retry in `bucket` at `now`: how long it waits. A
    /// reservation is taken even when it must wait, as client-go's
    /// `Reserve`; `governor` only checks whether one is free now, so this
    /// is written out.
    fn reserve(&mut self, bucket: Bucket, now: Instant) -> Duration {
        let interval = Duration::from_secs(1) / bucket.per_second.max(1);
        let due = self.overall_due.map_or(now, |due| due.max(now)) + interval;
        self.overall_due = Some(due);
        due.saturating_duration_since(now + interval * bucket.burst.max(1))
    }
}

struct Shared<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    metrics: QueueMetrics,
}

impl<K> Shared<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A work queue of keys `K`; clones share the queue.
pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
    delayed: mpsc::UnboundedSender<(Instant, K)>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        WorkQueue { shared: self.shared.clone(), delayed: self.delayed.clone() }
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    /// A queue; must be created inside a tokio runtime, where it runs its
    /// delay timer.
    pub fn new(metrics: QueueMetrics) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued: HashMap::new(),
                processing: HashMap::new(),
                dirty: HashSet::new(),
                failures: HashMap::new(),
                overall_due: None,
                shut_down: false,
            }),
            ready: Notify::new(),
            metrics,
        });
        let (delayed, pending) = mpsc::unbounded_channel();
        let queue = WorkQueue { shared, delayed };
        tokio::spawn(queue.clone().run_timer(pending));
        queue
    }

    /// Queues `key` unless it is already waiting.
    pub fn add(&self, key: K) {
        let mut state = self.shared.lock();
        if state.shut_down || state.queued.contains_key(&key) {
            return;
        }
        self.shared.metrics.adds.inc();
        if state.processing.contains_key(&key) {
            state.dirty.insert(key);
            return;
        }
        state.queued.insert(key.clone(), Instant::now());
        state.queue.push_back(key);
        self.shared.metrics.depth.set(state.queue.len() as i64);
        drop(state);
        self.shared.ready.notify_one();
    }

    /// Queues `key` after `delay`.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        // The timer task lives as long as any clone of the queue.
        let _ = self.delayed.send((Instant::now() + delay, key));
    }

    /// Queues `key` after its `backoff` and counts one more failure;
    /// returns the delay.
    pub fn add_rate_limited(&self, key: K, backoff: &Backoff) -> Duration {
        let delay = {
            let mut state = self.shared.lock();
            let failures = state.failures.entry(key.clone()).or_insert(0);
            let delay = backoff.delay(*failures);
            *failures = failures.saturating_add(1);
            let overall = backoff.overall.map(|bucket| state.reserve(bucket, Instant::now()));
            delay.max(overall.unwrap_or_default())
        };
        self.shared.metrics.retries.inc();
        self.add_after(key, delay);
        delay
    }

    /// Forgets `key`'s failures, so that its next backoff starts again.
    pub fn forget(&self, key: &K) {
        self.shared.lock().failures.remove(key);
    }

    /// How many times `key` failed since it was last forgotten.
    #[cfg(test)]
    pub fn failures(&self, key: &K) -> u32 {
        self.shared.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// The next key to process; `None` once the queue is shut down. Call
    /// [`WorkQueue::done`] when finished with it.
    pub async fn next(&self) -> Option<K> {
        loop {
            let notified = self.shared.ready.notified();
            {
                let mut state = self.shared.lock();
                if state.shut_down {
                    return None;
                }
                if let Some(key) = state.queue.pop_front() {
                    let added = state.queued.remove(&key).unwrap_or_else(Instant::now);
                    state.processing.insert(key.clone(), Instant::now());
                    self.shared.metrics.depth.set(state.queue.len() as i64);
                    self.shared.metrics.queue_duration.observe(added.elapsed().as_secs_f64());
                    let more = !state.queue.is_empty();
                    drop(state);
                    if more {
                        self.shared.ready.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Marks `key` processed; it comes back if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut state = self.shared.lock();
        if let Some(started) = state.processing.remove(key) {
            self.shared.metrics.work_duration.observe(started.elapsed().as_secs_f64());
        }
        if state.dirty.remove(key) && !state.shut_down {
            state.queued.insert(key.clone(), Instant::now());
            state.queue.push_back(key.clone());
            self.shared.metrics.depth.set(state.queue.len() as i64);
            drop(state);
            self.shared.ready.notify_one();
        }
    }

    /// Keys waiting.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Whether no key waits.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops handing out keys: [`WorkQueue::next`] returns `None` from now on.
    pub fn shut_down(&self) {
        self.shared.lock().shut_down = true;
        self.shared.ready.notify_waiters();
    }

    /// Sets the gauges of the work in progress, as client-go's
    /// `updateUnfinishedWork`.
    fn measure_unfinished_work(&self) {
        let state = self.shared.lock();
        let now = Instant::now();
        let running = state.processing.values().map(|started| now.saturating_duration_since(*started).as_secs_f64());
        let (total, longest) =
            running.fold((0.0, 0.0_f64), |(total, longest), seconds| (total + seconds, longest.max(seconds)));
        self.shared.metrics.unfinished_work.set(total);
        self.shared.metrics.longest_running.set(longest);
    }

    /// Moves delayed keys into the queue when their time comes, and
    /// measures the work in progress every [`UNFINISHED_WORK_PERIOD`].
    async fn run_timer(self, mut pending: mpsc::UnboundedReceiver<(Instant, K)>) {
        let mut timers: BTreeMap<(Instant, u64), K> = BTreeMap::new();
        let mut sequence = 0u64;
        let mut measure = tokio::time::interval(UNFINISHED_WORK_PERIOD);
        measure.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let next = timers.keys().next().map(|(at, _)| *at);
            tokio::select! {
                _ = measure.tick() => self.measure_unfinished_work(),
                received = pending.recv() => match received {
                    Some((at, key)) => {
                        sequence += 1;
                        timers.insert((at, sequence), key);
                    }
                    None => return,
                },
                () = sleep_until(next) => {
                    let now = Instant::now();
                    while let Some(entry) = timers.first_entry() {
                        if entry.key().0 > now {
                            break;
                        }
                        self.add(entry.remove());
                    }
                }
            }
            if self.shared.lock().shut_down {
                return;
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::metrics::Metrics;

    fn queue() -> WorkQueue<&'static str> {
        WorkQueue::new(Metrics::default().queue("test"))
    }

    /// The value of the one series of `metric` in `text`.
    fn value(text: &str, metric: &str) -> f64 {
        let line = text.lines().find(|line| line.starts_with(&format!("{metric}{{"))).expect("the metric");
        line.rsplit(' ').next().and_then(|value| value.parse().ok()).expect("a number")
    }

    #[tokio::test(start_paused = true)]
    async fn the_work_in_progress_is_measured_as_client_go_measures_it() {
        let metrics = Metrics::default();
        let queue = WorkQueue::new(metrics.queue("test"));
        queue.add("a");
        queue.add("b");
        assert_eq!(queue.next().await, Some("a"));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(queue.next().await, Some("b"));
        tokio::time::sleep(Duration::from_secs(1)).await;
        let text = metrics.text();
        let longest = value(&text, "workqueue_longest_running_processor_seconds");
        let unfinished = value(&text, "workqueue_unfinished_work_seconds");
        assert!((2.5..=3.0).contains(&longest), "{text}");
        assert!((3.0..=4.0).contains(&unfinished), "measured within a period: {text}");
        queue.done(&"a");
        queue.done(&"b");
        tokio::time::sleep(UNFINISHED_WORK_PERIOD).await;
        assert_eq!(value(&metrics.text(), "workqueue_unfinished_work_seconds"), 0.0);
    }

    #[test]
    fn backoff_doubles_up_to_the_limit() {
        let backoff = Backoff::SERVICE;
        let delays: Vec<u64> = (0..8).map(|failures| backoff.delay(failures).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(300));
    }

    #[tokio::test(start_paused = true)]
    async fn the_controller_backoff_paces_each_key_and_all_keys_together() {
        let queue = WorkQueue::<String>::new(Metrics::default().queue("test"));
        let backoff = Backoff::CONTROLLER;
        let key = |n: u32| format!("node-{n}");
        let first: Vec<Duration> = (0..3).map(|_| queue.add_rate_limited(key(0), &backoff)).collect();
        assert_eq!(first, [5, 10, 20].map(Duration::from_millis), "one key's own backoff");
        assert_eq!(backoff.delay(40), Duration::from_secs(1000));
        // 100 retries at once are the burst (three taken above); then one
        // every 100 ms.
        let burst: Vec<Duration> = (1..98).map(|n| queue.add_rate_limited(key(n), &backoff)).collect();
        assert!(burst.iter().all(|delay| *delay == Duration::from_millis(5)), "{burst:?}");
        assert_eq!(queue.add_rate_limited(key(98), &backoff), Duration::from_millis(100));
        assert_eq!(queue.add_rate_limited(key(99), &backoff), Duration::from_millis(200));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(queue.add_rate_limited(key(100), &backoff), Duration::from_millis(5), "the bucket refilled");
    }

    #[tokio::test]
    async fn a_key_waits_once() {
        let queue = queue();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.next().await, Some("a"));
        assert_eq!(queue.next().await, Some("b"));
        assert!(queue.is_empty());
    }

    #[tokio::test]
    async fn a_key_added_while_processing_comes_back_after() {
        let queue = queue();
        queue.add("a");
        let key = queue.next().await.unwrap();
        queue.add("a");
        assert!(queue.is_empty(), "not handed to a second worker");
        queue.done(&key);
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.next().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_and_rate_limited_keys_come_back_in_time() {
        let queue = queue();
        queue.add_after("later", Duration::from_secs(30));
        assert_eq!(queue.add_rate_limited("failing", &Backoff::SERVICE), Duration::from_secs(5));
        assert_eq!(queue.add_rate_limited("failing", &Backoff::SERVICE), Duration::from_secs(10));
        assert_eq!(queue.failures(&"failing"), 2);
        let started = Instant::now();
        assert_eq!(queue.next().await, Some("failing"));
        assert_eq!(started.elapsed().as_secs(), 5);
        assert_eq!(queue.next().await, Some("later"));
        assert_eq!(started.elapsed().as_secs(), 30);
        queue.forget(&"failing");
        assert_eq!(queue.add_rate_limited("failing", &Backoff::SERVICE), Duration::from_secs(5));
    }

    #[tokio::test]
    async fn shut_down_stops_handing_out_keys() {
        let queue = queue();
        queue.add("a");
        queue.shut_down();
        assert_eq!(queue.next().await, None);
    }
}
