//! What every controller runs on, the same for each, naming none of them:
//! upstream's settings ([`config`]); the context a reconcile gets and the
//! one error it fails with (`context`, `error`); the [`runner`] that
//! reconciles a controller's keys over a keyed work queue (`workqueue`),
//! with per-key `locks`; the shared watches (`caches`) and what a
//! controller is to the manager (`driver`); [`leader`] election; and the
//! [`metrics`].

pub(crate) mod caches;
pub mod config;
pub(crate) mod context;
pub(crate) mod driver;
pub(crate) mod error;
pub mod leader;
pub(crate) mod locks;
pub mod metrics;
pub mod runner;
pub(crate) mod workqueue;
