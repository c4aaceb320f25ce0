//! Replacing and patching objects and their status, with optimistic concurrency and finalization.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::conversion;
use crate::error::ApiError;
use crate::history::ObjectKey;
use crate::identity;
use crate::meta;
use crate::patch::PatchType;
use crate::resources::ResourceType;
use crate::store::State;
use crate::strategy;

/// Which part of an object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// The main resource: everything but `status` when the resource has a status subresource.
    Main,
    /// The status subresource: `status` and metadata, not `spec`.
    Status,
}

/// Metadata the server owns; client changes to it are ignored.
const SYSTEM_FIELDS: &[&str] =
    &["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "selfLink"];

/// Replaces the object at `key` with `body` (a PUT).
///
/// # Errors
///
/// 404 when the object does not exist, 400 for a body of another type, name or namespace, 409 when the
/// body's resourceVersion or uid is not the stored one, and the errors of [`replace`].
pub(crate) fn update(
    state: &mut State,
    resource: &'static ResourceType,
    key: &ObjectKey,
    part: Part,
    mut body: Value,
    dry_run: bool,
) -> Result<Arc<Value>, ApiError> {
    let old = state.get(resource, key).cloned().ok_or_else(|| ApiError::not_found(resource, &key.name))?;
    identity::check_type(resource, &mut body)?;
    identity::check_namespace(resource, &key.namespace, &mut body)?;
    identity::check_name(&key.name, &body)?;
    replace(state, resource, key, &old, conversion::to_storage(resource, body), part, dry_run)
}

/// Applies the patch in `body` to the object at `key` (a PATCH).
///
/// # Errors
///
/// 404 when the object does not exist, the errors of [`PatchType::apply`], and those of [`update`].
pub(crate) fn patch(
    state: &mut State,
    resource: &'static ResourceType,
    key: &ObjectKey,
    part: Part,
    patch_type: PatchType,
    body: &[u8],
    dry_run: bool,
) -> Result<Arc<Value>, ApiError> {
    let old = state.get(resource, key).cloned().ok_or_else(|| ApiError::not_found(resource, &key.name))?;
    let mut patched = patch_type.apply(resource.plural, &conversion::to_client(resource, &old), body)?;
    identity::check_type(resource, &mut patched)?;
    identity::check_namespace(resource, &key.namespace, &mut patched)?;
    identity::check_name(&key.name, &patched)?;
    replace(state, resource, key, &old, conversion::to_storage(resource, patched), part, dry_run)
}

/// Stores `new` in place of `old`, keeping what `part` may not change and what the server owns.
///
/// An unchanged object is not written again. When `old` is being deleted and `new` has no
/// finalizers left, the object is removed instead, and watches see it deleted.
///
/// # Errors
///
/// 409 for a stale resourceVersion or another uid, 422 when finalizers are added to an object being
/// deleted, and the errors of the kind's update rules.
fn replace(
    state: &mut State,
    resource: &'static ResourceType,
    key: &ObjectKey,
    old: &Arc<Value>,
    mut new: Value,
    part: Part,
    dry_run: bool,
) -> Result<Arc<Value>, ApiError> {
    let stored_version = meta::string(old, "resourceVersion").to_string();
    let version = meta::string(&new, "resourceVersion");
    if !version.is_empty() && version != stored_version {
        return Err(ApiError::stale(resource, &key.name));
    }
    let uid = meta::string(&new, "uid");
    if !uid.is_empty() && uid != meta::string(old, "uid") {
        let message = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            meta::string(old, "uid")
        );
        return Err(ApiError::conflict(resource, &key.name, message));
    }
    if part == Part::Status {
        // The status subresource keeps the object's spec, and takes its
        // metadata and status: upstream's cloud-controller-manager adds and
        // removes the Services' load-balancer finalizer this way.
        let map = new.as_object_mut().expect("objects are JSON maps");
        match old.get("spec") {
            Some(spec) => map.insert("spec".into(), spec.clone()),
            None => map.remove("spec"),
        };
    } else if resource.status {
        set_status(&mut new, old.get("status").cloned());
    }
    for field in SYSTEM_FIELDS {
        meta::copy(old, &mut new, field);
    }
    meta::set(&mut new, "resourceVersion", Some(json!(stored_version)));
    check_finalizers(resource, &key.name, old, &new)?;
    let plan = match part {
        Part::Main => strategy::prepare_update(state, resource, old, &mut new)?,
        Part::Status => None,
    };
    if resource.generation && old.get("spec") != new.get("spec") {
        let generation = meta::metadata(old).and_then(|m| m.get("generation")).and_then(Value::as_i64).unwrap_or(0);
        meta::set(&mut new, "generation", Some(json!(generation + 1)));
    }
    if new == **old {
        return Ok(conversion::to_client(resource, old));
    }
    if meta::is_deleting(old) && meta::finalizers(&new).is_empty() {
        if !dry_run {
            if let Some(plan) = plan {
                state.allocations.transfer(&plan.before, &Default::default());
            }
            state.remove(resource, key);
        }
        return Ok(conversion::to_client(resource, &Arc::new(new)));
    }
    if dry_run {
        return Ok(conversion::to_client(resource, &Arc::new(new)));
    }
    if let Some(plan) = plan {
        state.allocations.transfer(&plan.before, &plan.after);
    }
    let stored = state.put(resource, key.clone(), new);
    Ok(conversion::to_client(resource, &stored))
}

fn set_status(object: &mut Value, status: Option<Value>) {
    let map = object.as_object_mut().expect("objects are JSON maps");
    match status {
        Some(status) => map.insert("status".into(), status),
        None => map.remove("status"),
    };
}

/// Refuses new finalizers on an object being deleted, as the real server's metadata validation does.
fn check_finalizers(resource: &ResourceType, name: &str, old: &Value, new: &Value) -> Result<(), ApiError> {
    if !meta::is_deleting(old) {
        return Ok(());
    }
    let existing = meta::finalizers(old);
    let added: Vec<&str> = meta::finalizers(new).into_iter().filter(|f| !existing.contains(f)).collect();
    if added.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(
        resource,
        name,
        "FieldValueForbidden",
        "metadata.finalizers",
        format!(
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
        ),
    ))
}
