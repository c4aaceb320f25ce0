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
//! Every call gets a fresh instance (or, for a provider whose limits keep
//! some, one kept from an earlier call of its own) with a deadline that
//! also bounds host calls, a memory limit, a fair share of the CPU when it
//! computes for long, and only the imports the contract grants: HTTP to the
//! hosts of its allow-list, its own credentials, logging, clocks and
//! randomness.
//!
//! The crate is laid out by layer: [`compile`] turns a component into the
//! code calls run (the engine, its compilers, the contract's checks, the
//! compile cache, the snapshot), [`imports`] is what a provider may call,
//! and `call` is what a call goes through (admission, conversions, deadline
//! ticks, CPU share, usage). `provider.rs` loads a provider and runs its
//! calls, on instances `kept.rs` keeps when its limits allow, and `handle.rs` serves it to the controllers. What the
//! layers share sits beside them: the errors, limits, metrics, generated
//! bindings, file reads and text clipping.

mod bindings;
mod call;
mod clip;
pub mod compile;
pub mod error;
pub mod files;
mod handle;
pub mod imports;
mod kept;
pub mod limits;
pub mod metrics;
mod provider;

pub use call::usage::Usage;
pub use compile::cache::{CacheOutcome, CompileCache};
pub use compile::compiler::{ChildCompiler, Compiler};
pub use compile::engine::{Allocation, Engine, EngineSettings};
pub use compile::tier::{OptLevel, Tier};
pub use error::LoadError;
pub use files::{Confinement, FileError, MAX_INPUT_FILE};
pub use handle::ProviderHandle;
pub use imports::credentials::{Credentials, CredentialsError, Role, Seal, SealedOrigin, UseRefused};
pub use imports::http::allowlist::AllowList;
pub use limits::{Limits, MAX_LINEAR_MEMORY, Rate};
pub use metrics::ProviderMetrics;
pub use provider::{LoadedProvider, ProviderSpec, Start};
