//! The Kubernetes plumbing wasm-ccm's controllers and provider reloader
//! share, each as upstream's client-go counterpart behaves:
//!
//! - [`client`]: the clients, with upstream's request rate limits, each
//!   controller's own ServiceAccount identity when asked, and the
//!   reachability of the API server for readiness;
//! - [`informer`]: a watch-backed cache of one kind, its changes handed
//!   to a callback and to subscribers from a replay of the cache, objects
//!   trimmed to what the controllers read;
//! - [`events`]: events as upstream's recorder writes them (core `v1`, the
//!   controller as their source, repeats counted, a bounded backlog per
//!   provider);
//! - [`writes`]: writes answered with the object's metadata alone.

pub mod client;
pub mod events;
pub mod informer;
pub mod writes;

pub use client::reachability::is_transport_error;
pub use client::{ClientError, ClientSettings, Clients};
pub use events::{EventType, Events};
