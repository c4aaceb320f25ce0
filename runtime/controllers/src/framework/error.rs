//! Why a reconcile failed: one error for every controller, so that one
//! policy logs, counts and retries them all; among its causes, a cloud's
//! addresses that cannot be a node's ([`AddressError`]) and an ingress
//! answer that is not published ([`RefusedIngress`]).

use std::time::Duration;

use wasm_ccm_cloud::ProviderError;

use crate::nodes::provided_ips::AddressError;
use wasm_ccm_kube::is_transport_error;

/// Why a reconcile failed. Messages follow upstream's, so that events read
/// as they do in any cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cloud provider failed.
    #[error("{action}: {source}")]
    Cloud {
        /// What was being done, as upstream words it ("failed to ensure
        /// load balancer").
        action: String,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
    /// The API server refused a request, or could not be reached.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: &'static str,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The cloud's addresses do not fit the node.
    #[error("provided node ip for node is not valid: {0}")]
    Addresses(#[from] AddressError),
    /// The provider answered an ingress address that is not published.
    #[error(transparent)]
    RefusedIngress(#[from] RefusedIngress),
}

impl Error {
    /// A cloud error while doing `action`.
    pub fn cloud(action: impl Into<String>) -> impl FnOnce(ProviderError) -> Error {
        move |source| Error::Cloud { action: action.into(), source }
    }

    /// An API error while doing `action`.
    pub fn api(action: &'static str) -> impl FnOnce(kube::Error) -> Error {
        move |source| Error::Api { action, source }
    }

    /// A short, stable name for metrics: the provider's error kind, `api`,
    /// `unreachable`, `addresses` or `refused-ingress`.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Cloud { source, .. } => source.kind(),
            Error::Api { source, .. } if is_transport_error(source) => "unreachable",
            Error::Api { .. } => "api",
            Error::Addresses(_) => "addresses",
            Error::RefusedIngress(_) => "refused-ingress",
        }
    }

    /// The delay a provider asked for with a retry error.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Cloud { source: ProviderError::Retry { delay, .. }, .. } => Some(*delay),
            _ => None,
        }
    }

    /// Whether the API server could not be reached: the client logs that
    /// once for every request.
    pub fn is_transport(&self) -> bool {
        matches!(self, Error::Api { source, .. } if is_transport_error(source))
    }

    /// Whether the API server answered 404 Not Found.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Api { source: kube::Error::Api(status), .. } if status.code == 404)
    }

    /// Whether the API server answered 409 Conflict.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Api { source: kube::Error::Api(status), .. } if status.code == 409)
    }
}

/// An ingress address a provider answered that is not published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the provider answered {address} as the load balancer's ingress, which is {why}; nothing was published")]
pub struct RefusedIngress {
    /// The address or host name, as the provider wrote it.
    pub address: String,
    /// Why it is refused.
    pub why: String,
    /// Another provider's Service publishes the address and keeps it: a
    /// Service publishing it too lets it go.
    pub kept_by_another: bool,
}
