//! The HTTP entry point: counting, injected faults, and dispatch of each verb to the store.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::conversion;
use crate::create::create;
use crate::delete::{Preconditions, delete};
use crate::discovery;
use crate::error::ApiError;
use crate::faults::Faults;
use crate::history::ObjectKey;
use crate::list::{ListOptions, Page, list};
use crate::meta;
use crate::patch::PatchType;
use crate::render::{self, Format};
use crate::requests::{RequestAttributes, RequestCounter};
use crate::review::Tokens;
use crate::route::{self, ResourcePath, Route};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::Store;
use crate::update::{Part, patch, update};
use crate::watch::{WatchRequest, watch};

/// The state every request handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Arc<Store>,
    pub faults: Faults,
    pub requests: RequestCounter,
    pub bookmark_interval: Duration,
    pub address: SocketAddr,
    pub tokens: Tokens,
}

type Params = HashMap<String, String>;

/// What a request does, as request counts and the real server's audit log name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }
}

/// Answers any request, as the fallback of the router.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let route = route::parse(&path);
    let verb = verb(&parts.method, &route, parts.uri.query().unwrap_or_default());
    let counted = match &route {
        Route::Resource(target) if target.status => format!("{}/status", target.resource.key),
        Route::Resource(target) => target.resource.key.to_string(),
        Route::Review(review) => format!("{}.{}", review.resource().1, review.resource().0),
        _ => path.clone(),
    };
    let verb_name = verb.as_ref().map_or("unknown", |v| v.name());
    let user = parts.headers.get("impersonate-user").and_then(|user| user.to_str().ok()).map(str::to_string);
    let attributes = match &route {
        Route::Resource(target) => RequestAttributes::Resource {
            user,
            verb: verb_name.to_string(),
            group: target.resource.group.to_string(),
            resource: target.resource.plural.to_string(),
            subresource: target.status.then(|| "status".to_string()),
            namespace: target.namespace.clone(),
        },
        Route::Review(review) => RequestAttributes::Resource {
            user,
            verb: verb_name.to_string(),
            group: review.resource().0.to_string(),
            resource: review.resource().1.to_string(),
            subresource: None,
            namespace: None,
        },
        _ => RequestAttributes::NonResource { user, verb: verb_name.to_string(), path: path.clone() },
    };
    shared.requests.record(verb_name, counted, attributes);
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(failure) = shared.faults.take_failure() {
        return error(&failure);
    }
    let result = async {
        let verb = verb?;
        let params = Query::<Params>::try_from_uri(&parts.uri)
            .map_err(|e| ApiError::BadRequest(format!("invalid query: {e}")))?
            .0;
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .map_err(|e| ApiError::BadRequest(format!("failed to read the request body: {e}")))?;
        match route {
            Route::Health => Ok(Response::new(Body::from("ok"))),
            Route::Discovery => discovery::document(&path, shared.address)
                .map(|document| json(StatusCode::OK, serde_json::to_vec(&document).unwrap_or_default().into()))
                .ok_or(ApiError::NoRoute),
            Route::Unknown => Err(ApiError::NoRoute),
            Route::Review(review) => review
                .answer(&shared.tokens, &shared.store, &body)
                .map(|answer| json(StatusCode::CREATED, serde_json::to_vec(&answer).unwrap_or_default().into())),
            Route::Resource(target) => serve(&shared, verb, target, &params, &parts.headers, body),
        }
    }
    .await;
    let response = result.unwrap_or_else(|failure| error(&failure));
    tracing::debug!(method = %parts.method, path, status = response.status().as_u16(), "answered");
    response
}

/// The verb of a request to `route`.
fn verb(method: &Method, route: &Route, query: &str) -> Result<Verb, ApiError> {
    if let Route::Review(_) = route {
        return if method == Method::POST { Ok(Verb::Create) } else { Err(ApiError::MethodNotAllowed) };
    }
    let Route::Resource(target) = route else {
        return if method == Method::GET { Ok(Verb::Get) } else { Err(ApiError::MethodNotAllowed) };
    };
    let watching = target.watch || query.split('&').any(|pair| pair == "watch=true" || pair == "watch=1");
    let named = target.name.is_some();
    match (method.as_str(), named) {
        ("GET", _) if watching => Ok(Verb::Watch),
        ("GET", true) => Ok(Verb::Get),
        ("GET", false) => Ok(Verb::List),
        ("POST", false) if target.namespace.is_some() || !target.resource.namespaced => Ok(Verb::Create),
        ("PUT", true) => Ok(Verb::Update),
        ("PATCH", true) => Ok(Verb::Patch),
        ("DELETE", true) if target.resource.plural != "namespaces" && !target.status => Ok(Verb::Delete),
        ("DELETE", false) if target.namespace.is_some() || !target.resource.namespaced => Ok(Verb::DeleteCollection),
        _ => Err(ApiError::MethodNotAllowed),
    }
}

fn serve(
    shared: &Shared,
    verb: Verb,
    target: ResourcePath,
    params: &Params,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let resource = target.resource;
    let format = Format::from_accept(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let namespace = target.namespace.clone().unwrap_or_default();
    let key = || ObjectKey { namespace: namespace.clone(), name: target.name.clone().unwrap_or_default() };
    let part = if target.status { Part::Status } else { Part::Main };
    let dry_run = dry_run(params.get("dryRun"))?;
    let store = &shared.store;
    let object = |status: StatusCode, object: Arc<Value>| json(status, render::object(resource, format, &object));
    match verb {
        Verb::Get => {
            let found = store.read(|state| state.get(resource, &key()).cloned());
            let found = found.ok_or_else(|| ApiError::not_found(resource, &key().name))?;
            Ok(object(StatusCode::OK, conversion::to_client(resource, &found)))
        }
        Verb::List => {
            let options = list_options(&target, params)?;
            let page = store.read(|state| list(state, resource, &options))?;
            Ok(json(StatusCode::OK, render::list(resource, format, &page)))
        }
        Verb::Watch => {
            let request = WatchRequest {
                resource,
                options: list_options(&target, params)?,
                bookmarks: flag(params, "allowWatchBookmarks"),
                timeout: params.get("timeoutSeconds").and_then(|t| t.parse().ok()).map(Duration::from_secs),
                send_initial_events: params.get("sendInitialEvents").map(|v| v == "true" || v == "1"),
                format,
            };
            let body = watch(store.clone(), shared.bookmark_interval, request)?;
            Ok(response(StatusCode::OK, body))
        }
        Verb::Create => {
            let body = parse_object(&body)?;
            let created = store.write(|state| create(state, resource, &namespace, body, dry_run))?;
            Ok(object(StatusCode::CREATED, created))
        }
        Verb::Update => {
            let body = parse_object(&body)?;
            Ok(object(StatusCode::OK, store.write(|state| update(state, resource, &key(), part, body, dry_run))?))
        }
        Verb::Patch => {
            let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
            let patch_type = PatchType::from_content_type(content_type)?;
            let patched = store.write(|state| patch(state, resource, &key(), part, patch_type, &body, dry_run))?;
            Ok(object(StatusCode::OK, patched))
        }
        Verb::Delete => {
            let (preconditions, options_dry_run) = delete_options(params, &body)?;
            let deleted =
                store.write(|state| delete(state, resource, &key(), &preconditions, dry_run || options_dry_run))?;
            Ok(object(StatusCode::OK, deleted))
        }
        Verb::DeleteCollection => {
            let (preconditions, options_dry_run) = delete_options(params, &body)?;
            let options = ListOptions { limit: None, continue_token: None, ..list_options(&target, params)? };
            let page = store.write(|state| {
                let page = list(state, resource, &options)?;
                let mut deleted = Vec::new();
                for item in &page.items {
                    let key = ObjectKey {
                        namespace: meta::string(item, "namespace").to_string(),
                        name: meta::string(item, "name").to_string(),
                    };
                    deleted.push(delete(state, resource, &key, &preconditions, dry_run || options_dry_run)?);
                }
                Ok::<_, ApiError>(Page { items: deleted, revision: state.revision(), ..page })
            })?;
            Ok(json(StatusCode::OK, render::list(resource, format, &page)))
        }
    }
}

fn flag(params: &Params, name: &str) -> bool {
    params.get(name).is_some_and(|v| v == "true" || v == "1")
}

fn dry_run(value: Option<&String>) -> Result<bool, ApiError> {
    match value.map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => {
            Err(ApiError::BadRequest(format!("dryRun: Unsupported value: \"{other}\": supported values: \"All\"")))
        }
    }
}

fn list_options(target: &ResourcePath, params: &Params) -> Result<ListOptions, ApiError> {
    let text = |name: &str| params.get(name).cloned().filter(|v| !v.is_empty());
    let limit = match params.get("limit").filter(|v| !v.is_empty()) {
        Some(limit) => Some(limit.parse().map_err(|_| ApiError::BadRequest(format!("invalid limit: {limit}")))?),
        None => None,
    };
    let mut fields = params.get("fieldSelector").cloned().unwrap_or_default();
    if let Some(name) = &target.name {
        fields =
            if fields.is_empty() { format!("metadata.name={name}") } else { format!("{fields},metadata.name={name}") };
    }
    Ok(ListOptions {
        namespace: target.namespace.clone(),
        labels: LabelSelector::parse(params.get("labelSelector").map_or("", String::as_str))?,
        fields: FieldSelector::parse(&fields, target.resource)?,
        limit,
        continue_token: text("continue"),
        resource_version: text("resourceVersion"),
        version_match: text("resourceVersionMatch"),
    })
}

fn delete_options(params: &Params, body: &[u8]) -> Result<(Preconditions, bool), ApiError> {
    let mut preconditions = Preconditions {
        uid: params.get("preconditions.uid").cloned(),
        resource_version: params.get("preconditions.resourceVersion").cloned(),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((preconditions, false));
    }
    let options: Value =
        serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(format!("invalid DeleteOptions: {e}")))?;
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    if let Some(given) = options.get("preconditions") {
        preconditions.uid = text(given.get("uid")).or(preconditions.uid);
        preconditions.resource_version = text(given.get("resourceVersion")).or(preconditions.resource_version);
    }
    let dry_run = options.get("dryRun").and_then(Value::as_array).is_some_and(|modes| modes.iter().any(|m| m == "All"));
    Ok((preconditions, dry_run))
}

fn parse_object(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("the request body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::BadRequest("the request body must be a JSON object".into()));
    }
    Ok(value)
}

fn response(status: StatusCode, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

fn json(status: StatusCode, body: Bytes) -> Response {
    response(status, Body::from(body))
}

fn error(failure: &ApiError) -> Response {
    let status = StatusCode::from_u16(failure.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(status, serde_json::to_vec(&failure.status()).unwrap_or_default().into());
    if let Some(seconds) = failure.retry_after() {
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb_of(method: Method, path: &str, query: &str) -> Result<Verb, ApiError> {
        verb(&method, &route::parse(path), query)
    }

    #[test]
    fn verbs_follow_method_and_path() {
        assert_eq!(verb_of(Method::GET, "/api/v1/nodes", ""), Ok(Verb::List));
        assert_eq!(verb_of(Method::GET, "/api/v1/nodes", "watch=true&resourceVersion=3"), Ok(Verb::Watch));
        assert_eq!(verb_of(Method::GET, "/api/v1/watch/nodes", ""), Ok(Verb::Watch));
        assert_eq!(verb_of(Method::GET, "/api/v1/nodes/n1", ""), Ok(Verb::Get));
        assert_eq!(verb_of(Method::GET, "/api/v1/watch/nodes/n1", ""), Ok(Verb::Watch));
        assert_eq!(verb_of(Method::POST, "/api/v1/namespaces/default/services", ""), Ok(Verb::Create));
        assert_eq!(verb_of(Method::POST, "/api/v1/services", ""), Err(ApiError::MethodNotAllowed));
        assert_eq!(verb_of(Method::PATCH, "/api/v1/nodes/n1/status", ""), Ok(Verb::Patch));
        assert_eq!(verb_of(Method::DELETE, "/api/v1/namespaces/default", ""), Err(ApiError::MethodNotAllowed));
        assert_eq!(verb_of(Method::DELETE, "/api/v1/namespaces/default/pods", ""), Ok(Verb::DeleteCollection));
        assert_eq!(verb_of(Method::GET, "/version", ""), Ok(Verb::Get));
    }

    #[test]
    fn errors_carry_retry_after() {
        let failure = ApiError::Injected { code: 429, message: "slow down".into() };
        let response = error(&failure);
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }
}
