//! What the controllers share about nodes, naming no controller: the node
//! cache every one reads (`cache`), the cloud taints and the node fields
//! they read and write (`taints`), the IPs kubelet was given
//! (`provided_ips`), and what the cloud knows of a node (`instances`),
//! asked of it about many nodes a few calls at once (`batches`).

pub(crate) mod batches;
pub(crate) mod cache;
pub(crate) mod instances;
pub(crate) mod provided_ips;
pub(crate) mod taints;
