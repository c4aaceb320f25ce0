//! Rules of particular kinds applied on create and update, as the real server's registry strategies do.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::meta;
use crate::resources::ResourceType;
use crate::service::{self, Plan};
use crate::store::State;

/// Applies the create rules of `resource` to `object`; for Services, returns the allocations to commit.
///
/// Status is reset on create for Services, Pods and Deployments, kept for Nodes (kubelets register
/// Nodes with their status) and set to `Active` for Namespaces.
///
/// # Errors
///
/// The errors of [`service::prepare`].
pub(crate) fn prepare_create(
    state: &State,
    resource: &ResourceType,
    object: &mut Value,
) -> Result<Option<Plan>, ApiError> {
    match resource.storage {
        "services" => {
            object["status"] = json!({ "loadBalancer": {} });
            service::prepare(&state.allocations, resource, None, object).map(Some)
        }
        "namespaces" => {
            label_namespace(object);
            let spec =
                object.as_object_mut().expect("objects are JSON maps").entry("spec").or_insert_with(|| json!({}));
            if spec.get("finalizers").is_none() && spec.is_object() {
                spec["finalizers"] = json!(["kubernetes"]);
            }
            object["status"] = json!({ "phase": "Active" });
            Ok(None)
        }
        "pods" => {
            object["status"] = json!({ "phase": "Pending" });
            Ok(None)
        }
        "deployments" => {
            object["status"] = json!({});
            Ok(None)
        }
        "events" if resource.group == "events.k8s.io" => check_note(resource, object).map(|()| None),
        _ => Ok(None),
    }
}

/// The most bytes an `events.k8s.io/v1` Event's note may have.
const NOTE_LENGTH_LIMIT: usize = 1024;

/// Refuses an `events.k8s.io/v1` Event whose note (stored as the core Event's `message`) is longer
/// than the real server allows; core `v1` Events are not checked, as there.
fn check_note(resource: &ResourceType, event: &Value) -> Result<(), ApiError> {
    let note = event["message"].as_str().unwrap_or_default();
    if note.len() <= NOTE_LENGTH_LIMIT {
        return Ok(());
    }
    let name = meta::string(event, "name").to_string();
    let message = format!("Invalid value: \"\": can have at most {NOTE_LENGTH_LIMIT} characters");
    Err(ApiError::invalid(resource, &name, "FieldValueInvalid", "note", message))
}

/// Applies the update rules of `resource` to `object`, replacing `old`; for Services, returns the
/// allocations to commit.
///
/// # Errors
///
/// The errors of [`service::prepare`].
pub(crate) fn prepare_update(
    state: &State,
    resource: &ResourceType,
    old: &Value,
    object: &mut Value,
) -> Result<Option<Plan>, ApiError> {
    match resource.storage {
        "services" => service::prepare(&state.allocations, resource, Some(old), object).map(Some),
        "namespaces" => {
            label_namespace(object);
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// The `kubernetes.io/metadata.name` label the real server keeps on every Namespace.
fn label_namespace(namespace: &mut Value) {
    let name = meta::string(namespace, "name").to_string();
    let metadata = meta::metadata_mut(namespace);
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels["kubernetes.io/metadata.name"] = json!(name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;
    use crate::store::Store;

    #[test]
    fn namespaces_are_active_and_labelled() {
        let store = Store::new(10);
        let namespaces = by_name("namespaces").unwrap();
        let mut namespace = json!({"metadata": {"name": "team"}});
        store.read(|state| prepare_create(state, namespaces, &mut namespace)).unwrap();
        assert_eq!(namespace["status"]["phase"], "Active");
        assert_eq!(namespace["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(namespace["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
    }

    #[test]
    fn nodes_keep_the_status_they_register_with() {
        let store = Store::new(10);
        let nodes = by_name("nodes").unwrap();
        let mut node = json!({"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready"}]}});
        let before = node.clone();
        store.read(|state| prepare_create(state, nodes, &mut node)).unwrap();
        assert_eq!(node, before);
    }

    #[test]
    fn an_events_v1_note_over_1024_bytes_is_invalid() {
        let store = Store::new(10);
        let events = by_name("events.events.k8s.io").unwrap();
        let mut event = json!({"metadata": {"name": "e"}, "message": "x".repeat(NOTE_LENGTH_LIMIT)});
        store.read(|state| prepare_create(state, events, &mut event)).unwrap();
        let mut event = json!({"metadata": {"name": "e"}, "message": "x".repeat(NOTE_LENGTH_LIMIT + 1)});
        let err = store.read(|state| prepare_create(state, events, &mut event)).unwrap_err();
        assert_eq!(err.code(), 422, "{err:?}");
        let mut core = json!({"metadata": {"name": "e"}, "message": "x".repeat(NOTE_LENGTH_LIMIT + 1)});
        store.read(|state| prepare_create(state, by_name("events").unwrap(), &mut core)).unwrap();
    }
}
