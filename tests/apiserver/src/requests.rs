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
    counts: Mutex<HashMap<(&'static str, String), u64>>,
}

impl RequestCounter {
    /// Counts one `verb` request for `resource`.
    pub fn record(&self, verb: &'static str, resource: String) {
        *self.counts.lock().unwrap_or_else(PoisonError::into_inner).entry((verb, resource)).or_default() += 1;
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        RequestCounts { counts: counts.iter().map(|((v, r), c)| ((v.to_string(), r.clone()), *c)).collect() }
    }

    /// Forgets every count.
    pub fn reset(&self) {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_verb_and_resource() {
        let counter = RequestCounter::default();
        counter.record("list", "services".into());
        counter.record("list", "services".into());
        counter.record("patch", "services/status".into());
        counter.record("get", "leases".into());
        let counts = counter.snapshot();
        assert_eq!(counts.total(), 4);
        assert_eq!(counts.get("list", "services"), 2);
        assert_eq!(counts.get("patch", "services/status"), 1);
        assert_eq!(counts.get("get", "leases.coordination.k8s.io"), 1);
        assert_eq!(counts.get("watch", "services"), 0);
        let table = counts.to_string();
        assert!(table.contains("services/status"), "{table}");
        assert!(table.lines().last().unwrap().trim_end().ends_with('4'), "{table}");
        counter.reset();
        assert_eq!(counter.snapshot().total(), 0);
    }
}
