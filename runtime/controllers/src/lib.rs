//! The cloud controllers of wasm-ccm, as upstream's cloud-controller-manager
//! runs them, calling the cloud through [`wasm_ccm_cloud::Cloud`], which the
//! sandboxed WebAssembly provider (the host's `ProviderHandle`) implements:
//!
//! - the **service** controller: a load balancer for every Service of type
//!   LoadBalancer, kept in step with the nodes, repaired when it drifts;
//! - the **cloud node** controller: initialises new nodes from the cloud;
//! - the **cloud node lifecycle** controller: deletes nodes whose instances
//!   are gone and taints those shut down;
//! - the **route** controller: cloud routes for the nodes' pod CIDRs.
//!
//! [`ControllerManager`] runs those enabled on one watch per kind of object.
//! Every controller has one shape: a watcher of those watches whose
//! triggers queue keys, and a [`runner`](framework::runner) whose workers
//! reconcile them with the controller's context (the client, the cloud, the
//! node cache, events, metrics, settings) under one error policy.
//!
//! The modules are layers, from the lowest, each using only those before
//! it: what the controllers share about nodes (`nodes`) and the providers
//! the manager calls with what each serves (`providers`); the
//! [`framework`] every controller runs on; the controllers, a module each
//! (`service`, `cloud_node`, `lifecycle`, `route`), none using another; and
//! the manager that runs them.

mod cloud_node;
#[cfg(test)]
mod fixtures;
pub mod framework;
mod lifecycle;
mod manager;
mod nodes;
mod providers;
mod route;
mod service;

pub use framework::caches::Caches;
pub use framework::config::{ControllerName, Settings, enabled_controllers, names_route};
pub use framework::error::Error;
pub use framework::leader::{LeaderElectionConfig, LeaderElector, LeaderError};
pub use framework::metrics::Metrics;
pub use manager::{ControllerManager, ManagerError, Readiness, RunPlan};
pub use nodes::taints::{SHUTDOWN as SHUTDOWN_TAINT, UNINITIALIZED as UNINITIALIZED_TAINT};
pub use providers::ingress_ranges::{IngressRanges, InvalidIngressRange};
pub use providers::members::{Member, Members};
pub use providers::policy::{InvalidMaxIngress, LoadBalancerPolicy, max_ingress};
pub use providers::serves::Serves;
pub use service::ownership;
