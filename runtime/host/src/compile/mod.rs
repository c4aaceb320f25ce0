//! From a component's bytes to code calls run: the wasmtime engine and its
//! compilers, the checks that a component is a provider of this contract,
//! the compile cache, and the snapshot calls start from.

pub mod cache;
pub mod compiler;
pub mod component;
pub mod engine;
mod failures;
pub(crate) mod snapshot;
pub mod tier;
