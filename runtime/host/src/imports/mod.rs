//! What a provider may call: HTTP to its allow-list, its own credentials,
//! logging, the nodes a call lends it, and the WASI it links against.

pub mod credentials;
pub mod http;
pub(crate) mod log;
pub(crate) mod nodes;
pub(crate) mod wasi;
