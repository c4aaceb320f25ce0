//! Counting requests by verb and resource.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Mutex, PoisonError};

use crate::resources;

/// A snapshot of the requests a server has answered, by verb and resource.
///
/// Verbs are `list`, `watch`, `get`, `create`, `update`, `patch`, `delete` and `deletecollection`;
/// resources are plurals (`services`, `leases`, `events.events.k8s.io` for the `events.k8s.io` group)
/// with `/status` for the status subresource. Requests outside any resource, such as discovery, are
/// counted under verb `get` and their path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestCounts {
    counts: BTreeMap<(String, String), u64>,
    attributes: BTreeMap<RequestAttributes, u64>,
}

/// What an authorizer sees of a request: the attributes Kubernetes' RBAC rules are matched against.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RequestAttributes {
    /// A request for a resource, matched by `rules` of Roles and ClusterRoles.
    Resource {
        /// Who the request acts as: its `Impersonate-User` header (kubeconfig `as:`), since the
        /// server authenticates nobody; `None` without one.
        user: Option<String>,
        /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`.
        verb: String,
        /// The API group, empty for the core group.
        group: String,
        /// The resource's plural, such as `leases`.
        resource: String,
        /// The subresource, such as `status`.
        subresource: Option<String>,
        /// The namespace in the request's path; `None` for cluster-scoped resources and for requests
        /// across all namespaces.
        namespace: Option<String>,
    },
    /// A request outside any resource, such as discovery, matched by `nonResourceURLs`.
    NonResource {
        /// Who the request acts as, as for [`RequestAttributes::Resource`].
        user: Option<String>,
        /// The verb, `get` for a `GET`.
        verb: String,
        /// The request's path.
        path: String,
    },
}

impl RequestCounts {
    /// The number of requests of every kind.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The number of `verb` requests for `resource`, such as `("patch", "services/status")`.
    ///
    /// `resource` may also be spelled `plural.group`, such as `leases.coordination.k8s.io`.
    pub fn get(&self, verb: &str, resource: &str) -> u64 {
        self.counts.get(&(verb.to_string(), canonical(resource))).copied().unwrap_or(0)
    }

    /// Every (verb, resource, count), ordered by verb then resource.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, u64)> {
        self.counts.iter().map(|((verb, resource), count)| (verb.as_str(), resource.as_str(), *count))
    }

    /// Every kind of request as an authorizer sees it, with its namespace, and how often it was made.
    pub fn attributes(&self) -> impl Iterator<Item = (&RequestAttributes, u64)> {
        self.attributes.iter().map(|(attributes, count)| (attributes, *count))
    }
}

fn canonical(resource: &str) -> String {
    let (name, subresource) = match resource.split_once('/') {
        Some((name, sub)) if !resource.starts_with('/') => (name, Some(sub)),
        _ => (resource, None),
    };
    let key = resources::by_name(name).map_or(name, |r| r.key);
    match subresource {
        Some(sub) => format!("{key}/{sub}"),
        None => key.to_string(),
    }
}

impl fmt::Display for RequestCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.counts.keys().map(|(_, r)| r.len()).max().unwrap_or(0).max("RESOURCE".len());
        writeln!(f, "{:<16} {:<width$} {:>8}", "VERB", "RESOURCE", "COUNT")?;
        for (verb, resource, count) in self.iter() {
            writeln!(f, "{verb:<16} {resource:<width$} {count:>8}")?;
        }
        write!(f, "{:<16} {:<width$} {:>8}", "total", "", self.total())
    }
}

/// The live counters behind [`RequestCounts`].
#[derive(Debug, Default)]
pub(crate) struct RequestCounter {
    counts: Mutex<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    by_resource: HashMap<(&'static str, String), u64>,
    by_attributes: HashMap<RequestAttributes, u64>,
}

impl RequestCounter {
    /// Counts one `verb` request for `resource`, which an authorizer would see as `attributes`.
    pub fn record(&self, verb: &'static str, resource: String, attributes: RequestAttributes) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        *counts.by_resource.entry((verb, resource)).or_default() += 1;
        *counts.by_attributes.entry(attributes).or_default() += 1;
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        RequestCounts {
            counts: counts.by_resource.iter().map(|((v, r), c)| ((v.to_string(), r.clone()), *c)).collect(),
            attributes: counts.by_attributes.iter().map(|(a, c)| (a.clone(), *c)).collect(),
        }
    }

    /// Forgets every count.
    pub fn reset(&self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.by_resource.clear();
        counts.by_attributes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(verb: &str, group: &str, resource: &str, status: bool, namespace: Option<&str>) -> RequestAttributes {
        RequestAttributes::Resource {
            user: None,
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: status.then(|| "status".into()),
            namespace: namespace.map(Into::into),
        }
    }

    #[test]
    fn counts_by_verb_and_resource() {
        let counter = RequestCounter::default();
        counter.record("list", "services".into(), resource("list", "", "services", false, None));
        counter.record("list", "services".into(), resource("list", "", "services", false, None));
        counter.record("patch", "services/status".into(), resource("patch", "", "services", true, Some("default")));
        counter.record(
            "get",
            "leases".into(),
            resource("get", "coordination.k8s.io", "leases", false, Some("kube-system")),
        );
        let counts = counter.snapshot();
        assert_eq!(counts.total(), 4);
        assert_eq!(counts.get("list", "services"), 2);
        assert_eq!(counts.get("patch", "services/status"), 1);
        assert_eq!(counts.get("get", "leases.coordination.k8s.io"), 1);
        assert_eq!(counts.get("watch", "services"), 0);
        let table = counts.to_string();
        assert!(table.contains("services/status"), "{table}");
        assert!(table.lines().last().unwrap().trim_end().ends_with('4'), "{table}");
        let attributes: Vec<(RequestAttributes, u64)> = counts.attributes().map(|(a, c)| (a.clone(), c)).collect();
        assert_eq!(
            attributes,
            [
                (resource("get", "coordination.k8s.io", "leases", false, Some("kube-system")), 1),
                (resource("list", "", "services", false, None), 2),
                (resource("patch", "", "services", true, Some("default")), 1),
            ],
            "ordered by verb first"
        );
        counter.reset();
        assert_eq!(counter.snapshot().total(), 0);
        assert_eq!(counter.snapshot().attributes().count(), 0);
    }
}
