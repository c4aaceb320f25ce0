//! The providers one process serves with, kept in step with a providers
//! file: each loaded on its own, added, removed and re-configured while the
//! others serve on, and published to the controllers as
//! [`Members`](wasm_ccm_controllers::Members).
//!
//! The [`Fleet`] decides what a new plan changes; a [`Loader`] decides how
//! a provider is loaded and kept up to date with its source. The
//! controller manager loads WebAssembly components; the tests here load
//! in-memory clouds.

mod fleet;
mod loader;
mod planned;

pub use fleet::{Fleet, Offer, Outcome, Refusal, StartError};
pub use loader::{BoxError, LoadFailure, Loader, error_chain};
pub use planned::{Planned, Unsupported};
