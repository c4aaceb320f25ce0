//! Kubernetes events about reloads: `ProviderReloaded` (Normal) on every
//! swap, `ProviderRejected` (Warning) on every rejection.
//!
//! They regard the ConfigMap for a ConfigMap source, where whoever updated
//! it looks; otherwise the controller manager's own Pod, named by the
//! `POD_NAME` and `POD_NAMESPACE` environment variables (set them with the
//! downward API). Without either there is no object to attach events to,
//! and reloads are only logged and counted.

use k8s_openapi::api::core::v1::ObjectReference;
use wasm_ccm_kube::Events;

/// The reason of a swap event.
pub const RELOADED: &str = "ProviderReloaded";
/// The reason of a rejection event.
pub const REJECTED: &str = "ProviderRejected";

/// Where reload events go; clones share the writer.
#[derive(Clone)]
pub struct Reporter {
    events: Events,
    regarding: ObjectReference,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter").field("regarding", &self.regarding).finish_non_exhaustive()
    }
}

impl Reporter {
    /// Writes events about `regarding` through `client`.
    pub fn new(client: kube::Client, regarding: ObjectReference) -> Self {
        Reporter { events: Events::new(client, "cloud-controller-manager"), regarding }
    }

    /// The object events are about.
    pub fn regarding(&self) -> &ObjectReference {
        &self.regarding
    }

    /// Reports a change that took effect, as a Normal event.
    pub fn reloaded(&self, note: String) {
        self.events.normal(self.regarding.clone(), RELOADED, note);
    }

    /// Reports a change refused, as a Warning event.
    pub fn rejected(&self, note: String) {
        self.events.warning(self.regarding.clone(), REJECTED, note);
    }
}

/// A reference to the ConfigMap `namespace/name`.
pub fn config_map_reference(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("ConfigMap".to_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}

/// A reference to this process's Pod, from `POD_NAME` and `POD_NAMESPACE`.
pub fn own_pod_reference() -> Option<ObjectReference> {
    let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    Some(ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        namespace: Some(variable("POD_NAMESPACE")?),
        name: Some(variable("POD_NAME")?),
        ..ObjectReference::default()
    })
}
