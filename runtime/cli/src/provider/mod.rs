//! `wasm-ccm provider`: the tools for a provider's author and its operator,
//! each working on one component.

pub(crate) mod call;
pub(crate) mod conformance;
pub(crate) mod inspect;
pub(crate) mod new;
pub(crate) mod push;
pub(crate) mod status;
pub(crate) mod verify;
