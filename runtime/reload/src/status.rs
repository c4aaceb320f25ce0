//! What each provider runs now and what was last rejected, as the admin
//! server's `/providers` shows it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

/// A rejected version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    /// When, RFC 3339.
    pub at: String,
    /// Where it came from.
    pub source: String,
    /// Its component digest, when known.
    pub digest: Option<String>,
    /// The stage that failed: `verify`, `compile`, `world`, `initialize`,
    /// `smoke`.
    pub stage: String,
    /// Why.
    pub reason: String,
}

/// One provider's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    /// The name it runs under.
    pub name: String,
    /// The name it gives itself.
    pub provider_name: String,
    /// The digest of the component serving.
    pub digest: String,
    /// Where that component came from.
    pub source: String,
    /// The digest of the configuration it was initialised with.
    pub config_digest: String,
    /// When it was loaded, RFC 3339.
    pub loaded_at: String,
    /// Versions swapped in since the first.
    pub reloads: u64,
    /// Versions rejected so far.
    pub rejections: u64,
    /// The last rejection, if any.
    pub last_rejection: Option<Rejection>,
}

/// Every provider's state; clones share it.
#[derive(Debug, Clone, Default)]
pub struct StatusBoard {
    providers: Arc<RwLock<BTreeMap<String, ProviderStatus>>>,
}

impl StatusBoard {
    /// Every provider's state, by name.
    pub fn snapshot(&self) -> Vec<ProviderStatus> {
        self.providers.read().unwrap_or_else(|poisoned| poisoned.into_inner()).values().cloned().collect()
    }

    /// One provider's state.
    pub fn get(&self, name: &str) -> Option<ProviderStatus> {
        self.providers.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(name).cloned()
    }

    /// Forgets a provider no longer configured.
    pub fn remove(&self, name: &str) {
        self.providers.write().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(name);
    }

    pub(crate) fn update(
        &self,
        name: &str,
        change: impl FnOnce(Option<&mut ProviderStatus>) -> Option<ProviderStatus>,
    ) {
        let mut providers = self.providers.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(status) = change(providers.get_mut(name)) {
            providers.insert(name.to_owned(), status);
        }
    }
}
