//! The cloud controllers of wasm-ccm, as upstream's cloud-controller-manager
//! runs them, calling a WebAssembly provider through
//! [`wasm_ccm_host::ProviderHandle`]:
//!
//! - the **service** controller: a load balancer for every Service of type
//!   LoadBalancer, kept in step with the nodes, repaired when it drifts;
//! - the **cloud node** controller: initialises new nodes from the cloud;
//! - the **cloud node lifecycle** controller: deletes nodes whose instances
//!   are gone and taints those shut down;
//! - the **route** controller: cloud routes for the nodes' pod CIDRs.
//!
//! [`ControllerManager`] runs those enabled on one watch of nodes and one of
//! Services.

mod client;
mod cloud;
pub mod config;
mod events;
mod informer;
pub mod leader;
mod lifecycle;
mod locks;
mod manager;
pub mod metrics;
mod node;
mod nodes;
mod reachability;
mod route;
mod service;
mod taints;
mod workqueue;

pub use client::{ClientError, client};
pub use config::{ControllerName, Settings, enabled_controllers, names_route};
pub use events::{EventType, Events};
pub use leader::{LeaderElectionConfig, LeaderElector, LeaderError};
pub use manager::{ControllerManager, Plan, Readiness, StartError};
pub use metrics::Metrics;
pub use reachability::is_transport_error;
pub use taints::{SHUTDOWN as SHUTDOWN_TAINT, UNINITIALIZED as UNINITIALIZED_TAINT};
