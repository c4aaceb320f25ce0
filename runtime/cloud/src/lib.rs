//! The contract between wasm-ccm's controllers and a cloud provider, in
//! Rust: the [`Cloud`] trait (upstream's `cloudprovider.Interface` over
//! Kubernetes objects), every [`Function`] of the provider world with its
//! WIT and Go names, the values providers return, and [`ProviderError`].
//!
//! It knows neither WebAssembly nor the Kubernetes client: the host
//! implements [`Cloud`] over a sandboxed component, the controllers call
//! it, and tests use [`testing::TestCloud`] (feature `testing`).

pub mod address;
#[cfg(test)]
mod checklist;
mod cloud;
mod error;
mod function;
mod node_set;
#[cfg(feature = "testing")]
pub mod testing;
mod types;

pub use cloud::{BatchAnswers, Cloud, MetadataAnswers};
pub use error::{MAX_RETRY_DELAY, ProviderError};
pub use function::{Function, Interface, Part};
pub use node_set::{NodeRef, NodeSet, NodeSnapshot, PackedStrings};
pub use types::{InstanceMetadata, InstanceState, Parts, ProviderInfo, Route, Zone};

/// The cluster name a provider is initialised with unless told otherwise:
/// upstream's `--cluster-name` default.
pub const DEFAULT_CLUSTER_NAME: &str = "kubernetes";
