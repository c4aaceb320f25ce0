//! `TokenReview` and `SubjectAccessReview`, as kube-apiserver answers them to a delegating
//! server: tokens are those registered with [`ApiServer::add_token`](crate::ApiServer::add_token),
//! and access is decided by RBAC over the stored ClusterRoles, Roles and their bindings, with
//! `system:masters` allowed everything.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::by_name;
use crate::store::Store;

/// Which review a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Review {
    /// `authentication.k8s.io/v1` `tokenreviews`.
    Token,
    /// `authorization.k8s.io/v1` `subjectaccessreviews`.
    SubjectAccess,
}

impl Review {
    /// The review a path of `group`, `version` and `plural` names.
    pub(crate) fn of(group: &str, version: &str, plural: &str) -> Option<Review> {
        match (group, version, plural) {
            ("authentication.k8s.io", "v1", "tokenreviews") => Some(Review::Token),
            ("authorization.k8s.io", "v1", "subjectaccessreviews") => Some(Review::SubjectAccess),
            _ => None,
        }
    }

    /// `(group, plural)`.
    pub(crate) fn resource(self) -> (&'static str, &'static str) {
        match self {
            Review::Token => ("authentication.k8s.io", "tokenreviews"),
            Review::SubjectAccess => ("authorization.k8s.io", "subjectaccessreviews"),
        }
    }

    /// Answers a review: the request with its `status` filled in.
    pub(crate) fn answer(self, tokens: &Tokens, store: &Store, body: &[u8]) -> Result<Value, ApiError> {
        let mut review: Value =
            serde_json::from_slice(body).map_err(|err| ApiError::BadRequest(format!("invalid review: {err}")))?;
        let (group, plural) = self.resource();
        let kind = if self == Review::Token { "TokenReview" } else { "SubjectAccessReview" };
        if !review.is_object() || !review["spec"].is_object() {
            return Err(ApiError::BadRequest(format!("{plural}.{group} needs a spec")));
        }
        review["status"] = match self {
            Review::Token => tokens.review(review["spec"]["token"].as_str().unwrap_or_default()),
            Review::SubjectAccess => access(store, &review["spec"])?,
        };
        review["apiVersion"] = json!(format!("{group}/v1"));
        review["kind"] = json!(kind);
        review["metadata"] = json!({"creationTimestamp": null});
        Ok(review)
    }
}

/// Bearer tokens and who they belong to.
#[derive(Debug, Default)]
pub(crate) struct Tokens(Mutex<HashMap<String, (String, Vec<String>)>>);

impl Tokens {
    /// Registers `token` for `user` in `groups`; `system:authenticated` is added, as the real
    /// server adds it.
    pub(crate) fn add(&self, token: &str, user: &str, groups: &[&str]) {
        let mut groups: Vec<String> = groups.iter().map(|group| (*group).to_owned()).collect();
        groups.push("system:authenticated".to_owned());
        self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(token.to_owned(), (user.to_owned(), groups));
    }

    /// The status of a `TokenReview` of `token`.
    fn review(&self, token: &str) -> Value {
        match self.0.lock().unwrap_or_else(PoisonError::into_inner).get(token) {
            Some((user, groups)) => json!({"authenticated": true, "user": {"username": user, "groups": groups}}),
            None => json!({"user": {}, "error": "invalid bearer token"}),
        }
    }
}

/// The status of a `SubjectAccessReview` of `spec`.
fn access(store: &Store, spec: &Value) -> Result<Value, ApiError> {
    let user = spec["user"].as_str().unwrap_or_default();
    let groups: Vec<&str> = spec["groups"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let request = match (&spec["nonResourceAttributes"], &spec["resourceAttributes"]) {
        (Value::Object(_), _) => Request::NonResource {
            verb: text(&spec["nonResourceAttributes"]["verb"]),
            path: text(&spec["nonResourceAttributes"]["path"]),
        },
        (_, attributes @ Value::Object(_)) => Request::Resource {
            verb: text(&attributes["verb"]),
            group: text(&attributes["group"]),
            resource: match text(&attributes["subresource"]) {
                subresource if subresource.is_empty() => text(&attributes["resource"]),
                subresource => format!("{}/{subresource}", text(&attributes["resource"])),
            },
            name: text(&attributes["name"]),
            namespace: text(&attributes["namespace"]),
        },
        _ => {
            return Err(ApiError::PatchFailed(
                "spec: at least one of resourceAttributes or nonResourceAttributes must be specified".into(),
            ));
        }
    };
    if groups.contains(&"system:masters") {
        return Ok(json!({"allowed": true}));
    }
    let subject = Subject { user, groups: &groups };
    Ok(match store.read(|state| grant(state, &subject, &request)) {
        Some(reason) => json!({"allowed": true, "reason": reason}),
        None => json!({"allowed": false}),
    })
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// What a subject asks to do.
enum Request {
    NonResource { verb: String, path: String },
    Resource { verb: String, group: String, resource: String, name: String, namespace: String },
}

struct Subject<'a> {
    user: &'a str,
    groups: &'a [&'a str],
}

impl Subject<'_> {
    /// Whether a binding's `subjects` name this subject.
    fn named_by(&self, subjects: &Value) -> bool {
        subjects.as_array().into_iter().flatten().any(|subject| {
            let name = subject["name"].as_str().unwrap_or_default();
            match subject["kind"].as_str().unwrap_or_default() {
                "User" => name == self.user,
                "Group" => self.groups.contains(&name),
                "ServiceAccount" => {
                    let namespace = subject["namespace"].as_str().unwrap_or_default();
                    self.user == format!("system:serviceaccount:{namespace}:{name}")
                }
                _ => false,
            }
        })
    }
}

/// The reason RBAC allows `request` to `subject`, as the real server words it, or `None`.
fn grant(state: &crate::store::State, subject: &Subject<'_>, request: &Request) -> Option<String> {
    let objects = |name: &str| {
        let resource = by_name(name).expect("RBAC resources are served");
        state.objects_at(resource, state.revision()).map(|objects| objects.into_owned()).unwrap_or_default()
    };
    let role = |kind: &str, namespace: &str, name: &str| {
        let plural = if kind == "ClusterRole" { "clusterroles" } else { "roles" };
        let namespace = if kind == "ClusterRole" { "" } else { namespace };
        objects(plural)
            .into_iter()
            .find(|(key, _)| key.name == name && key.namespace == namespace)
            .map(|(_, role)| role["rules"].clone())
    };
    let who = format!("User {:?}", subject.user);
    for (key, binding) in objects("clusterrolebindings") {
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        if subject.named_by(&binding["subjects"])
            && role("ClusterRole", "", role_name).is_some_and(|rules| allows(&rules, request))
        {
            return Some(format!(
                "RBAC: allowed by ClusterRoleBinding {:?} of ClusterRole {role_name:?} to {who}",
                key.name
            ));
        }
    }
    let Request::Resource { namespace, .. } = request else { return None };
    for (key, binding) in objects("rolebindings") {
        let kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        if key.namespace == *namespace
            && subject.named_by(&binding["subjects"])
            && role(kind, namespace, role_name).is_some_and(|rules| allows(&rules, request))
        {
            return Some(format!(
                "RBAC: allowed by RoleBinding \"{}/{namespace}\" of {kind} {role_name:?} to {who}",
                key.name
            ));
        }
    }
    None
}

/// Whether one of `rules` allows `request`, as the RBAC authorizer matches them.
fn allows(rules: &Value, request: &Request) -> bool {
    let list = |rule: &Value, field: &str| -> Vec<String> {
        rule[field].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
    };
    let has = |items: &[String], value: &str| items.iter().any(|item| item == "*" || item == value);
    rules.as_array().into_iter().flatten().any(|rule| {
        let verbs = list(rule, "verbs");
        match request {
            Request::NonResource { verb, path } => {
                has(&verbs, verb)
                    && list(rule, "nonResourceURLs").iter().any(|url| match url.strip_suffix('*') {
                        Some(prefix) => path.starts_with(prefix),
                        None => url == path,
                    })
            }
            Request::Resource { verb, group, resource, name, .. } => {
                let resources = list(rule, "resources");
                let names = list(rule, "resourceNames");
                has(&verbs, verb)
                    && has(&list(rule, "apiGroups"), group)
                    && (has(&resources, resource)
                        || resource
                            .split_once('/')
                            .is_some_and(|(plural, _)| resources.contains(&format!("{plural}/*"))))
                    && (names.is_empty() || names.contains(name))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_as_rbac_matches_them() {
        let rules = json!([
            {"verbs": ["get"], "nonResourceURLs": ["/metrics", "/debug/*"]},
            {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"]},
            {"verbs": ["patch"], "apiGroups": [""], "resources": ["services/*"], "resourceNames": ["web"]},
        ]);
        let path = |verb: &str, path: &str| Request::NonResource { verb: verb.into(), path: path.into() };
        assert!(allows(&rules, &path("get", "/metrics")));
        assert!(allows(&rules, &path("get", "/debug/pprof")));
        assert!(!allows(&rules, &path("get", "/providers")));
        assert!(!allows(&rules, &path("post", "/metrics")));
        let resource = |verb: &str, group: &str, resource: &str, name: &str| Request::Resource {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            name: name.into(),
            namespace: String::new(),
        };
        assert!(allows(&rules, &resource("create", "authentication.k8s.io", "tokenreviews", "")));
        assert!(!allows(&rules, &resource("create", "authorization.k8s.io", "tokenreviews", "")));
        assert!(allows(&rules, &resource("patch", "", "services/status", "web")));
        assert!(!allows(&rules, &resource("patch", "", "services/status", "db")));
        assert!(!allows(&rules, &resource("patch", "", "services", "web")));
    }

    #[test]
    fn tokens_review_as_registered() {
        let tokens = Tokens::default();
        tokens.add("s3cret", "alice", &["ops"]);
        let known = tokens.review("s3cret");
        assert_eq!(known["authenticated"], true);
        assert_eq!(known["user"]["username"], "alice");
        assert_eq!(known["user"]["groups"], json!(["ops", "system:authenticated"]));
        assert!(tokens.review("guess").get("authenticated").is_none());
    }
}
