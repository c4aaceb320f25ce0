//! RBAC objects from manifests, applied as `kubectl apply` would: created,
//! or replacing those of the same name; `deploy/rbac.yaml`'s namespaced
//! ones in `kube-system`, as `kubectl apply -k deploy/` puts them.

use std::path::{Path, PathBuf};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::Client;
use kube::api::{Api, PostParams};
use serde::Deserialize as _;
use serde_json::Value;

use crate::error::EnvtestError;

/// The namespace `deploy/kustomization.yaml` puts namespaced objects in.
const NAMESPACE: &str = "kube-system";

/// The repository's `deploy/rbac.yaml`.
pub(crate) fn manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/rbac.yaml")
}

/// What [`Identity::UpstreamControllerManager`](crate::Identity) is
/// granted: everything, as no manifest of this repository describes what
/// upstream's controller manager needs.
pub(crate) const UPSTREAM_BINDING: &str = r#"
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata:
  name: upstream-cloud-controller-manager
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
  - kind: ServiceAccount
    name: upstream-cloud-controller-manager
    namespace: kube-system
"#;

/// Applies the RBAC objects of the YAML stream `text` (other kinds are
/// skipped), namespaced ones in their namespace or else `kube-system`.
pub(crate) async fn apply(client: &Client, text: &str, origin: &Path) -> Result<(), EnvtestError> {
    let invalid = |message: String| EnvtestError::Manifest { path: origin.to_owned(), message };
    for document in serde_norway::Deserializer::from_str(text) {
        let object = Value::deserialize(document).map_err(|err| invalid(err.to_string()))?;
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or(NAMESPACE).to_owned();
        match object["kind"].as_str().unwrap_or_default() {
            "ClusterRole" => put(Api::<ClusterRole>::all(client.clone()), object).await,
            "ClusterRoleBinding" => put(Api::<ClusterRoleBinding>::all(client.clone()), object).await,
            "Role" => put(Api::<Role>::namespaced(client.clone(), &namespace), object).await,
            "RoleBinding" => put(Api::<RoleBinding>::namespaced(client.clone(), &namespace), object).await,
            _ => Ok(()),
        }
        .map_err(|err| match err {
            Put::Invalid(message) => invalid(message),
            Put::Kube(err) => EnvtestError::Kube(err),
        })?;
    }
    Ok(())
}

enum Put {
    Invalid(String),
    Kube(kube::Error),
}

/// Creates `object`, or replaces the one of its name.
async fn put<K>(api: Api<K>, object: Value) -> Result<(), Put>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let mut object: K = typed(object).map_err(Put::Invalid)?;
    match api.create(&PostParams::default(), &object).await {
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let name = object.meta().name.clone().unwrap_or_default();
            let existing = api.get(&name).await.map_err(Put::Kube)?;
            object.meta_mut().resource_version = existing.meta().resource_version.clone();
            api.replace(&name, &PostParams::default(), &object).await.map(drop).map_err(Put::Kube)
        }
        created => created.map(drop).map_err(Put::Kube),
    }
}

fn typed<T: serde::de::DeserializeOwned>(object: Value) -> Result<T, String> {
    serde_json::from_value(object).map_err(|err| err.to_string())
}
