//! The one way every controller runs: a work queue of keys fed by the
//! controller's triggers, workers that reconcile one key at a time, and one
//! error policy that logs, counts and retries.

use std::fmt::Display;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::error::Error;
use super::metrics::Metrics;
use super::workqueue::{Backoff, WorkQueue};

/// What a reconcile that succeeded asks of the runner for its key, as
/// kube-runtime's `Action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing until a trigger queues the key again.
    AwaitChange,
    /// Reconcile the key again after this long, whatever the triggers do:
    /// how a controller repairs drift.
    RequeueAfter(Duration),
}

/// How a controller retries a key whose reconcile failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// With the per-key exponential backoff.
    Backoff(Backoff),
    /// After this long, as when it succeeded: the next round of a controller
    /// that requeues its key every period, as upstream's sliding periods.
    After(Duration),
    /// Not at all: the controller's next trigger, a sweep or a change,
    /// comes soon enough, as upstream's periodic controllers do.
    NextTrigger,
}

/// The key of work on everything at once, such as all the cluster's
/// routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct All;

impl Display for All {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("*")
    }
}

/// A controller's work on one key.
pub trait Reconcile: Send + Sync + 'static {
    /// What identifies the work: an object's key, or `()` for work on
    /// everything at once.
    type Key: Clone + Eq + Hash + Display + Send + Sync + 'static;

    /// The controller's name in logs, spans and metrics.
    const NAME: &'static str;

    /// Its work queue's name in metrics: upstream's where upstream has one.
    const QUEUE: &'static str;

    /// How `key` is retried when its reconcile failed.
    fn retry(&self, key: &Self::Key) -> Retry;

    /// Brings `key`'s object in line with the cloud, or the cloud with it,
    /// and says when to come back to it.
    fn reconcile(&self, key: &Self::Key) -> impl Future<Output = Result<Action, Error>> + Send;
}

/// Why a controller stopped before it was asked to.
#[derive(Debug, thiserror::Error)]
#[error("the {controller} controller stopped: {reason}")]
pub struct Stopped {
    /// The controller.
    pub controller: &'static str,
    /// Why.
    pub reason: String,
}

/// A controller's queue and workers.
pub struct Runner<R: Reconcile> {
    reconciler: Arc<R>,
    queue: WorkQueue<R::Key>,
    workers: usize,
    metrics: Metrics,
}

impl<R: Reconcile> Runner<R> {
    /// Runs `reconciler` with `workers` keys at once; must be made inside a
    /// tokio runtime, where its queue runs its delay timer.
    pub fn new(reconciler: R, workers: usize, metrics: Metrics) -> Self {
        let queue = WorkQueue::new(metrics.queue(R::QUEUE));
        Runner { reconciler: Arc::new(reconciler), queue, workers: workers.max(1), metrics }
    }

    /// The queue, for the controller's triggers to add keys to.
    pub fn queue(&self) -> WorkQueue<R::Key> {
        self.queue.clone()
    }

    /// The reconciler the workers share.
    pub fn reconciler(&self) -> Arc<R> {
        self.reconciler.clone()
    }

    /// Reconciles keys as they come until `stop`, then lets the reconciles
    /// in flight finish.
    ///
    /// # Errors
    /// When a worker panicked: the controller is broken, and upstream's
    /// would have crashed the process.
    pub async fn run(self, stop: CancellationToken) -> Result<(), Stopped> {
        let mut workers = JoinSet::new();
        for worker in 0..self.workers {
            let (reconciler, queue, metrics) = (self.reconciler.clone(), self.queue.clone(), self.metrics.clone());
            let span = tracing::info_span!("worker", controller = R::NAME, worker);
            workers.spawn(work(reconciler, queue, metrics).instrument(span));
        }
        let failure = tokio::select! {
            () = stop.cancelled() => None,
            Some(ended) = workers.join_next() => Some(ended),
        };
        self.queue.shut_down();
        let failure = match failure {
            Some(ended) => Some(ended),
            None => workers.join_next().await.filter(Result::is_err),
        };
        while workers.join_next().await.is_some() {}
        match failure {
            None => Ok(()),
            Some(Ok(())) => Err(Stopped { controller: R::NAME, reason: "a worker ended".to_owned() }),
            Some(Err(err)) => Err(Stopped { controller: R::NAME, reason: panic_reason(err) }),
        }
    }

    /// Runs as [`Runner::run`], and queues the keys `sweep` lists now and
    /// every `period`, besides those the controller's triggers queue: the
    /// periodic pass over every object of upstream's periodic controllers.
    ///
    /// # Errors
    /// When a worker panicked.
    pub async fn run_sweeping(
        self,
        period: Duration,
        mut sweep: impl FnMut() -> Vec<R::Key> + Send,
        stop: CancellationToken,
    ) -> Result<(), Stopped> {
        let queue = self.queue();
        let working = stop.child_token();
        let due = every(period, working.clone(), move || {
            for key in sweep() {
                queue.add(key);
            }
        });
        let (result, ()) = tokio::join!(stopping_all_on_failure(self.run(working.clone()), &working), due);
        result
    }
}

fn panic_reason(err: tokio::task::JoinError) -> String {
    match err.try_into_panic() {
        Ok(panic) => panic
            .downcast_ref::<&str>()
            .map(|message| (*message).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .map_or_else(|| "a worker panicked".to_owned(), |message| format!("a worker panicked: {message}")),
        Err(err) => err.to_string(),
    }
}

async fn work<R: Reconcile>(reconciler: Arc<R>, queue: WorkQueue<R::Key>, metrics: Metrics) {
    while let Some(key) = queue.next().await {
        let span = tracing::info_span!("reconcile", controller = R::NAME, key = %key);
        match reconciler.reconcile(&key).instrument(span).await {
            Ok(action) => {
                queue.forget(&key);
                if let Action::RequeueAfter(delay) = action {
                    queue.add_after(key.clone(), delay);
                }
            }
            Err(err) => on_error(&*reconciler, &queue, &metrics, &key, &err),
        }
        queue.done(&key);
    }
}

/// The error policy: count the error by kind, retry as the controller
/// says, and log, except an unreachable API server, which the client logs
/// once for all requests.
fn on_error<R: Reconcile>(reconciler: &R, queue: &WorkQueue<R::Key>, metrics: &Metrics, key: &R::Key, err: &Error) {
    metrics.reconcile_error(R::NAME, err.kind());
    let retry = match (err.retry_after(), reconciler.retry(key)) {
        (Some(delay), _) => {
            queue.add_after(key.clone(), delay);
            tracing::info!(controller = R::NAME, %key, "the provider asked to retry in {delay:?}: {err}");
            return;
        }
        (None, Retry::Backoff(backoff)) => Some(queue.add_rate_limited(key.clone(), &backoff)),
        (None, Retry::After(delay)) => {
            queue.add_after(key.clone(), delay);
            Some(delay)
        }
        (None, Retry::NextTrigger) => None,
    };
    let retry = retry.map_or_else(|| "at the next trigger".to_owned(), |delay| format!("in {delay:?}"));
    if err.is_transport() {
        tracing::debug!(controller = R::NAME, %key, "failed, retrying {retry}: {err}");
    } else {
        tracing::warn!(controller = R::NAME, %key, "failed, retrying {retry}: {err}");
    }
}

/// Awaits `run`, one part of a controller, and cancels `working`, the token
/// of all its parts, when it fails: a controller stops as a whole.
pub async fn stopping_all_on_failure(
    run: impl Future<Output = Result<(), Stopped>>,
    working: &CancellationToken,
) -> Result<(), Stopped> {
    let result = run.await;
    if result.is_err() {
        working.cancel();
    }
    result
}

/// Calls `tick` now and then every `period` until `stop`.
async fn every(period: Duration, stop: CancellationToken, mut tick: impl FnMut()) {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => tick(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::time::Instant;
    use wasm_ccm_cloud::ProviderError;

    use super::*;

    /// Answers each reconcile with the next of its outcomes, and records
    /// when each came.
    struct Scripted<const RETRIES: bool> {
        outcomes: Mutex<Vec<Option<ProviderError>>>,
        calls: Mutex<Vec<Instant>>,
    }

    impl<const RETRIES: bool> Scripted<RETRIES> {
        fn new(outcomes: Vec<Option<ProviderError>>) -> Self {
            Scripted { outcomes: Mutex::new(outcomes), calls: Mutex::default() }
        }
    }

    impl<const RETRIES: bool> Reconcile for Scripted<RETRIES> {
        type Key = All;

        const NAME: &'static str = "scripted";
        const QUEUE: &'static str = "scripted";
        fn retry(&self, _key: &Self::Key) -> Retry {
            if RETRIES { Retry::Backoff(Backoff::SERVICE) } else { Retry::NextTrigger }
        }

        async fn reconcile(&self, _: &All) -> Result<Action, Error> {
            self.calls.lock().unwrap().push(Instant::now());
            let outcome = self.outcomes.lock().unwrap().remove(0);
            match outcome {
                Some(ProviderError::Panic { message }) => panic!("{message}"),
                Some(err) => Err(Error::cloud("failed to do it")(err)),
                None => Ok(Action::AwaitChange),
            }
        }
    }

    /// Runs `reconciler` on one key until it was called `calls` times.
    async fn run<R: Reconcile<Key = All>>(reconciler: R, calls: usize, count: impl Fn(&R) -> usize) -> Metrics {
        let metrics = Metrics::default();
        let runner = Runner::new(reconciler, 2, metrics.clone());
        let reconciler = runner.reconciler();
        runner.queue().add(All);
        let stop = CancellationToken::new();
        let running = tokio::spawn(runner.run(stop.clone()));
        while count(&reconciler) < calls {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.cancel();
        running.await.unwrap().unwrap();
        metrics
    }

    #[tokio::test(start_paused = true)]
    async fn failures_come_back_after_the_backoff_and_are_counted_by_kind() {
        let started = Instant::now();
        let script = Scripted::<true>::new(vec![
            Some(ProviderError::Cloud("no".into())),
            Some(ProviderError::Cloud("no".into())),
            None,
        ]);
        let metrics = run(script, 3, |script| script.calls.lock().unwrap().len()).await;
        assert!(started.elapsed() >= Duration::from_secs(15), "5 s, then 10 s: {:?}", started.elapsed());
        assert!(metrics.text().contains(r#"reconcile_errors_total{controller="scripted",kind="cloud",provider=""} 2"#));
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_error_comes_back_after_its_own_delay() {
        let started = Instant::now();
        let retry = ProviderError::Retry { delay: Duration::from_millis(300), message: "busy".into() };
        let script = Scripted::<true>::new(vec![Some(retry), None]);
        run(script, 2, |script| script.calls.lock().unwrap().len()).await;
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(5), "{elapsed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn periodic_controllers_wait_for_their_next_trigger() {
        let metrics = Metrics::default();
        let runner = Runner::new(Scripted::<false>::new(vec![Some(ProviderError::Cloud("no".into()))]), 1, metrics);
        let reconciler = runner.reconciler();
        runner.queue().add(All);
        let stop = CancellationToken::new();
        let running = tokio::spawn(runner.run(stop.clone()));
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(reconciler.calls.lock().unwrap().len(), 1, "not retried");
        stop.cancel();
        running.await.unwrap().unwrap();
    }

    /// Fails its first reconcile, then succeeds, asking each time to come
    /// back a minute later.
    struct EveryMinute {
        calls: Mutex<Vec<Instant>>,
    }

    impl Reconcile for EveryMinute {
        type Key = All;

        const NAME: &'static str = "every-minute";
        const QUEUE: &'static str = "every-minute";

        fn retry(&self, _key: &Self::Key) -> Retry {
            Retry::After(Duration::from_secs(60))
        }

        async fn reconcile(&self, _: &All) -> Result<Action, Error> {
            let mut calls = self.calls.lock().unwrap();
            calls.push(Instant::now());
            match calls.len() {
                1 => Err(Error::cloud("failed to do it")(ProviderError::Cloud("no".into()))),
                _ => Ok(Action::RequeueAfter(Duration::from_secs(60))),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_comes_back_when_its_reconcile_asks_and_after_a_failure_as_its_retry_says() {
        let started = Instant::now();
        let calls = |every: &EveryMinute| every.calls.lock().unwrap().len();
        run(EveryMinute { calls: Mutex::default() }, 3, calls).await;
        // `run` polls every 10 ms: a third call a minute late would show.
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_secs(120) && elapsed < Duration::from_secs(121), "{elapsed:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_sweep_queues_its_keys_now_and_every_period() {
        let script = Scripted::<false>::new(vec![None; 3]);
        let runner = Runner::new(script, 1, Metrics::default());
        let reconciler = runner.reconciler();
        let stop = CancellationToken::new();
        let started = Instant::now();
        let running = tokio::spawn(runner.run_sweeping(Duration::from_secs(30), || vec![All], stop.clone()));
        while reconciler.calls.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_secs(60) && elapsed < Duration::from_secs(61), "{elapsed:?}");
        stop.cancel();
        running.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_panicking_worker_stops_the_controller() {
        let runner = Runner::new(
            Scripted::<true>::new(vec![Some(ProviderError::Panic { message: "boom".into() })]),
            2,
            Metrics::default(),
        );
        runner.queue().add(All);
        let stopped = runner.run(CancellationToken::new()).await.unwrap_err();
        assert_eq!(stopped.to_string(), "the scripted controller stopped: a worker panicked: boom");
    }
}
