//! Deleting objects: preconditions, and finalizers that keep an object until they are removed.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::conversion;
use crate::error::ApiError;
use crate::history::ObjectKey;
use crate::meta;
use crate::resources::ResourceType;
use crate::service;
use crate::store::State;

/// `DeleteOptions.preconditions`: the delete only proceeds when the object still has these.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// Deletes the object at `key`.
///
/// An object with finalizers is only marked: it gets a `deletionTimestamp` and a
/// `deletionGracePeriodSeconds` of 0 and stays until its finalizers are removed. Returns the object
/// as it is after the request (its last state when removed); with `dry_run` nothing changes.
///
/// # Errors
///
/// 404 when the object does not exist and 409 when a precondition fails.
pub(crate) fn delete(
    state: &mut State,
    resource: &'static ResourceType,
    key: &ObjectKey,
    preconditions: &Preconditions,
    dry_run: bool,
) -> Result<Arc<Value>, ApiError> {
    let old = state.get(resource, key).cloned().ok_or_else(|| ApiError::not_found(resource, &key.name))?;
    let checks =
        [("UID", "uid", &preconditions.uid), ("ResourceVersion", "resourceVersion", &preconditions.resource_version)];
    for (label, field, expected) in checks {
        if let Some(expected) = expected.as_deref()
            && expected != meta::string(&old, field)
        {
            let message = format!(
                "Precondition failed: {label} in precondition: {expected}, {label} in object meta: {}",
                meta::string(&old, field)
            );
            return Err(ApiError::conflict(resource, &key.name, message));
        }
    }
    if !meta::finalizers(&old).is_empty() {
        if meta::is_deleting(&old) {
            return Ok(conversion::to_client(resource, &old));
        }
        let mut marked = (*old).clone();
        meta::set(&mut marked, "deletionTimestamp", Some(json!(meta::now())));
        meta::set(&mut marked, "deletionGracePeriodSeconds", Some(json!(0)));
        if let Some(generation) = meta::metadata(&old).and_then(|m| m.get("generation")).and_then(Value::as_i64) {
            meta::set(&mut marked, "generation", Some(json!(generation + 1)));
        }
        if dry_run {
            return Ok(conversion::to_client(resource, &Arc::new(marked)));
        }
        let stored = state.put(resource, key.clone(), marked);
        return Ok(conversion::to_client(resource, &stored));
    }
    if dry_run {
        return Ok(conversion::to_client(resource, &old));
    }
    if resource.storage == "services" {
        state.allocations.transfer(&service::held(&old), &Default::default());
    }
    let last = state.remove(resource, key).unwrap_or(old);
    Ok(conversion::to_client(resource, &last))
}
