//! The highest version of each provider accepted under roll-back
//! protection, kept in the cluster so that a restart does not forget it:
//! the annotations of a Lease of its own in the controller manager's
//! namespace (which its Role may read, create and update already), one
//! `provider-version.wasm-ccm.io/<provider>` each. On start, a provider's
//! recorded version is its minimum. The record only ever rises; deleting
//! the Lease resets it.

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};

/// The annotation prefix of a provider's recorded version.
pub const VERSION_ANNOTATION_PREFIX: &str = "provider-version.wasm-ccm.io/";

/// How often a write that lost a race to another replica is tried again.
const ATTEMPTS: usize = 5;

/// Why the record could not be read or raised.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The API server refused or could not be reached.
    #[error("cannot reach the version record {lease}: {source}")]
    Api {
        /// `namespace/name` of the Lease.
        lease: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// A recorded version is not a semantic version.
    #[error("the version record {lease} holds {value:?} for {provider}, not a version; delete the Lease to reset it")]
    Invalid {
        /// `namespace/name` of the Lease.
        lease: String,
        /// The provider.
        provider: String,
        /// What it holds.
        value: String,
    },
    /// Other replicas kept writing it.
    #[error("the version record {lease} kept changing while {ATTEMPTS} writes were tried")]
    Contended {
        /// `namespace/name` of the Lease.
        lease: String,
    },
}

/// The record of the highest versions accepted.
#[derive(Clone)]
pub struct VersionRecord {
    api: Api<Lease>,
    namespace: String,
    name: String,
}

impl VersionRecord {
    /// The record in the Lease `namespace/name`.
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        VersionRecord {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The highest version of `provider` recorded, if any.
    ///
    /// # Errors
    /// When the record cannot be read or holds something else than a
    /// version for it.
    pub async fn highest(&self, provider: &str) -> Result<Option<semver::Version>, RecordError> {
        let lease = self.api.get_opt(&self.name).await.map_err(|source| self.api_error(source))?;
        self.recorded(lease.as_ref(), provider)
    }

    /// Records `version` for `provider` unless a version as high is
    /// recorded already.
    ///
    /// # Errors
    /// When the record cannot be read or written.
    pub async fn raise(&self, provider: &str, version: &semver::Version) -> Result<(), RecordError> {
        let key = format!("{VERSION_ANNOTATION_PREFIX}{provider}");
        for _ in 0..ATTEMPTS {
            let lease = self.api.get_opt(&self.name).await.map_err(|source| self.api_error(source))?;
            if self.recorded(lease.as_ref(), provider)?.is_some_and(|recorded| recorded >= *version) {
                return Ok(());
            }
            let exists = lease.is_some();
            let mut lease = lease.unwrap_or_else(|| Lease {
                metadata: kube::api::ObjectMeta { name: Some(self.name.clone()), ..Default::default() },
                ..Lease::default()
            });
            lease.metadata.annotations.get_or_insert_default().insert(key.clone(), version.to_string());
            let written = match exists {
                true => self.api.replace(&self.name, &PostParams::default(), &lease).await,
                false => self.api.create(&PostParams::default(), &lease).await,
            };
            match written {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(source) => return Err(self.api_error(source)),
            }
        }
        Err(RecordError::Contended { lease: self.lease() })
    }

    fn recorded(&self, lease: Option<&Lease>, provider: &str) -> Result<Option<semver::Version>, RecordError> {
        let key = format!("{VERSION_ANNOTATION_PREFIX}{provider}");
        let Some(value) = lease.and_then(|lease| lease.metadata.annotations.as_ref()?.get(&key)) else {
            return Ok(None);
        };
        let invalid =
            || RecordError::Invalid { lease: self.lease(), provider: provider.to_owned(), value: value.clone() };
        value.parse().map(Some).map_err(|_| invalid())
    }

    fn lease(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn api_error(&self, source: kube::Error) -> RecordError {
        RecordError::Api { lease: self.lease(), source }
    }
}
