//! Creating objects: system metadata, names, namespaces and the create rules of each kind.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::conversion;
use crate::error::ApiError;
use crate::history::ObjectKey;
use crate::identity;
use crate::meta;
use crate::resources::{ResourceType, by_name};
use crate::store::State;
use crate::strategy;

/// Creates `body` as an object of `resource` in `namespace` (empty for cluster-scoped resources).
///
/// Returns the object as clients of `resource` see it; with `dry_run` nothing is stored.
///
/// # Errors
///
/// 400 for a body of another type or namespace, 422 for a missing or invalid name, 500 when the body
/// carries a resourceVersion (as the real storage layer refuses it), 404 when the namespace does not
/// exist and 409 when the name is taken.
pub(crate) fn create(
    state: &mut State,
    resource: &'static ResourceType,
    namespace: &str,
    mut body: Value,
    dry_run: bool,
) -> Result<Arc<Value>, ApiError> {
    identity::check_type(resource, &mut body)?;
    identity::check_namespace(resource, namespace, &mut body)?;
    if meta::string(&body, "name").is_empty() {
        let prefix = meta::string(&body, "generateName");
        if prefix.is_empty() {
            return Err(ApiError::invalid(
                resource,
                "",
                "FieldValueRequired",
                "metadata.name",
                "Required value: name or generateName is required".into(),
            ));
        }
        let name = meta::generate_name(prefix);
        meta::set(&mut body, "name", Some(json!(name)));
    }
    if !meta::string(&body, "resourceVersion").is_empty() {
        return Err(ApiError::Internal("resourceVersion should not be set on objects to be created".into()));
    }
    let name = meta::string(&body, "name").to_string();
    if let Some(problem) = meta::check_name(&name, resource.name_rule) {
        return Err(ApiError::invalid(
            resource,
            &name,
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: \"{name}\": {problem}"),
        ));
    }
    let mut object = conversion::to_storage(resource, body);
    meta::set(&mut object, "uid", Some(json!(uuid::Uuid::new_v4().to_string())));
    meta::set(&mut object, "creationTimestamp", Some(json!(meta::now())));
    meta::set(&mut object, "generation", resource.generation.then(|| json!(1)));
    for cleared in ["deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
        meta::set(&mut object, cleared, None);
    }

    if resource.namespaced {
        let namespaces = by_name("namespaces").expect("namespaces are served");
        let namespace_key = ObjectKey { namespace: String::new(), name: namespace.to_string() };
        if state.get(namespaces, &namespace_key).is_none() {
            return Err(ApiError::not_found(namespaces, namespace));
        }
    }
    let key = ObjectKey { namespace: namespace.to_string(), name: name.clone() };
    if state.get(resource, &key).is_some() {
        return Err(ApiError::already_exists(resource, &name));
    }
    let plan = strategy::prepare_create(state, resource, &mut object)?;
    if dry_run {
        return Ok(conversion::to_client(resource, &Arc::new(object)));
    }
    if let Some(plan) = plan {
        state.allocations.transfer(&plan.before, &plan.after);
    }
    let stored = state.put(resource, key, object);
    Ok(conversion::to_client(resource, &stored))
}
