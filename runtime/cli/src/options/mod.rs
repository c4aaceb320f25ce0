//! What the operator decides for the whole process beside its providers:
//! leadership, upstream's flags, and what the provider tools work on.

pub(crate) mod leader;
pub(crate) mod provider;
pub(crate) mod target;
pub(crate) mod upstream;
