//! Strategic merge patch, driven by a table of list fields and their patch strategy.
//!
//! Maps merge recursively and `null` deletes a key. A list merges only when the table names it;
//! every other list is replaced, as upstream does for fields without a patch strategy (such as
//! `spec.taints` of Nodes and `status.loadBalancer.ingress`). The directives `$patch`
//! (`replace`, `delete`, `merge`), `$retainKeys`, `$setElementOrder/<list>` and
//! `$deleteFromPrimitiveList/<list>` are honoured.

use serde_json::{Map, Value};

use crate::error::ApiError;

/// How a list field merges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListStrategy {
    /// Elements are maps matched by the value of this key.
    MergeKey(&'static str),
    /// Elements are scalars; the result is the union.
    Union,
}

/// A list field that merges, for the resources listed (all of them when empty).
struct ListField {
    resources: &'static [&'static str],
    path: &'static str,
    strategy: ListStrategy,
}

const fn merge(resources: &'static [&'static str], path: &'static str, key: &'static str) -> ListField {
    ListField { resources, path, strategy: ListStrategy::MergeKey(key) }
}

/// The list fields that merge; lists not named here are replaced.
const LIST_FIELDS: &[ListField] = &[
    ListField { resources: &[], path: "metadata.finalizers", strategy: ListStrategy::Union },
    merge(&[], "metadata.ownerReferences", "uid"),
    merge(&["nodes"], "status.conditions", "type"),
    merge(&["nodes"], "status.addresses", "type"),
    merge(&["pods"], "status.conditions", "type"),
    merge(&["services"], "status.conditions", "type"),
    merge(&["deployments"], "status.conditions", "type"),
    merge(&["namespaces"], "status.conditions", "type"),
    merge(&["services"], "spec.ports", "port"),
    merge(&["pods"], "spec.containers", "name"),
    merge(&["pods"], "spec.initContainers", "name"),
    merge(&["pods"], "spec.volumes", "name"),
    merge(&["deployments"], "spec.template.spec.containers", "name"),
    merge(&["deployments"], "spec.template.spec.initContainers", "name"),
    merge(&["deployments"], "spec.template.spec.volumes", "name"),
    merge(&["pods"], "spec.containers.env", "name"),
    merge(&["pods"], "spec.containers.ports", "containerPort"),
    merge(&["pods"], "spec.containers.volumeMounts", "mountPath"),
    merge(&["deployments"], "spec.template.spec.containers.env", "name"),
    merge(&["deployments"], "spec.template.spec.containers.ports", "containerPort"),
    merge(&["deployments"], "spec.template.spec.containers.volumeMounts", "mountPath"),
];

const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVES: &str = "$deleteFromPrimitiveList/";

fn strategy(resource: &str, path: &str) -> Option<ListStrategy> {
    LIST_FIELDS
        .iter()
        .find(|f| f.path == path && (f.resources.is_empty() || f.resources.contains(&resource)))
        .map(|f| f.strategy)
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadRequest(message.into())
}

/// Applies the strategic merge `patch` to `original`, an object of the resource named `plural`.
///
/// # Errors
///
/// 400 BadRequest when the patch is not a map, deletes the whole object, or misuses a directive.
pub(crate) fn apply(plural: &str, original: &Value, patch: &Value) -> Result<Value, ApiError> {
    let patch = patch.as_object().ok_or_else(|| bad("strategic merge patch must be a JSON object"))?;
    let original = original.as_object().cloned().unwrap_or_default();
    merge_map(plural, "", original, patch)?
        .map(Value::Object)
        .ok_or_else(|| bad("a strategic merge patch cannot delete the whole object"))
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// Merges `patch` into `original`; `None` means the map is deleted.
fn merge_map(
    plural: &str,
    path: &str,
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ApiError> {
    match patch.get("$patch").map(|d| d.as_str()) {
        None | Some(Some("merge")) => {}
        Some(Some("replace")) => return merge_map(plural, path, Map::new(), &without(patch, "$patch")),
        Some(Some("delete")) => return Ok(None),
        Some(other) => return Err(bad(format!("Unknown patch type: {other:?}"))),
    }
    for (key, value) in patch.iter().filter(|(k, _)| !k.starts_with('$')) {
        let path = child(path, key);
        match value {
            Value::Null => {
                original.remove(key);
            }
            Value::Object(patch) => {
                let current = match original.remove(key) {
                    Some(Value::Object(current)) => current,
                    _ => Map::new(),
                };
                if let Some(merged) = merge_map(plural, &path, current, patch)? {
                    original.insert(key.clone(), Value::Object(merged));
                }
            }
            Value::Array(patch) => {
                let current = match original.remove(key) {
                    Some(Value::Array(current)) => current,
                    _ => Vec::new(),
                };
                let merged = match strategy(plural, &path) {
                    Some(ListStrategy::MergeKey(merge_key)) => merge_by_key(plural, &path, current, patch, merge_key)?,
                    Some(ListStrategy::Union) => union(current, patch),
                    None => patch.iter().map(strip_directives).collect(),
                };
                original.insert(key.clone(), Value::Array(merged));
            }
            scalar => {
                original.insert(key.clone(), scalar.clone());
            }
        }
    }
    for (directive, value) in patch {
        if let Some(list) = directive.strip_prefix(DELETE_PRIMITIVES) {
            let doomed = value.as_array().ok_or_else(|| bad(format!("{directive} must be a list")))?;
            if let Some(Value::Array(items)) = original.get_mut(list) {
                items.retain(|item| !doomed.contains(item));
                if items.is_empty() {
                    original.remove(list);
                }
            }
        } else if let Some(list) = directive.strip_prefix(SET_ORDER) {
            let order = value.as_array().ok_or_else(|| bad(format!("{directive} must be a list")))?;
            let merge_key = match strategy(plural, &child(path, list)) {
                Some(ListStrategy::MergeKey(key)) => Some(key),
                _ => None,
            };
            if let Some(Value::Array(items)) = original.get_mut(list) {
                reorder(items, order, merge_key);
            }
        }
    }
    if let Some(retained) = patch.get("$retainKeys") {
        let retained = retained.as_array().ok_or_else(|| bad("$retainKeys must be a list"))?;
        original.retain(|key, _| retained.iter().any(|r| r.as_str() == Some(key)));
    }
    Ok(Some(original))
}

fn without(map: &Map<String, Value>, key: &str) -> Map<String, Value> {
    map.iter().filter(|(k, _)| *k != key).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn strip_directives(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), strip_directives(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

fn merge_by_key(
    plural: &str,
    path: &str,
    mut current: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
) -> Result<Vec<Value>, ApiError> {
    let directive = |element: &Value| element.get("$patch").and_then(Value::as_str).map(str::to_string);
    if patch.iter().any(|e| directive(e).as_deref() == Some("replace")) {
        return Ok(patch.iter().filter(|e| directive(e).is_none()).map(strip_directives).collect());
    }
    for element in patch {
        let map = element.as_object().ok_or_else(|| bad(format!("{path}: elements must be maps")))?;
        let key = map.get(merge_key).ok_or_else(|| {
            bad(format!("map: {} does not contain declared merge key: {merge_key}", Value::Object(map.clone())))
        })?;
        let position = current.iter().position(|existing| existing.get(merge_key) == Some(key));
        if directive(element).as_deref() == Some("delete") {
            current.retain(|existing| existing.get(merge_key) != Some(key));
            continue;
        }
        let base = match position.map(|p| &current[p]) {
            Some(Value::Object(existing)) => existing.clone(),
            _ => Map::new(),
        };
        let merged = merge_map(plural, path, base, map)?;
        match (position, merged) {
            (Some(p), Some(merged)) => current[p] = Value::Object(merged),
            (Some(p), None) => {
                current.remove(p);
            }
            (None, Some(merged)) => current.push(Value::Object(merged)),
            (None, None) => {}
        }
    }
    Ok(current)
}

fn union(mut current: Vec<Value>, patch: &[Value]) -> Vec<Value> {
    for item in patch {
        if !current.contains(item) {
            current.push(item.clone());
        }
    }
    current
}

/// Orders `items` as `order` lists them; items it does not list follow in their current order.
fn reorder(items: &mut [Value], order: &[Value], merge_key: Option<&str>) {
    let identity = |item: &Value| match merge_key {
        Some(key) => item.get(key).cloned().unwrap_or(Value::Null),
        None => item.clone(),
    };
    let wanted: Vec<Value> = order.iter().map(identity).collect();
    items.sort_by_key(|item| {
        let id = identity(item);
        wanted.iter().position(|w| *w == id).unwrap_or(wanted.len())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(plural: &str, original: Value, patch: Value) -> Value {
        apply(plural, &original, &patch).unwrap()
    }

    #[test]
    fn finalizers_form_a_union_and_can_be_deleted() {
        let original = json!({"metadata": {"finalizers": ["a"]}});
        let added = patched("services", original.clone(), json!({"metadata": {"finalizers": ["b", "a"]}}));
        assert_eq!(added["metadata"]["finalizers"], json!(["a", "b"]));
        let removed = patched("services", added, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
        assert_eq!(removed["metadata"]["finalizers"], json!(["b"]));
        let emptied =
            patched("services", original, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
        assert!(emptied["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn node_conditions_merge_by_type_and_taints_are_replaced() {
        let original = json!({
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "MemoryPressure", "status": "False"}]},
        });
        let result = patched(
            "nodes",
            original,
            json!({
                "spec": {"taints": [{"key": "b", "effect": "NoSchedule"}]},
                "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]},
            }),
        );
        assert_eq!(result["spec"]["taints"], json!([{"key": "b", "effect": "NoSchedule"}]));
        assert_eq!(
            result["status"]["conditions"],
            json!([
                {"type": "Ready", "status": "True"},
                {"type": "MemoryPressure", "status": "False"},
                {"type": "DiskPressure", "status": "False"}])
        );
    }

    #[test]
    fn element_order_and_delete_directives_apply() {
        let original = json!({"status": {"addresses": [
            {"type": "InternalIP", "address": "10.0.0.1"},
            {"type": "Hostname", "address": "n1"}]}});
        let result = patched(
            "nodes",
            original,
            json!({"status": {
                "$setElementOrder/addresses": [{"type": "Hostname"}, {"type": "ExternalIP"}, {"type": "InternalIP"}],
                "addresses": [{"type": "ExternalIP", "address": "1.2.3.4"}, {"type": "InternalIP", "$patch": "delete"}]}}),
        );
        assert_eq!(
            result["status"]["addresses"],
            json!([{"type": "Hostname", "address": "n1"}, {"type": "ExternalIP", "address": "1.2.3.4"}])
        );
    }

    #[test]
    fn map_directives_replace_and_delete() {
        let original = json!({"status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}}, "spec": {"a": 1, "b": 2}});
        let result = patched(
            "services",
            original,
            json!({"spec": {"$patch": "replace", "c": 3}, "status": {"loadBalancer": {"$patch": "delete"}}}),
        );
        assert_eq!(result["spec"], json!({"c": 3}));
        assert_eq!(result["status"], json!({}));
    }

    #[test]
    fn merge_keyed_lists_need_the_key() {
        let error = apply("nodes", &json!({}), &json!({"status": {"conditions": [{"status": "True"}]}})).unwrap_err();
        assert_eq!(error.code(), 400);
    }
}
