//! Parsing request paths into the resource, namespace, name and subresource they address.

use crate::resources::{self, ResourceType};
use crate::review::Review;

/// A path under `/api/v1` or `/apis/{group}/{version}` that names a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourcePath {
    pub resource: &'static ResourceType,
    /// The namespace in the path; `None` for cluster-scoped resources and cluster-wide collections.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// Whether the path ends in the `status` subresource.
    pub status: bool,
    /// Whether the path starts with the legacy `watch/` prefix.
    pub watch: bool,
}

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// `/healthz`, `/livez`, `/readyz` and their sub-paths.
    Health,
    /// A discovery document.
    Discovery,
    Resource(ResourcePath),
    /// A `TokenReview` or `SubjectAccessReview`.
    Review(Review),
    /// Anything else: 404.
    Unknown,
}

fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| segment.get(index + 1..index + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                index += 3;
            }
            None => {
                decoded.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// Parses `path`.
pub(crate) fn parse(path: &str) -> Route {
    let segments: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(percent_decode).collect();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segments.as_slice() {
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["version"] | ["api"] | ["api", _] | ["apis"] | ["apis", _] | ["apis", _, _] => Route::Discovery,
        ["api", "v1", rest @ ..] => resource_path("", "v1", rest),
        ["apis", group, version, plural] if Review::of(group, version, plural).is_some() => {
            Route::Review(Review::of(group, version, plural).expect("checked"))
        }
        ["apis", group, version, rest @ ..] => resource_path(group, version, rest),
        _ => Route::Unknown,
    }
}

fn resource_path(group: &str, version: &str, rest: &[&str]) -> Route {
    let (watch, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, plural, rest @ ..]
            if resources::find(group, version, plural).is_some_and(|r| r.namespaced) =>
        {
            (Some(namespace.to_string()), [&[*plural][..], rest].concat())
        }
        rest => (None, rest.to_vec()),
    };
    let Some(resource) = rest.first().and_then(|plural| resources::find(group, version, plural)) else {
        return Route::Unknown;
    };
    let name = rest.get(1).map(|n| n.to_string());
    let status = match rest.get(2) {
        None => false,
        Some(&"status") if resource.status && rest.len() == 3 => true,
        Some(_) => return Route::Unknown,
    };
    if resource.namespaced && namespace.is_none() && name.is_some() {
        return Route::Unknown;
    }
    Route::Resource(ResourcePath { resource, namespace, name, status, watch })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(path: &str) -> ResourcePath {
        match parse(path) {
            Route::Resource(resource) => resource,
            other => panic!("{path} parsed as {other:?}"),
        }
    }

    #[test]
    fn parses_namespaced_and_cluster_paths() {
        let service = resource("/api/v1/namespaces/default/services/web/status");
        assert_eq!(service.resource.plural, "services");
        assert_eq!(service.namespace.as_deref(), Some("default"));
        assert_eq!(service.name.as_deref(), Some("web"));
        assert!(service.status);

        let all = resource("/api/v1/services");
        assert_eq!(all.namespace, None);
        assert_eq!(all.name, None);

        let namespace = resource("/api/v1/namespaces/default");
        assert_eq!(namespace.resource.plural, "namespaces");
        assert_eq!(namespace.name.as_deref(), Some("default"));

        let namespace_status = resource("/api/v1/namespaces/default/status");
        assert!(namespace_status.status);

        let lease = resource("/apis/coordination.k8s.io/v1/watch/namespaces/kube-system/leases");
        assert!(lease.watch);
        assert_eq!(lease.resource.group, "coordination.k8s.io");
    }

    #[test]
    fn decodes_and_rejects() {
        let role = resource("/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Accm");
        assert_eq!(role.name.as_deref(), Some("system:ccm"));
        assert_eq!(parse("/api/v1/widgets"), Route::Unknown);
        assert_eq!(parse("/api/v1/configmaps/x/status"), Route::Unknown);
        assert_eq!(parse("/api/v1/services/web"), Route::Unknown);
        assert_eq!(parse("/apis/apps/v1"), Route::Discovery);
        assert_eq!(parse("/readyz"), Route::Health);
    }
}
