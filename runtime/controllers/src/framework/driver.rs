//! What a controller is to the manager: what it hears of the cluster's
//! changes (a [`Watcher`] of the shared watches) and how it runs
//! ([`Controller`]). The manager starts the watches the controllers read
//! ([`Caches`](super::caches::Caches)), hands every change to each
//! controller that hears it, and runs them all once the caches are synced,
//! the same way for every controller. Each controller's periodic work
//! (resync, refresh, monitoring) is its runner's: a sweep, or a reconcile
//! that asks to run again.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::caches::Watcher;
use super::config::ControllerName;
use super::runner::Stopped;

/// A controller the manager runs.
pub(crate) trait Controller: Send + 'static {
    /// Which controller it is.
    const NAME: ControllerName;

    /// What it hears; `None` when it reads the caches only.
    fn watcher(&self) -> Option<Arc<dyn Watcher>> {
        None
    }

    /// Whether the namespaces must be listed before it starts.
    fn waits_for_namespaces(&self) -> bool {
        false
    }

    /// Runs until `stop`, then lets reconciles in flight finish.
    ///
    /// # Errors
    /// When it stopped on its own.
    fn run(self, stop: CancellationToken) -> impl Future<Output = Result<(), Stopped>> + Send;
}

/// A controller made and not yet running: what it hears, and its run.
pub(crate) struct Described {
    pub(crate) name: ControllerName,
    pub(crate) watcher: Option<Arc<dyn Watcher>>,
    pub(crate) waits_for_namespaces: bool,
    /// Its run until the stop it was described with; started when polled.
    pub(crate) run: BoxFuture<'static, Result<(), Stopped>>,
}

impl Described {
    /// `controller`, to run until `stop`.
    pub(crate) fn new<C: Controller>(controller: C, stop: CancellationToken) -> Self {
        Described {
            name: C::NAME,
            watcher: controller.watcher(),
            waits_for_namespaces: controller.waits_for_namespaces(),
            run: Box::pin(controller.run(stop)),
        }
    }
}
