//! How a provider is loaded: what the fleet asks of the process it runs in.

use std::future::Future;

use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::Cloud;

/// Any error a [`Loader`] gives, with its sources.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Loads providers: WebAssembly components in the controller manager,
/// in-memory clouds in tests.
pub trait Loader: Clone + Send + Sync + 'static {
    /// What a provider is loaded from. Two plans of a provider with equal
    /// specs load the same provider; a changed spec is loaded anew.
    type Spec: Clone + PartialEq + Send + Sync + 'static;
    /// A provider loaded.
    type Cloud: Cloud;

    /// Loads `spec` as provider `name`: into `serving` when it re-configures
    /// a provider serving under that name, which then serves the new one
    /// (calls in flight finish on the old). What keeps the provider up to
    /// date with its source runs until `stop`.
    fn load(
        &self,
        name: &str,
        spec: Self::Spec,
        serving: Option<Self::Cloud>,
        stop: CancellationToken,
    ) -> impl Future<Output = Result<Self::Cloud, BoxError>> + Send;
}

/// A provider that did not load, and why.
#[derive(Debug, thiserror::Error)]
#[error("provider {name}: {}", self.why())]
pub struct LoadFailure {
    /// The provider.
    pub name: String,
    /// Why, as the loader said.
    pub reason: BoxError,
}

impl LoadFailure {
    /// Why, with the reason's sources.
    pub fn why(&self) -> String {
        error_chain(self.reason.as_ref())
    }
}

/// `error` and its sources, joined by colons, each said once (many errors
/// repeat their cause in their own message): what a load failure, a
/// refused plan or the command line's last error says.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the cloud is down")]
    struct Down;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot call: {0}")]
    struct Repeats(#[source] Down);

    #[derive(Debug, thiserror::Error)]
    #[error("does not load")]
    struct Wraps(#[source] Repeats);

    #[test]
    fn each_cause_is_said_once() {
        assert_eq!(error_chain(&Repeats(Down)), "cannot call: the cloud is down");
        assert_eq!(error_chain(&Wraps(Repeats(Down))), "does not load: cannot call: the cloud is down");
    }
}
