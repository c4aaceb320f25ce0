//! Applying JSON, merge and strategic merge patches to stored objects.

use serde_json::Value;

use crate::error::ApiError;
use crate::strategic;

/// The patch types the server accepts.
const ACCEPTED: &str =
    "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json";

/// A patch format, chosen by the request's `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// RFC 6902 JSON patch.
    Json,
    /// RFC 7386 JSON merge patch.
    Merge,
    /// Kubernetes strategic merge patch.
    Strategic,
}

impl PatchType {
    /// The patch type named by `content_type`.
    ///
    /// # Errors
    ///
    /// 415 UnsupportedMediaType for server-side apply and any other media type.
    pub fn from_content_type(content_type: Option<&str>) -> Result<Self, ApiError> {
        let media = content_type.unwrap_or_default().split(';').next().unwrap_or_default().trim();
        match media {
            "application/json-patch+json" => Ok(Self::Json),
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            _ => Err(ApiError::UnsupportedMediaType(ACCEPTED.to_string())),
        }
    }

    /// Applies the patch in `body` to `original`, an object of the resource named `plural`.
    ///
    /// # Errors
    ///
    /// 400 BadRequest when the body is not a patch of this type; 422 when a JSON patch operation fails.
    pub fn apply(self, plural: &str, original: &Value, body: &[u8]) -> Result<Value, ApiError> {
        let patch: Value = serde_json::from_slice(body)
            .map_err(|error| ApiError::BadRequest(format!("error decoding patch: {error}")))?;
        match self {
            Self::Json => {
                let operations: json_patch::Patch = serde_json::from_value(patch)
                    .map_err(|error| ApiError::BadRequest(format!("error decoding JSON patch: {error}")))?;
                let mut patched = original.clone();
                json_patch::patch(&mut patched, &operations)
                    .map_err(|error| ApiError::PatchFailed(format!("the JSON patch could not be applied: {error}")))?;
                Ok(patched)
            }
            Self::Merge => {
                if !patch.is_object() {
                    return Err(ApiError::BadRequest("a merge patch must be a JSON object".into()));
                }
                let mut patched = original.clone();
                json_patch::merge(&mut patched, &patch);
                Ok(patched)
            }
            Self::Strategic => strategic::apply(plural, original, &patch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types_choose_the_patch() {
        assert_eq!(PatchType::from_content_type(Some("application/merge-patch+json")), Ok(PatchType::Merge));
        assert_eq!(
            PatchType::from_content_type(Some("application/strategic-merge-patch+json; charset=utf-8")),
            Ok(PatchType::Strategic)
        );
        let apply = PatchType::from_content_type(Some("application/apply-patch+yaml")).unwrap_err();
        assert_eq!(apply.code(), 415);
    }

    #[test]
    fn json_and_merge_patches_apply() {
        let original = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let merged = PatchType::Merge.apply("nodes", &original, br#"{"metadata":{"labels":{"a":null}}}"#).unwrap();
        assert_eq!(merged["metadata"]["labels"], json!({"b": "2"}));
        let patched = PatchType::Json
            .apply("nodes", &original, br#"[{"op":"test","path":"/metadata/labels/a","value":"1"},{"op":"remove","path":"/metadata/labels/a"}]"#)
            .unwrap();
        assert_eq!(patched, merged);
        let failed = PatchType::Json
            .apply("nodes", &original, br#"[{"op":"test","path":"/metadata/labels/a","value":"9"}]"#)
            .unwrap_err();
        assert_eq!(failed.code(), 422);
    }
}
