//! What the operator decides for the whole process: the flags shared by
//! `run` and the provider tools, and the trust file.

pub(crate) mod leader;
pub(crate) mod provider;
pub(crate) mod registry;
pub(crate) mod source;
pub(crate) mod trust;
pub(crate) mod upstream;
