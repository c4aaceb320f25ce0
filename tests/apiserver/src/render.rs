//! Encoding objects and lists in the representation the client accepts: JSON, Table or metadata only.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::{Value, json};

use crate::list::Page;
use crate::resources::ResourceType;
use crate::table;

/// The representation a request asks for in its `Accept` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// The objects themselves.
    Json,
    /// A `meta.k8s.io/v1` Table, as `kubectl get` asks.
    Table,
    /// `PartialObjectMetadata`, as metadata-only watchers ask.
    Metadata,
}

impl Format {
    /// The format `accept` asks for; protobuf and anything unknown get JSON.
    pub fn from_accept(accept: Option<&str>) -> Self {
        let accept = accept.unwrap_or_default();
        if accept.contains("as=Table") {
            Self::Table
        } else if accept.contains("as=PartialObjectMetadata") {
            Self::Metadata
        } else {
            Self::Json
        }
    }
}

fn partial(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// One object of `resource` in `format`.
pub(crate) fn object(resource: &ResourceType, format: Format, object: &Arc<Value>) -> Bytes {
    let encoded = match format {
        Format::Json => serde_json::to_vec(&**object),
        Format::Table => serde_json::to_vec(&table::table(resource, std::slice::from_ref(object), json!({}))),
        Format::Metadata => serde_json::to_vec(&partial(object)),
    };
    Bytes::from(encoded.unwrap_or_default())
}

/// A page of a list of `resource` in `format`.
pub(crate) fn list(resource: &ResourceType, format: Format, page: &Page) -> Bytes {
    let mut metadata = json!({ "resourceVersion": page.revision.to_string() });
    if let Some(token) = &page.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = page.remaining {
        metadata["remainingItemCount"] = json!(remaining);
    }
    let (kind, api_version) = match format {
        Format::Table => {
            return Bytes::from(serde_json::to_vec(&table::table(resource, &page.items, metadata)).unwrap_or_default());
        }
        Format::Metadata => ("PartialObjectMetadataList".to_string(), "meta.k8s.io/v1".to_string()),
        Format::Json => (resource.list_kind(), resource.api_version()),
    };
    let mut out = serde_json::to_vec(&json!({ "kind": kind, "apiVersion": api_version, "metadata": metadata }))
        .unwrap_or_default();
    // The items are written straight from the shared objects: reopen the header map to append them.
    out.pop();
    out.extend_from_slice(b",\"items\":[");
    for (index, item) in page.items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let written = match format {
            Format::Metadata => serde_json::to_writer(&mut out, &partial(item)),
            _ => serde_json::to_writer(&mut out, &**item),
        };
        written.expect("serializing a JSON value into memory cannot fail");
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;

    #[test]
    fn lists_are_valid_json_with_their_kind() {
        let services = by_name("services").unwrap();
        let page = Page {
            items: vec![Arc::new(json!({"metadata": {"name": "a"}})), Arc::new(json!({"metadata": {"name": "b"}}))],
            revision: 12,
            continue_token: Some("abc".into()),
            remaining: Some(3),
        };
        let list: Value = serde_json::from_slice(&list(services, Format::Json, &page)).unwrap();
        assert_eq!(list["kind"], "ServiceList");
        assert_eq!(list["metadata"]["resourceVersion"], "12");
        assert_eq!(list["metadata"]["continue"], "abc");
        assert_eq!(list["items"][1]["metadata"]["name"], "b");

        let metadata: Value = serde_json::from_slice(&super::list(services, Format::Metadata, &page)).unwrap();
        assert_eq!(metadata["kind"], "PartialObjectMetadataList");
        assert_eq!(metadata["items"][0]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn accept_headers_choose_the_format() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(Format::from_accept(Some(kubectl)), Format::Table);
        assert_eq!(Format::from_accept(Some("application/vnd.kubernetes.protobuf,application/json")), Format::Json);
        assert_eq!(
            Format::from_accept(Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")),
            Format::Metadata
        );
    }
}
