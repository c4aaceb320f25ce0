//! Label and field selectors as `labelSelector` and `fieldSelector` query parameters spell them.

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::meta;
use crate::resources::{FieldLabel, ResourceType};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Operator {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// Splits `text` at commas that are not inside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (index, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms.into_iter().map(str::trim).filter(|t| !t.is_empty()).collect()
}

fn parse_set(key: &str, rest: &str, term: &str) -> Result<Vec<String>, ApiError> {
    let inner =
        rest.trim().strip_prefix('(').and_then(|r| r.strip_suffix(')')).ok_or_else(|| {
            ApiError::BadRequest(format!("unable to parse requirement: found '{term}', expected: '('"))
        })?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    if values.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "unable to parse requirement: {key}: for 'in', 'notin' operators, values set can't be empty"
        )));
    }
    Ok(values)
}

fn parse_requirement(term: &str) -> Result<Requirement, ApiError> {
    let requirement =
        |key: &str, operator, values: Vec<String>| Requirement { key: key.trim().to_string(), operator, values };
    if let Some(key) = term.strip_prefix('!') {
        return Ok(requirement(key, Operator::DoesNotExist, Vec::new()));
    }
    for (token, operator) in [("!=", Operator::NotEquals), ("==", Operator::Equals), ("=", Operator::Equals)] {
        if let Some((key, value)) = term.split_once(token) {
            return Ok(requirement(key, operator, vec![value.trim().to_string()]));
        }
    }
    let mut words = term.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim_start();
    if let Some(set) = rest.strip_prefix("notin") {
        return Ok(requirement(key, Operator::NotIn, parse_set(key, set, term)?));
    }
    if let Some(set) = rest.strip_prefix("in") {
        return Ok(requirement(key, Operator::In, parse_set(key, set, term)?));
    }
    if rest.is_empty() && !key.is_empty() {
        return Ok(requirement(key, Operator::Exists, Vec::new()));
    }
    Err(ApiError::BadRequest(format!("unable to parse requirement: found '{rest}', expected: in, notin, =, ==, !=")))
}

impl LabelSelector {
    /// Parses a selector such as `app=web,tier!=db,env in (a,b),!legacy`.
    ///
    /// # Errors
    ///
    /// 400 BadRequest for a term that is not a requirement.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let requirements = split_terms(text).into_iter().map(parse_requirement).collect::<Result<_, _>>()?;
        Ok(Self { requirements })
    }

    /// Whether the selector has no requirements and so matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `object`'s labels satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let empty = Map::new();
        let labels = meta::labels(object).unwrap_or(&empty);
        self.requirements.iter().all(|r| {
            let value = labels.get(&r.key).and_then(Value::as_str);
            match r.operator {
                Operator::Equals | Operator::In => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
            }
        })
    }
}

/// A parsed field selector over the field labels a resource supports.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldSelector {
    terms: Vec<(FieldLabel, bool, String)>,
}

impl FieldSelector {
    /// Parses a selector such as `metadata.name=web,spec.type!=ClusterIP` for `resource`.
    ///
    /// # Errors
    ///
    /// 400 BadRequest for a malformed term or a field label the resource does not support.
    pub fn parse(text: &str, resource: &ResourceType) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for term in split_terms(text) {
            let (label, equals, value) = if let Some((label, value)) = term.split_once("!=") {
                (label, false, value)
            } else if let Some((label, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (label, true, value)
            } else {
                return Err(ApiError::BadRequest(format!("invalid selector: '{text}'; can't understand '{term}'")));
            };
            let field = resource
                .field_label(label.trim())
                .ok_or_else(|| ApiError::BadRequest(format!("field label not supported: {}", label.trim())))?;
            terms.push((field, equals, value.trim().to_string()));
        }
        Ok(Self { terms })
    }

    /// Whether the selector has no terms and so matches everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `object`, in the form clients see it, satisfies every term.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, equals, expected)| {
            let actual = match meta::lookup(object, field.path) {
                None | Some(Value::Null) => field.absent.to_string(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            (actual == *expected) == *equals
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;
    use serde_json::json;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "labels": labels}})
    }

    #[test]
    fn label_selectors_cover_equality_and_sets() {
        let object = labelled(json!({"app": "web", "env": "prod"}));
        let matches = |s: &str| LabelSelector::parse(s).unwrap().matches(&object);
        assert!(matches(""));
        assert!(matches("app=web"));
        assert!(matches("app==web,env=prod"));
        assert!(!matches("app!=web"));
        assert!(matches("app"));
        assert!(!matches("!app"));
        assert!(matches("!tier"));
        assert!(matches("env in (dev, prod)"));
        assert!(!matches("env notin (dev,prod)"));
        assert!(matches("tier notin (db)"));
        assert!(!matches("tier in (db)"));
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        assert_eq!(LabelSelector::parse("env in dev").unwrap_err().code(), 400);
        assert_eq!(LabelSelector::parse("env in ()").unwrap_err().code(), 400);
    }

    #[test]
    fn field_selectors_use_the_resource_labels() {
        let services = by_name("services").unwrap();
        let object = labelled(json!({}));
        let matches = |s: &str| FieldSelector::parse(s, services).unwrap().matches(&object);
        assert!(matches("metadata.name=web"));
        assert!(matches("metadata.namespace=default,metadata.name!=db"));
        assert!(!matches("metadata.name=db"));
        assert_eq!(FieldSelector::parse("spec.nodeName=a", services).unwrap_err().code(), 400);

        let nodes = by_name("nodes").unwrap();
        let node = json!({"metadata": {"name": "n"}, "spec": {}});
        assert!(FieldSelector::parse("spec.unschedulable=false", nodes).unwrap().matches(&node));
    }
}
