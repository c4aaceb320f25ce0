//! Which provider ensured each Service's load balancer, recorded by the
//! controller manager in ConfigMaps of its own namespace, where tenants who
//! own Services cannot write, rather than trusted from the Service.
//!
//! A record is keyed by the Service's UID and reads `PROVIDER/NAMESPACE/NAME`.
//! It is written before the first ensure, so that a crash in the middle of
//! one leaves it, and removed once the load balancer is deleted and the
//! Service let go. Records are spread over [`SHARDS`] ConfigMaps by UID: at
//! about 100 bytes a record, 10,000 Services make some 60 KiB a ConfigMap,
//! far below the API server's 1 MiB object limit; each Service costs one
//! merge patch when first ensured and one when let go, on its shard only,
//! and patches of one shard never conflict. The records are read once when
//! the controllers start (every replica that leads reads them anew) and kept
//! in memory, since only the leader writes them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::error::Error;

/// The name of the ConfigMaps holding the records, before `-SHARD`.
pub const RECORDS_NAME: &str = "wasm-ccm-load-balancer-owners";
/// How many ConfigMaps the records are spread over.
pub const SHARDS: u32 = 16;

/// One Service's record.
#[derive(Debug, Clone)]
struct Record {
    provider: Arc<str>,
    shard: u32,
}

/// The records, read from the API server and written through to it; clones
/// share them.
#[derive(Debug, Clone)]
pub struct Ownership {
    /// The ConfigMaps' API; `None` keeps records in memory only, for unit
    /// tests.
    api: Option<Api<ConfigMap>>,
    records: Arc<RwLock<HashMap<String, Record>>>,
}

impl Ownership {
    /// Records in memory only.
    #[cfg(test)]
    pub fn in_memory() -> Self {
        Ownership { api: None, records: Arc::default() }
    }

    /// Reads the records from the ConfigMaps of `namespace`, trying again
    /// while the API server fails; `None` when `stop` came first.
    pub async fn load(client: kube::Client, namespace: &str, stop: &CancellationToken) -> Option<Self> {
        let api = Api::<ConfigMap>::namespaced(client, namespace);
        let mut delay = Duration::from_millis(200);
        loop {
            match read(&api).await {
                Ok(records) => {
                    tracing::info!(records = records.len(), "read the load balancers' ownership records");
                    return Some(Ownership { api: Some(api), records: Arc::new(RwLock::new(records)) });
                }
                Err(err) => tracing::warn!("cannot read the load balancers' ownership records, retrying: {err}"),
            }
            tokio::select! {
                () = stop.cancelled() => return None,
                () = tokio::time::sleep(delay) => delay = (delay * 2).min(Duration::from_secs(30)),
            }
        }
    }

    /// The provider recorded for the Service of `uid`.
    pub fn owner(&self, uid: &str) -> Option<Arc<str>> {
        self.records
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(uid)
            .map(|record| record.provider.clone())
    }

    /// Records `provider` as the owner of `service`'s load balancer, unless
    /// it is already.
    ///
    /// # Errors
    /// When the API server refused the write: nothing is recorded.
    pub async fn record(&self, service: &Service, provider: &Arc<str>) -> Result<(), Error> {
        let Some(uid) = service.metadata.uid.as_deref() else { return Ok(()) };
        let shard = match self.records.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(uid) {
            Some(record) if record.provider == *provider => return Ok(()),
            Some(record) => record.shard,
            None => shard_of(uid),
        };
        let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
        let name = service.metadata.name.as_deref().unwrap_or_default();
        let value = format!("{provider}/{namespace}/{name}");
        if let Some(api) = &self.api {
            write(api, shard, json!({"data": {uid: value}}))
                .await
                .map_err(Error::api("failed to record the load balancer's provider"))?;
        }
        let record = Record { provider: provider.clone(), shard };
        self.records.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(uid.to_owned(), record);
        Ok(())
    }

    /// Removes the records of Services none of `services` (the whole
    /// cache, once synced) is: Services whose finalizer was taken off by
    /// hand and that were deleted while no controller manager ran. Each is
    /// logged, since its load balancer may be left in its provider's cloud,
    /// as upstream leaves it.
    pub async fn release_orphans(&self, services: &[Arc<Service>]) {
        let living: HashSet<&str> = services.iter().filter_map(|service| service.metadata.uid.as_deref()).collect();
        let orphans: Vec<(String, Arc<str>)> = self
            .records
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .filter(|(uid, _)| !living.contains(uid.as_str()))
            .map(|(uid, record)| (uid.clone(), record.provider.clone()))
            .collect();
        for (uid, provider) in orphans {
            tracing::warn!(%uid, %provider, "the Service of an ownership record is gone without its load balancer's delete: its load balancer may be left in the provider's cloud; the record is removed");
            if let Err(err) = self.release(Some(&uid)).await {
                tracing::warn!(%uid, "cannot remove the ownership record; trying again at the next start: {err}");
            }
        }
    }

    /// Removes the record of the Service of `uid`, if any.
    ///
    /// # Errors
    /// When the API server refused the write: the record stays.
    pub async fn release(&self, uid: Option<&str>) -> Result<(), Error> {
        let Some(uid) = uid else { return Ok(()) };
        let shard = self.records.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(uid).map(|r| r.shard);
        let Some(shard) = shard else { return Ok(()) };
        if let Some(api) = &self.api {
            let patch = Patch::Merge(json!({"data": {uid: null}}));
            match api.patch(&shard_name(shard), &PatchParams::default(), &patch).await {
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                removed => {
                    removed.map(drop).map_err(Error::api("failed to remove the load balancer's ownership record"))?
                }
            }
        }
        self.records.write().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(uid);
        Ok(())
    }
}

/// The ConfigMap of `shard`.
fn shard_name(shard: u32) -> String {
    format!("{RECORDS_NAME}-{shard}")
}

/// The shard of a new record: a hash of the UID that does not change
/// between versions (a record is found in whichever shard holds it).
fn shard_of(uid: &str) -> u32 {
    uid.bytes().fold(0u32, |hash, byte| hash.wrapping_mul(31).wrapping_add(u32::from(byte))) % SHARDS
}

/// Every shard's records.
async fn read(api: &Api<ConfigMap>) -> Result<HashMap<String, Record>, kube::Error> {
    let mut records = HashMap::new();
    for shard in 0..SHARDS {
        let Some(config_map) = api.get_opt(&shard_name(shard)).await? else { continue };
        for (uid, value) in config_map.data.unwrap_or_default() {
            let provider = value.split('/').next().unwrap_or_default();
            records.insert(uid, Record { provider: Arc::from(provider), shard });
        }
    }
    Ok(records)
}

/// Merges `patch` into the ConfigMap of `shard`, creating it the first time.
async fn write(api: &Api<ConfigMap>, shard: u32, patch: serde_json::Value) -> Result<(), kube::Error> {
    let name = shard_name(shard);
    loop {
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            patched => return patched.map(drop),
        }
        let data: BTreeMap<String, String> = serde_json::from_value(patch["data"].clone()).unwrap_or_default();
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([("app.kubernetes.io/managed-by".to_owned(), "wasm-ccm".to_owned())].into()),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..ConfigMap::default()
        };
        match api.create(&PostParams::default(), &config_map).await {
            // Made by another write in the meantime: patch it.
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            created => return created.map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use wasm_ccm_apiserver::ApiServer;

    use super::*;
    use crate::fixtures::ServiceFixture;

    fn service(name: &str, uid: &str) -> Service {
        let mut service = Service::test(name);
        service.metadata.uid = Some(uid.to_owned());
        service
    }

    #[tokio::test]
    async fn records_of_services_gone_while_no_one_ran_are_removed_at_start() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let stop = CancellationToken::new();
        let ownership = Ownership::load(client.clone(), "kube-system", &stop).await.unwrap();
        let provider: Arc<str> = Arc::from("a");
        let (web, gone) = (service("web", "uid-web"), service("gone", "uid-gone"));
        ownership.record(&web, &provider).await.unwrap();
        ownership.record(&gone, &provider).await.unwrap();
        ownership.release_orphans(&[Arc::new(web)]).await;
        assert_eq!(ownership.owner("uid-web").as_deref(), Some("a"), "a living Service's record stays");
        assert_eq!(ownership.owner("uid-gone"), None);
        let again = Ownership::load(client, "kube-system", &stop).await.unwrap();
        assert_eq!(again.owner("uid-gone"), None, "removed from the ConfigMap too");
    }

    #[tokio::test]
    async fn records_survive_a_restart_and_go_when_released() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let stop = CancellationToken::new();
        let ownership = Ownership::load(client.clone(), "kube-system", &stop).await.unwrap();
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        ownership.record(&service("web", "uid-web"), &a).await.unwrap();
        ownership.record(&service("db", "uid-db"), &a).await.unwrap();
        ownership.record(&service("db", "uid-db"), &b).await.unwrap();

        let again = Ownership::load(client.clone(), "kube-system", &stop).await.unwrap();
        assert_eq!(again.owner("uid-web").as_deref(), Some("a"));
        assert_eq!(again.owner("uid-db").as_deref(), Some("b"), "a record is replaced in place");
        let shard = shard_name(shard_of("uid-web"));
        let stored = Api::<ConfigMap>::namespaced(client.clone(), "kube-system").get(&shard).await.unwrap();
        assert_eq!(stored.data.unwrap()["uid-web"], "a/default/web");

        again.release(Some("uid-web")).await.unwrap();
        again.release(Some("uid-unknown")).await.unwrap();
        let last = Ownership::load(client, "kube-system", &stop).await.unwrap();
        assert_eq!(last.owner("uid-web"), None);
        assert_eq!(last.owner("uid-db").as_deref(), Some("b"));
    }

    /// 10,000 Services with long names and UIDs fit the shards many times
    /// over.
    #[test]
    fn ten_thousand_records_stay_far_below_the_object_limit() {
        let mut shards: HashMap<u32, BTreeMap<String, String>> = HashMap::new();
        for n in 0..10_000u32 {
            let uid = format!("{n:08x}-1f2e-4d3c-8b7a-{:012x}", u64::from(n) * 7919);
            let value = format!("{}/namespace-of-the-team/service-{n}-name", "p".repeat(20));
            shards.entry(shard_of(&uid)).or_default().insert(uid, value);
        }
        assert_eq!(shards.len(), SHARDS as usize, "every shard is used");
        let largest = shards.values().map(|data| serde_json::to_vec(data).unwrap().len()).max().unwrap();
        assert!(largest < 128 << 10, "the largest shard is {largest} bytes");
    }
}
