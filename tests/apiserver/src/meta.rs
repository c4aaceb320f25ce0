//! Reading and writing `metadata` of objects held as JSON, and checking names.

use serde_json::{Map, Value};

use crate::resources::NameRule;

/// The `metadata` map of `object`, if it has one.
pub(crate) fn metadata(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata")?.as_object()
}

/// The `metadata` map of `object`, created when missing or not a map.
pub(crate) fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    let map = object.as_object_mut().expect("objects are JSON maps");
    let entry = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("metadata was just made a map")
}

/// The string `metadata.<field>` of `object`, empty when absent.
pub(crate) fn string<'a>(object: &'a Value, field: &str) -> &'a str {
    metadata(object).and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or_default()
}

/// Sets `metadata.<field>` of `object`, or removes it when `value` is `None`.
pub(crate) fn set(object: &mut Value, field: &str, value: Option<Value>) {
    let metadata = metadata_mut(object);
    match value {
        Some(value) => {
            metadata.insert(field.to_string(), value);
        }
        None => {
            metadata.remove(field);
        }
    }
}

/// Copies `metadata.<field>` from `from` into `to`, removing it from `to` when `from` lacks it.
pub(crate) fn copy(from: &Value, to: &mut Value, field: &str) {
    set(to, field, metadata(from).and_then(|m| m.get(field)).cloned());
}

/// The `metadata.finalizers` of `object`.
pub(crate) fn finalizers(object: &Value) -> Vec<&str> {
    metadata(object)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `object` carries a `metadata.deletionTimestamp`.
pub(crate) fn is_deleting(object: &Value) -> bool {
    metadata(object).and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null())
}

/// The `metadata.labels` of `object`.
pub(crate) fn labels(object: &Value) -> Option<&Map<String, Value>> {
    metadata(object)?.get("labels")?.as_object()
}

/// The current time as Kubernetes renders `metav1.Time`: RFC 3339 in UTC, whole seconds.
pub(crate) fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The value at the dotted `path` of `object`.
pub(crate) fn lookup<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(object, |value, segment| value.get(segment))
}

/// Why `name` breaks `rule`, if it does.
pub(crate) fn check_name(name: &str, rule: NameRule) -> Option<String> {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let label = |part: &str| {
        !part.is_empty()
            && part.len() <= 63
            && part.chars().all(|c| alnum(c) || c == '-')
            && part.starts_with(alnum)
            && part.ends_with(alnum)
    };
    match rule {
        NameRule::Subdomain => (name.len() > 253 || !name.split('.').all(label)).then(|| {
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
             and must start and end with an alphanumeric character"
                .to_string()
        }),
        NameRule::Label => (!label(name)).then(|| {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must \
             start and end with an alphanumeric character"
                .to_string()
        }),
        NameRule::Rfc1035Label => (!label(name) || !name.starts_with(|c: char| c.is_ascii_lowercase())).then(|| {
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an \
             alphabetic character, and end with an alphanumeric character"
                .to_string()
        }),
        NameRule::PathSegment => (name == "." || name == ".." || name.contains(['/', '%']))
            .then(|| "may not be '.' or '..' and may not contain '/' or '%'".to_string()),
    }
}

/// A name from `prefix` and five random characters, as `metadata.generateName` asks.
pub(crate) fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let random = uuid::Uuid::new_v4();
    let suffix: String =
        random.as_bytes().iter().take(5).map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char).collect();
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_their_rules() {
        assert_eq!(check_name("web-1.example", NameRule::Subdomain), None);
        assert!(check_name("Web", NameRule::Subdomain).is_some());
        assert!(check_name("a.b", NameRule::Label).is_some());
        assert!(check_name("1web", NameRule::Rfc1035Label).is_some());
        assert_eq!(check_name("web", NameRule::Rfc1035Label), None);
        assert_eq!(check_name("system:controller:node", NameRule::PathSegment), None);
        assert!(check_name("a/b", NameRule::PathSegment).is_some());
    }

    #[test]
    fn timestamps_have_whole_seconds() {
        let now = now();
        assert_eq!(now.len(), "2025-01-01T00:00:00Z".len());
        assert!(now.parse::<jiff::Timestamp>().is_ok());
    }

    #[test]
    fn finalizers_and_lookup_read_the_object() {
        let object = json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"type": "LoadBalancer"}});
        assert_eq!(finalizers(&object), vec!["a", "b"]);
        assert_eq!(lookup(&object, "spec.type"), Some(&json!("LoadBalancer")));
        assert!(!is_deleting(&object));
    }

    #[test]
    fn generated_names_keep_the_prefix() {
        let name = generate_name("web-");
        assert!(name.starts_with("web-"));
        assert_eq!(name.len(), 9);
    }
}
