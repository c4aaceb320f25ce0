//! The providers a controller manager calls, each under its name
//! (`members`), with what it serves (`serves`) and the operator's policy
//! for its load balancers (`policy`), such as where their ingress answers
//! must fall (`ingress_ranges`).

pub(crate) mod ingress_ranges;
pub(crate) mod members;
pub(crate) mod policy;
pub(crate) mod serves;
