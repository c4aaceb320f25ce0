//! Loads wasm-ccm cloud providers, WebAssembly components of the
//! `wasm-ccm:provider` world, and runs them in a sandbox.
//!
//! Build an [`Engine`] once, [`LoadedProvider::load`] a provider from a
//! [`ProviderSpec`], and call it through a [`ProviderHandle`], which
//! implements [`wasm_ccm_cloud::Cloud`] over Kubernetes objects, keeps
//! calls within the provider's rate and concurrency limits, reports their
//! [`Usage`], and can swap in another provider while it serves.
//!
//! A provider serves as soon as Winch, wasmtime's baseline compiler, has
//! compiled the snapshot its calls start from; Cranelift compiles it again
//! in the background, and calls that start once that is done run its code
//! ([`LoadedProvider::code`]).
//!
//! Every call gets a fresh instance with a deadline that also bounds host
//! calls, a memory limit, a fair share of the CPU when it computes for long,
//! and only the imports the contract grants: HTTP to the hosts of its
//! allow-list, its own credentials, logging, clocks and randomness.

mod admission;
mod bindings;
pub mod cache;
mod clip;
mod compile_failures;
pub mod compiler;
pub mod component;
mod compute;
mod convert;
pub mod credentials;
pub mod engine;
mod epoch;
pub mod error;
pub mod files;
mod handle;
pub mod http;
pub mod limits;
mod log;
pub mod metrics;
mod nodes;
mod provider;
mod snapshot;
mod throttle;
pub mod tier;
mod usage;
mod wasi;

pub use cache::{CacheOutcome, CompileCache};
pub use compiler::{ChildCompiler, Compiler};
pub use credentials::{Credentials, CredentialsError, Role, Seal, SealedOrigin, UseRefused};
pub use engine::{Allocation, Engine, EngineSettings};
pub use error::LoadError;
pub use files::{Confinement, FileError, MAX_INPUT_FILE};
pub use handle::ProviderHandle;
pub use http::allowlist::AllowList;
pub use limits::{Limits, MAX_LINEAR_MEMORY, Rate};
pub use metrics::ProviderMetrics;
pub use provider::{LoadedProvider, ProviderSpec, Start};
pub use tier::{OptLevel, Tier};
pub use usage::Usage;
