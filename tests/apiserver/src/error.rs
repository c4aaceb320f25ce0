//! Request failures and the metav1 `Status` objects that report them.

use serde_json::{Value, json};

use crate::resources::ResourceType;

/// One field-level cause of an [`ApiError::Invalid`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cause {
    /// The `metav1.CauseType`, such as `FieldValueInvalid`.
    pub reason: &'static str,
    /// The field path, such as `spec.ports[0].nodePort`.
    pub field: String,
    /// The message after the field path.
    pub message: String,
}

/// A request that cannot be served, with the HTTP code and `reason` the real server uses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ApiError {
    /// 404 for an object that does not exist.
    #[error("{resource} \"{name}\" not found")]
    NotFound { resource: String, group: &'static str, plural: &'static str, name: String },
    /// 404 for a path the server does not serve.
    #[error("the server could not find the requested resource")]
    NoRoute,
    /// 409 when creating an object that exists.
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists { resource: String, group: &'static str, plural: &'static str, name: String },
    /// 409 for a failed precondition or a stale resourceVersion.
    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {message}")]
    Conflict { resource: String, group: &'static str, plural: &'static str, name: String, message: String },
    /// 422 for an object that fails validation.
    #[error("{kind} \"{name}\" is invalid: {}", render_causes(.causes))]
    Invalid { kind: &'static str, group: &'static str, name: String, causes: Vec<Cause> },
    /// 422 for a patch that cannot be applied to the object.
    #[error("{0}")]
    PatchFailed(String),
    /// 400 for a malformed request.
    #[error("{0}")]
    BadRequest(String),
    /// 405 for a verb the path does not support.
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// 415 for a patch type the server does not support.
    #[error("the body of the request was in an unknown format - accepted media types include: {0}")]
    UnsupportedMediaType(String),
    /// 410 for a resourceVersion or continue token older than the compaction point.
    #[error("{0}")]
    Expired(String),
    /// 504 for a resourceVersion newer than the server has reached.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion { requested: u64, current: u64 },
    /// 500 for a request the server refuses the way the real one fails internally.
    #[error("{0}")]
    Internal(String),
    /// An injected failure with this HTTP status.
    #[error("{message}")]
    Injected { code: u16, message: String },
}

fn render_causes(causes: &[Cause]) -> String {
    let rendered: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    if rendered.len() == 1 { rendered.concat() } else { format!("[{}]", rendered.join(", ")) }
}

impl ApiError {
    /// A 404 for `name` of `resource`.
    pub fn not_found(resource: &ResourceType, name: &str) -> Self {
        Self::NotFound {
            resource: resource.qualified(),
            group: resource.group,
            plural: resource.plural,
            name: name.to_string(),
        }
    }

    /// A 409 AlreadyExists for `name` of `resource`.
    pub fn already_exists(resource: &ResourceType, name: &str) -> Self {
        Self::AlreadyExists {
            resource: resource.qualified(),
            group: resource.group,
            plural: resource.plural,
            name: name.to_string(),
        }
    }

    /// A 409 Conflict for `name` of `resource`.
    pub fn conflict(resource: &ResourceType, name: &str, message: impl Into<String>) -> Self {
        Self::Conflict {
            resource: resource.qualified(),
            group: resource.group,
            plural: resource.plural,
            name: name.to_string(),
            message: message.into(),
        }
    }

    /// A 409 for an update carrying a resourceVersion other than the stored one.
    pub fn stale(resource: &ResourceType, name: &str) -> Self {
        Self::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// A 422 with a single cause.
    pub fn invalid(resource: &ResourceType, name: &str, reason: &'static str, field: &str, message: String) -> Self {
        Self::Invalid {
            kind: resource.kind,
            group: resource.group,
            name: name.to_string(),
            causes: vec![Cause { reason, field: field.to_string(), message }],
        }
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            Self::NotFound { .. } | Self::NoRoute => 404,
            Self::AlreadyExists { .. } | Self::Conflict { .. } => 409,
            Self::Invalid { .. } | Self::PatchFailed(_) => 422,
            Self::BadRequest(_) => 400,
            Self::MethodNotAllowed => 405,
            Self::UnsupportedMediaType(_) => 415,
            Self::Expired(_) => 410,
            Self::TooLargeResourceVersion { .. } => 504,
            Self::Internal(_) => 500,
            Self::Injected { code, .. } => *code,
        }
    }

    /// The metav1 `StatusReason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } | Self::NoRoute => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } => "Conflict",
            Self::Invalid { .. } | Self::PatchFailed(_) => "Invalid",
            Self::BadRequest(_) => "BadRequest",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Self::Expired(_) => "Expired",
            Self::TooLargeResourceVersion { .. } => "Timeout",
            Self::Internal(_) => "InternalError",
            Self::Injected { code, .. } => injected_reason(*code),
        }
    }

    /// Seconds a client should wait before retrying, when the server asks for it.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::Injected { code: 429, .. } | Self::TooLargeResourceVersion { .. } => Some(1),
            _ => None,
        }
    }

    /// The metav1 `Status` object describing this failure.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code(),
        });
        if let Some(details) = self.details() {
            status["details"] = details;
        }
        status
    }

    fn details(&self) -> Option<Value> {
        let mut details = match self {
            Self::NotFound { group, plural, name, .. }
            | Self::AlreadyExists { group, plural, name, .. }
            | Self::Conflict { group, plural, name, .. } => json!({ "name": name, "group": group, "kind": plural }),
            Self::Invalid { kind, group, name, causes } => json!({
                "name": name,
                "group": group,
                "kind": kind,
                "causes": causes
                    .iter()
                    .map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field }))
                    .collect::<Vec<_>>(),
            }),
            Self::TooLargeResourceVersion { .. } => json!({
                "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }],
            }),
            Self::Internal(message) => json!({ "causes": [{ "message": message }] }),
            _ => json!({}),
        };
        if let Some(seconds) = self.retry_after() {
            details["retryAfterSeconds"] = json!(seconds);
        }
        let details = details.as_object_mut()?;
        if details.get("group").is_some_and(|g| g == "") {
            details.remove("group");
        }
        (!details.is_empty()).then(|| Value::Object(std::mem::take(details)))
    }
}

fn injected_reason(code: u16) -> &'static str {
    match code {
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
}

/// The message of an injected failure with `code`, as the real server words it.
pub(crate) fn injected_message(code: u16) -> String {
    match code {
        429 => "Too many requests, please try again later.".to_string(),
        500 => "Internal error occurred: injected failure".to_string(),
        _ => format!("injected failure with status {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;

    #[test]
    fn not_found_names_the_resource_like_the_real_server() {
        let leases = by_name("leases").unwrap();
        let status = ApiError::not_found(leases, "lock").status();
        assert_eq!(status["message"], "leases.coordination.k8s.io \"lock\" not found");
        assert_eq!(status["code"], 404);
        assert_eq!(status["details"]["kind"], "leases");
        assert_eq!(status["details"]["group"], "coordination.k8s.io");

        let services = by_name("services").unwrap();
        let status = ApiError::not_found(services, "web").status();
        assert!(status["details"].get("group").is_none());
    }

    #[test]
    fn invalid_lists_its_causes() {
        let services = by_name("services").unwrap();
        let error = ApiError::invalid(
            services,
            "web",
            "FieldValueInvalid",
            "spec.ports[0].nodePort",
            "Invalid value: 30080: provided port is already allocated".into(),
        );
        let status = error.status();
        assert_eq!(status["code"], 422);
        assert_eq!(
            status["message"],
            "Service \"web\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.ports[0].nodePort");
    }

    #[test]
    fn too_many_requests_asks_for_a_retry() {
        let error = ApiError::Injected { code: 429, message: injected_message(429) };
        assert_eq!(error.reason(), "TooManyRequests");
        assert_eq!(error.status()["details"]["retryAfterSeconds"], 1);
    }
}
