//! Checks that a request body is an object of the addressed resource, in the addressed namespace.

use serde_json::Value;

use crate::error::ApiError;
use crate::meta;
use crate::resources::ResourceType;

/// Checks `apiVersion` and `kind` of `body` against `resource` and fills them in when missing.
///
/// # Errors
///
/// 400 BadRequest when the body is not an object or names another type.
pub(crate) fn check_type(resource: &ResourceType, body: &mut Value) -> Result<(), ApiError> {
    let map =
        body.as_object_mut().ok_or_else(|| ApiError::BadRequest("the request body must be a JSON object".into()))?;
    let expected_version = resource.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(version) if !version.is_empty() && version != expected_version => {
            return Err(ApiError::BadRequest(format!(
                "the API version in the data ({version}) does not match the expected API version ({expected_version})"
            )));
        }
        _ => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        Some(kind) if !kind.is_empty() && kind != resource.kind => {
            return Err(ApiError::BadRequest(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                resource.kind
            )));
        }
        _ => {}
    }
    map.insert("apiVersion".into(), Value::String(expected_version));
    map.insert("kind".into(), Value::String(resource.kind.into()));
    Ok(())
}

/// Makes `metadata.namespace` of `body` the request's namespace: filled in when empty, cleared for
/// cluster-scoped resources.
///
/// # Errors
///
/// 400 BadRequest when the body names another namespace.
pub(crate) fn check_namespace(resource: &ResourceType, namespace: &str, body: &mut Value) -> Result<(), ApiError> {
    if !resource.namespaced {
        meta::set(body, "namespace", None);
        return Ok(());
    }
    match meta::string(body, "namespace") {
        "" => meta::set(body, "namespace", Some(Value::String(namespace.into()))),
        theirs if theirs == namespace => {}
        _ => {
            return Err(ApiError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
    }
    Ok(())
}

/// Checks that `body` carries the name of the URL it was sent to.
///
/// # Errors
///
/// 400 BadRequest when the names differ.
pub(crate) fn check_name(name: &str, body: &Value) -> Result<(), ApiError> {
    let theirs = meta::string(body, "name");
    if theirs != name {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({theirs}) does not match the name on the URL ({name})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;
    use serde_json::json;

    #[test]
    fn fills_type_and_namespace() {
        let services = by_name("services").unwrap();
        let mut body = json!({"metadata": {"name": "web"}});
        check_type(services, &mut body).unwrap();
        check_namespace(services, "default", &mut body).unwrap();
        assert_eq!(body["apiVersion"], "v1");
        assert_eq!(body["kind"], "Service");
        assert_eq!(body["metadata"]["namespace"], "default");
        assert_eq!(check_namespace(services, "other", &mut body).unwrap_err().code(), 400);
        assert_eq!(check_type(services, &mut json!({"kind": "Node"})).unwrap_err().code(), 400);
        assert!(check_name("web", &body).is_ok());
        assert_eq!(check_name("db", &body).unwrap_err().code(), 400);
    }

    #[test]
    fn cluster_scoped_objects_lose_their_namespace() {
        let nodes = by_name("nodes").unwrap();
        let mut body = json!({"metadata": {"name": "n", "namespace": "default"}});
        check_namespace(nodes, "", &mut body).unwrap();
        assert!(body["metadata"].get("namespace").is_none());
    }
}
