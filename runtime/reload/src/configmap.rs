//! A provider in a key of a ConfigMap, watched through the API.
//!
//! The component is the `binaryData` key; its signature, when a public key
//! is configured, is the sibling key `<key>.sigstore.json` (a sigstore
//! bundle, as `cosign sign-blob --bundle` writes) or `<key>.sig` (a bundle
//! or a bare base64 signature), in `binaryData` or `data`. A ConfigMap is
//! updated atomically, so the component and its signature always change
//! together.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use wasm_ccm_distribution::{Verification, sha256_digest, verify_bytes};

use crate::location::CONFIGMAP_PREFIX;
use crate::{Candidate, SourceError};

/// The sibling keys a component's signature is read from, in order: its
/// sigstore bundle (`cosign sign-blob --bundle`), then its bare base64
/// signature.
pub const SIGNATURE_SUFFIXES: [&str; 2] = [".sigstore.json", ".sig"];

type Events = Pin<Box<dyn Stream<Item = Result<watcher::Event<ConfigMap>, watcher::Error>> + Send>>;

/// What was last offered or rejected: the digests of the component and its
/// signature.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    wasm: String,
    signature: Option<String>,
}

/// A provider read from a ConfigMap key.
pub struct ConfigMapSource {
    api: Api<ConfigMap>,
    namespace: String,
    name: String,
    key: String,
    verification: Verification,
    events: Option<Events>,
    seen: Option<Seen>,
    gone: bool,
}

impl std::fmt::Debug for ConfigMapSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigMapSource").field("origin", &self.origin()).finish_non_exhaustive()
    }
}

impl ConfigMapSource {
    /// A source reading `key` of the ConfigMap `namespace/name`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, key: &str, verification: Verification) -> Self {
        ConfigMapSource {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            key: key.to_owned(),
            verification,
            events: None,
            seen: None,
            gone: false,
        }
    }

    /// `configmap:namespace/name/key`.
    pub fn origin(&self) -> String {
        format!("{CONFIGMAP_PREFIX}{}/{}/{}", self.namespace, self.name, self.key)
    }

    /// The ConfigMap's namespace and name.
    pub fn object(&self) -> (&str, &str) {
        (&self.namespace, &self.name)
    }

    /// The next version: read with a `GET` on the first call, then from a
    /// watch of that one object whenever the key or its signature changes.
    ///
    /// # Errors
    /// [`SourceError::Unavailable`] when the ConfigMap or the key is missing
    /// (once per disappearance), or the first read fails;
    /// [`SourceError::Verification`] when a new version fails the pin or
    /// signature check.
    pub async fn next(&mut self) -> Result<Candidate, SourceError> {
        if self.events.is_none() {
            let config_map = self.api.get(&self.name).await.map_err(|err| self.unavailable(err.to_string()))?;
            let fields = format!("metadata.name={}", self.name);
            let stream = watcher(self.api.clone(), watcher::Config::default().fields(&fields)).default_backoff();
            self.events = Some(Box::pin(stream));
            if let Some(candidate) = self.offer(&config_map)? {
                return Ok(candidate);
            }
        }
        loop {
            let Some(events) = self.events.as_mut() else { unreachable!("the watch was started above") };
            let config_map = match events.next().await {
                Some(Ok(watcher::Event::Apply(config_map) | watcher::Event::InitApply(config_map))) => config_map,
                Some(Ok(watcher::Event::Delete(_))) => {
                    if !std::mem::replace(&mut self.gone, true) {
                        return Err(self.unavailable("the ConfigMap was deleted".to_owned()));
                    }
                    continue;
                }
                Some(Ok(watcher::Event::Init | watcher::Event::InitDone)) => continue,
                Some(Err(err)) => {
                    tracing::debug!(origin = %self.origin(), "watch failed, retrying: {err}");
                    continue;
                }
                None => {
                    // Start again with a read, after a pause.
                    self.events = None;
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    return Err(self.unavailable("the watch ended".to_owned()));
                }
            };
            if let Some(candidate) = self.offer(&config_map)? {
                return Ok(candidate);
            }
        }
    }

    /// The candidate in `config_map`, or `None` when it holds what was seen
    /// last.
    fn offer(&mut self, config_map: &ConfigMap) -> Result<Option<Candidate>, SourceError> {
        let binary = config_map.binary_data.as_ref();
        // Text, such as a providers file, may be under `data`.
        let text = config_map.data.as_ref().and_then(|data| data.get(&self.key)).map(|text| text.as_bytes());
        let Some(bytes) = binary.and_then(|data| data.get(&self.key)).map(|bytes| bytes.0.as_slice()).or(text) else {
            if !std::mem::replace(&mut self.gone, true) {
                return Err(self.unavailable(format!("the ConfigMap has no key {}", self.key)));
            }
            return Ok(None);
        };
        self.gone = false;
        // cosign v3's bundle first, then the bare signature.
        let signature: Option<Vec<u8>> = SIGNATURE_SUFFIXES.iter().find_map(|suffix| {
            let signature_key = format!("{}{suffix}", self.key);
            binary.and_then(|data| data.get(&signature_key)).map(|bytes| bytes.0.clone()).or_else(|| {
                config_map.data.as_ref().and_then(|data| data.get(&signature_key)).map(|s| s.clone().into_bytes())
            })
        });
        let seen = Seen { wasm: sha256_digest(bytes), signature: signature.as_deref().map(sha256_digest) };
        if self.seen.as_ref() == Some(&seen) {
            return Ok(None);
        }
        let digest = seen.wasm.clone();
        self.seen = Some(seen);
        match verify_bytes(bytes, signature.as_deref(), &self.verification) {
            Ok(digest) => Ok(Some(Candidate { wasm: Arc::from(bytes), digest, origin: self.origin(), version: None })),
            Err(source) => Err(SourceError::Verification { origin: self.origin(), digest: Some(digest), source }),
        }
    }

    fn unavailable(&self, reason: String) -> SourceError {
        SourceError::Unavailable { origin: self.origin(), reason }
    }
}
