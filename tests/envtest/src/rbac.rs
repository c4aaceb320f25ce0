//! `deploy/rbac.yaml`, applied as `kubectl apply -k deploy/` would: its
//! cluster-wide objects as they are, its namespaced ones in `kube-system`.

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

/// Creates every object of `path` with `client`.
pub(crate) async fn apply(client: &Client, path: &Path) -> Result<(), EnvtestError> {
    let text = std::fs::read_to_string(path).map_err(EnvtestError::file(path))?;
    let invalid = |message: String| EnvtestError::Manifest { path: path.to_owned(), message };
    for document in serde_norway::Deserializer::from_str(&text) {
        let object = Value::deserialize(document).map_err(|err| invalid(err.to_string()))?;
        if object.is_null() {
            continue;
        }
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let params = PostParams::default();
        match kind.as_str() {
            "ClusterRole" => {
                Api::<ClusterRole>::all(client.clone()).create(&params, &typed(object).map_err(invalid)?).await?;
            }
            "ClusterRoleBinding" => {
                Api::<ClusterRoleBinding>::all(client.clone())
                    .create(&params, &typed(object).map_err(invalid)?)
                    .await?;
            }
            "Role" => {
                Api::<Role>::namespaced(client.clone(), NAMESPACE)
                    .create(&params, &typed(object).map_err(invalid)?)
                    .await?;
            }
            "RoleBinding" => {
                Api::<RoleBinding>::namespaced(client.clone(), NAMESPACE)
                    .create(&params, &typed(object).map_err(invalid)?)
                    .await?;
            }
            other => return Err(invalid(format!("unexpected kind {other:?}"))),
        }
    }
    Ok(())
}

fn typed<T: serde::de::DeserializeOwned>(object: Value) -> Result<T, String> {
    serde_json::from_value(object).map_err(|err| err.to_string())
}
