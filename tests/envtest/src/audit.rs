//! The API server's audit log of the controller managers' requests, read
//! back as counts by user, verb and resource.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::error::EnvtestError;
use crate::identity::Identity;

/// An audit policy logging the metadata of the controller managers'
/// requests, those of every ServiceAccount of `kube-system` (the controllers'
/// own identities) included, and nothing else.
pub(crate) fn policy() -> String {
    let users = [Identity::CloudControllerManager, Identity::UpstreamControllerManager]
        .map(|identity| format!("\"{}\"", identity.user()))
        .join(", ");
    format!(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n    users: [{users}]\n  - level: Metadata\n    userGroups: [\"system:serviceaccounts:kube-system\"]\n  - level: None\n"
    )
}

/// One request, as the audit log has it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AuditedRequest {
    /// The user who made it.
    pub user: String,
    /// `get`, `list`, `watch`, `create`, `patch`...
    pub verb: String,
    /// `services`, `services/status`, `events.events.k8s.io`..., or the
    /// path of a non-resource request.
    pub resource: String,
    /// The answer's HTTP status; 0 when the log has none.
    pub code: u16,
}

/// Requests counted from the audit log.
#[derive(Debug, Clone, Default)]
pub struct AuditedRequests {
    counts: BTreeMap<AuditedRequest, u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    stage: String,
    verb: String,
    #[serde(rename = "requestURI")]
    request_uri: String,
    user: User,
    object_ref: Option<ObjectRef>,
    response_status: Option<ResponseStatus>,
}

#[derive(Deserialize)]
struct ResponseStatus {
    code: Option<u16>,
}

#[derive(Deserialize)]
struct User {
    username: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    resource: Option<String>,
    subresource: Option<String>,
    api_group: Option<String>,
}

impl AuditedRequests {
    /// Reads the audit log at `path`. A watch counts once, when its response
    /// starts; any other request when its response completes.
    pub(crate) fn read(path: &Path) -> Result<Self, EnvtestError> {
        let text = std::fs::read_to_string(path).map_err(EnvtestError::file(path))?;
        let mut requests = AuditedRequests::default();
        for event in text.lines().filter_map(|line| serde_json::from_str::<Event>(line).ok()) {
            let counted = match event.verb.as_str() {
                "watch" => event.stage == "ResponseStarted",
                _ => event.stage == "ResponseComplete",
            };
            if !counted {
                continue;
            }
            let resource = match &event.object_ref {
                Some(ObjectRef { resource: Some(resource), subresource, api_group }) => {
                    let group = api_group.as_deref().filter(|group| !group.is_empty());
                    let mut name = group.map_or_else(|| resource.clone(), |group| format!("{resource}.{group}"));
                    if let Some(subresource) = subresource {
                        name = format!("{name}/{subresource}");
                    }
                    name
                }
                _ => event.request_uri.split('?').next().unwrap_or_default().to_owned(),
            };
            let code = event.response_status.and_then(|status| status.code).unwrap_or(0);
            let request = AuditedRequest { user: event.user.username, verb: event.verb, resource, code };
            *requests.counts.entry(request).or_default() += 1;
        }
        Ok(requests)
    }

    /// The requests `identity` made.
    pub fn of(&self, identity: Identity) -> AuditedRequests {
        let counts = self
            .counts
            .iter()
            .filter(|(request, _)| request.user == identity.user())
            .map(|(request, count)| (request.clone(), *count))
            .collect();
        AuditedRequests { counts }
    }

    /// How many requests there were.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// How many requests had `verb` and `resource`.
    pub fn count(&self, verb: &str, resource: &str) -> u64 {
        self.counts
            .iter()
            .filter(|(request, _)| request.verb == verb && request.resource == resource)
            .map(|(_, count)| count)
            .sum()
    }

    /// Each request and its count.
    pub fn iter(&self) -> impl Iterator<Item = (&AuditedRequest, u64)> {
        self.counts.iter().map(|(request, count)| (request, *count))
    }
}

impl fmt::Display for AuditedRequests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<8} {:<28} {:>7}", "VERB", "RESOURCE", "COUNT")?;
        let mut by_request: BTreeMap<(&str, &str), u64> = BTreeMap::new();
        for (request, count) in &self.counts {
            *by_request.entry((&request.verb, &request.resource)).or_default() += count;
        }
        for ((verb, resource), count) in by_request {
            writeln!(f, "{verb:<8} {resource:<28} {count:>7}")?;
        }
        writeln!(f, "{:<8} {:<28} {:>7}", "total", "", self.total())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_once_and_watches_when_they_start() {
        let user = Identity::CloudControllerManager.user();
        let line = |stage: &str, verb: &str, object: &str| {
            format!(
                r#"{{"kind":"Event","stage":"{stage}","verb":"{verb}","requestURI":"/x","user":{{"username":"{user}"}},"objectRef":{object}}}"#
            )
        };
        let log = [
            line("ResponseStarted", "watch", r#"{"resource":"services","apiVersion":"v1"}"#),
            line("ResponseComplete", "watch", r#"{"resource":"services","apiVersion":"v1"}"#),
            line("ResponseComplete", "patch", r#"{"resource":"services","subresource":"status","apiVersion":"v1"}"#)
                .replace("}}", r#"},"responseStatus":{"code":403}}"#),
            line("ResponseComplete", "create", r#"{"resource":"events","apiGroup":"events.k8s.io","apiVersion":"v1"}"#),
            "not json".to_owned(),
        ]
        .join("\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, log).unwrap();
        let requests = AuditedRequests::read(&path).unwrap().of(Identity::CloudControllerManager);
        assert_eq!(requests.count("watch", "services"), 1);
        assert_eq!(requests.count("patch", "services/status"), 1);
        assert!(requests.iter().any(|(request, _)| request.code == 403 && request.verb == "patch"));
        assert_eq!(requests.count("create", "events.events.k8s.io"), 1);
        assert_eq!(requests.total(), 3);
        assert_eq!(requests.of(Identity::Admin).total(), 0);
    }
}
