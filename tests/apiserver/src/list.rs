//! Listing with selectors and consistent pages, following the real server's resourceVersion rules.

use std::ops::Bound;
use std::sync::Arc;

use serde_json::Value;

use crate::conversion;
use crate::error::ApiError;
use crate::history::ObjectKey;
use crate::resources::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::State;

/// The query of a list or watch request.
#[derive(Clone, Debug, Default)]
pub(crate) struct ListOptions {
    /// Only objects of this namespace; all namespaces when `None`.
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// The most items to return; `None` or 0 for all of them.
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub version_match: Option<String>,
}

impl ListOptions {
    /// Whether `object`, as clients see it, is in the namespace and matches both selectors.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    fn selects_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

/// One page of a list.
#[derive(Debug)]
pub(crate) struct Page {
    /// The items as clients of the resource see them.
    pub items: Vec<Arc<Value>>,
    /// The revision the page was read at.
    pub revision: u64,
    pub continue_token: Option<String>,
    /// How many more items match, when the request had no selectors.
    pub remaining: Option<usize>,
}

fn encode_token(revision: u64, key: &ObjectKey) -> String {
    let text = format!("{revision}/{}/{}", key.namespace, key.name);
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_token(token: &str) -> Option<(u64, ObjectKey)> {
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| token.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok()))
        .collect();
    let text = String::from_utf8(bytes?).ok()?;
    let mut parts = text.splitn(3, '/');
    let revision = parts.next()?.parse().ok()?;
    let namespace = parts.next()?.to_string();
    let name = parts.next()?.to_string();
    Some((revision, ObjectKey { namespace, name }))
}

fn parse_version(text: &str) -> Result<u64, ApiError> {
    text.parse()
        .map_err(|_| ApiError::BadRequest(format!("resourceVersion: Invalid value: \"{text}\": must be a number")))
}

/// Where a list reads: at which revision, whether `limit` applies, and after which key.
struct Read {
    revision: u64,
    paginate: bool,
    after: Option<ObjectKey>,
}

fn plan(state: &State, options: &ListOptions) -> Result<Read, ApiError> {
    let current = state.revision();
    let requested = options.resource_version.as_deref().filter(|v| !v.is_empty());
    let not_newer = |revision: u64| {
        if revision > current {
            Err(ApiError::TooLargeResourceVersion { requested: revision, current })
        } else {
            Ok(revision)
        }
    };
    if let Some(token) = options.continue_token.as_deref().filter(|t| !t.is_empty()) {
        if requested.is_some() {
            return Err(ApiError::BadRequest("specifying resource version is not allowed when using continue".into()));
        }
        let (revision, after) =
            decode_token(token).ok_or_else(|| ApiError::BadRequest("continue key is not valid".into()))?;
        return Ok(Read { revision, paginate: true, after: Some(after) });
    }
    let read = |revision, paginate| Ok(Read { revision, paginate, after: None });
    match (options.version_match.as_deref().filter(|m| !m.is_empty()), requested) {
        (Some(_), None) => {
            Err(ApiError::BadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided".into()))
        }
        (Some("Exact"), Some("0")) => {
            Err(ApiError::BadRequest("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"".into()))
        }
        (Some("Exact"), Some(version)) => read(not_newer(parse_version(version)?)?, true),
        (Some("NotOlderThan"), Some(version)) => {
            not_newer(parse_version(version)?)?;
            read(current, false)
        }
        (Some(other), _) => Err(ApiError::BadRequest(format!("resourceVersionMatch: Unsupported value: \"{other}\""))),
        (None, None) => read(current, true),
        (None, Some("0")) => read(current, false),
        (None, Some(version)) => {
            let revision = not_newer(parse_version(version)?)?;
            if options.limit.is_some_and(|l| l > 0) { read(revision, true) } else { read(current, false) }
        }
    }
}

/// Lists the objects of `resource` that `options` select.
///
/// Pages of a paginated list are all read at the revision of the first page, rebuilt from the write
/// history, so they are consistent as etcd makes them. Reads the real server answers from its watch
/// cache (resourceVersion `0`, `NotOlderThan`, or a resourceVersion without a limit) return every
/// item at the current revision and ignore `limit`.
///
/// # Errors
///
/// 400 for contradictory options, 410 Expired when the continue token or resourceVersion is older than
/// the compaction point, and 504 for a resourceVersion the server has not reached.
pub(crate) fn list(state: &State, resource: &ResourceType, options: &ListOptions) -> Result<Page, ApiError> {
    let read = plan(state, options)?;
    let objects = state.objects_at(resource, read.revision).map_err(|error| match (&read.after, error) {
        (Some(_), ApiError::Expired(_)) => ApiError::Expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new \
             list without the continue parameter."
                .into(),
        ),
        (_, error) => error,
    })?;
    let namespace = options.namespace.as_deref();
    let lower = match (&read.after, namespace) {
        (Some(after), _) => Bound::Excluded(after.clone()),
        (None, Some(namespace)) => Bound::Included(ObjectKey { namespace: namespace.into(), name: String::new() }),
        (None, None) => Bound::Unbounded,
    };
    let mut matching = objects
        .range((lower, Bound::Unbounded))
        .take_while(|(key, _)| namespace.is_none_or(|n| key.namespace == n))
        .map(|(key, object)| (key, conversion::to_client(resource, object)))
        .filter(|(_, object)| options.matches(object));
    let limit = options.limit.filter(|l| *l > 0 && read.paginate).unwrap_or(usize::MAX);
    let mut items = Vec::new();
    let mut last = None;
    for (key, object) in matching.by_ref() {
        items.push(object);
        last = Some(key);
        if items.len() == limit {
            break;
        }
    }
    let (continue_token, remaining) = match last.filter(|_| items.len() == limit) {
        Some(last) => {
            let token = encode_token(read.revision, last);
            if options.selects_everything() {
                let remaining = matching.count();
                (if remaining > 0 { Some(token) } else { None }, Some(remaining).filter(|r| *r > 0))
            } else {
                (matching.next().map(|_| token), None)
            }
        }
        None => (None, None),
    };
    Ok(Page { items, revision: read.revision, continue_token, remaining })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;
    use crate::store::Store;
    use serde_json::json;

    fn store_with_nodes(count: usize) -> Store {
        let store = Store::new(1000);
        let nodes = by_name("nodes").unwrap();
        store.write(|state| {
            for i in 0..count {
                let key = ObjectKey { namespace: String::new(), name: format!("node-{i:02}") };
                state.put(nodes, key, json!({"metadata": {"name": format!("node-{i:02}")}}));
            }
        });
        store
    }

    #[test]
    fn tokens_round_trip() {
        let key = ObjectKey { namespace: "default".into(), name: "web".into() };
        assert_eq!(decode_token(&encode_token(7, &key)), Some((7, key)));
        assert_eq!(decode_token("zz"), None);
    }

    #[test]
    fn pages_stay_at_the_first_revision() {
        let store = store_with_nodes(5);
        let nodes = by_name("nodes").unwrap();
        let mut options = ListOptions { limit: Some(2), ..Default::default() };
        let first = store.read(|s| list(s, nodes, &options)).unwrap();
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.remaining, Some(3));
        store.write(|state| {
            let key = ObjectKey { namespace: String::new(), name: "node-99".into() };
            state.put(nodes, key, json!({"metadata": {"name": "node-99"}}));
        });
        let mut names = Vec::new();
        options.continue_token = first.continue_token.clone();
        while options.continue_token.is_some() {
            let page = store.read(|s| list(s, nodes, &options)).unwrap();
            assert_eq!(page.revision, first.revision);
            names.extend(page.items.iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()));
            options.continue_token = page.continue_token;
        }
        assert_eq!(names, vec!["node-02", "node-03", "node-04"]);
    }

    #[test]
    fn resource_version_rules() {
        let store = store_with_nodes(3);
        let nodes = by_name("nodes").unwrap();
        let any = ListOptions { limit: Some(1), resource_version: Some("0".into()), ..Default::default() };
        assert_eq!(store.read(|s| list(s, nodes, &any)).unwrap().items.len(), 3);
        let exact = ListOptions {
            resource_version: Some("1".into()),
            version_match: Some("Exact".into()),
            ..Default::default()
        };
        assert_eq!(store.read(|s| list(s, nodes, &exact)).unwrap().items.len(), 1);
        let future = ListOptions { resource_version: Some("99".into()), ..Default::default() };
        assert_eq!(store.read(|s| list(s, nodes, &future)).unwrap_err().code(), 504);
        let stray = ListOptions { version_match: Some("Exact".into()), ..Default::default() };
        assert_eq!(store.read(|s| list(s, nodes, &stray)).unwrap_err().code(), 400);
        store.expire();
        assert_eq!(store.read(|s| list(s, nodes, &exact)).unwrap_err().code(), 410);
    }
}
