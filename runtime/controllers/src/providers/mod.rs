//! The providers a controller manager calls, each under its name
//! (`members`), with what it serves (`serves`).

pub(crate) mod members;
pub(crate) mod serves;
