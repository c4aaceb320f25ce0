//! Write a wasm-ccm cloud provider: a WebAssembly component that the wasm-ccm
//! cloud-controller-manager loads in place of a compiled-in
//! `cloudprovider.Interface`.
//!
//! A provider is a type implementing [`Provider`] and the parts its cloud
//! supports ([`LoadBalancer`], [`InstancesV2`], [`Instances`], [`Zones`],
//! [`Clusters`], [`Routes`]), exported with [`export_provider!`]. It reaches
//! its cloud through [`http`], reads its secrets through [`credentials`] and
//! writes to the host's log through [`log`]; it has no files, environment or
//! sockets.
//!
//! [`Provider::new`] runs once per version and configuration; every call
//! then starts from a fresh copy of the state it left, so set up clients
//! there and keep state in the cloud, not in memory. A provider still
//! holding a host resource when `new` returns (the standard library's file
//! system holds the standard streams) is set up in every call instead.
//!
//! # A complete provider
//!
//! ```no_run
//! use wasm_ccm_sdk::http::Request;
//! use wasm_ccm_sdk::types::{InstanceMetadata, Node, NodeAddress, NodeAddressType};
//! use wasm_ccm_sdk::{Error, InstancesV2, Provider};
//!
//! /// Reads instances from Acme Cloud's API.
//! struct Acme {
//!     endpoint: String,
//! }
//!
//! #[derive(serde::Deserialize)]
//! struct Config {
//!     endpoint: String,
//! }
//!
//! #[derive(serde::Deserialize)]
//! struct Machine {
//!     id: String,
//!     size: String,
//!     zone: String,
//!     region: String,
//!     ip: String,
//!     running: bool,
//! }
//!
//! impl Acme {
//!     fn machine(&self, node: &Node) -> Result<Machine, Error> {
//!         let response = Request::get(format!("{}/machines/{}", self.endpoint, node.name))
//!             .bearer("token") // the key `token` of the provider's Secret
//!             .send()?;
//!         if response.status() == 404 {
//!             return Err(Error::InstanceNotFound);
//!         }
//!         response.error_for_status()?.json()
//!     }
//! }
//!
//! impl Provider for Acme {
//!     const NAME: &'static str = "acme";
//!
//!     fn new(config: &[u8], _cluster_name: &str) -> Result<Self, Error> {
//!         let config: Config = serde_json::from_slice(config)?;
//!         Ok(Acme { endpoint: config.endpoint })
//!     }
//!
//!     fn instances_v2(&self) -> Option<&dyn InstancesV2> {
//!         Some(self)
//!     }
//! }
//!
//! impl InstancesV2 for Acme {
//!     fn instance_exists(&self, node: &Node) -> Result<bool, Error> {
//!         match self.machine(node) {
//!             Ok(_) => Ok(true),
//!             Err(Error::InstanceNotFound) => Ok(false),
//!             Err(err) => Err(err),
//!         }
//!     }
//!
//!     fn instance_shutdown(&self, node: &Node) -> Result<bool, Error> {
//!         Ok(!self.machine(node)?.running)
//!     }
//!
//!     fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, Error> {
//!         let machine = self.machine(node)?;
//!         Ok(InstanceMetadata {
//!             provider_id: format!("acme://{}", machine.id),
//!             instance_type: machine.size,
//!             node_addresses: vec![NodeAddress {
//!                 address_type: NodeAddressType::InternalIp,
//!                 address: machine.ip,
//!             }],
//!             zone: machine.zone,
//!             region: machine.region,
//!             additional_labels: Vec::new(),
//!         })
//!     }
//! }
//!
//! wasm_ccm_sdk::export_provider!(Acme);
//! ```
//!
//! Build it with `crate-type = ["cdylib"]` for the `wasm32-wasip2` target;
//! wasm-ccm's `providers/build.sh` shows how.

extern crate self as wasm_ccm_sdk;

/// Talc allocates faster than WebAssembly's default dlmalloc, which matters
/// when a call receives a thousand nodes.
#[cfg(all(feature = "allocator", target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

mod backend;
pub mod credentials;
mod error;
#[doc(hidden)]
pub mod export;
pub mod http;
pub mod log;
#[cfg(not(target_family = "wasm"))]
pub mod native;
mod nodes;
mod provider;
#[doc(hidden)]
pub mod wit;

pub use error::{Error, RetryAfter};
pub use nodes::{NodeSet, Strings, StringsIter};
pub use provider::{
    Clusters, Instances, InstancesV2, LoadBalancer, Provider, Routes, Zones, default_load_balancer_name,
};
pub use serde_json;
pub use wit::exports::wasm_ccm::provider::provider::Parts;
pub use wit_bindgen;

/// The records exchanged with the host: what a provider reads of Services
/// and Nodes and what it returns.
pub mod types {
    pub use crate::wit::exports::wasm_ccm::provider::instances_batch::InstanceState;
    pub use crate::wit::wasm_ccm::provider::types::*;
}
