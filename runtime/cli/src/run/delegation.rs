//! Delegated authentication and authorization of the admin server, as
//! upstream's controller managers do: a request's bearer token is checked
//! with a `TokenReview`, and the user it names must be allowed `get` on the
//! request's path by a `SubjectAccessReview`; paths in
//! `--authorization-always-allow-paths` need neither. Decisions are cached
//! for a short time so that a scraper costs the API server one review of
//! each kind per interval.
//!
//! Nobody unauthenticated can make the process hold more: a token longer
//! than [`MAX_TOKEN_BYTES`] is refused before any review, the caches keep
//! a token's SHA-256 rather than the token, refusals of a token are not
//! kept, and each cache holds at most [`MAX_CACHED`] entries.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use sha2::{Digest as _, Sha256};
use wasm_ccm_kube::ClientSettings;

/// The most decisions each cache keeps; beyond, expired ones are dropped,
/// then all, so that clients sending fresh tokens cannot grow it.
const MAX_CACHED: usize = 4096;

/// The longest bearer token reviewed: service account tokens and OIDC ID
/// tokens are a few KiB at most.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// What a cache entry is found by: a SHA-256 digest.
type Digest = [u8; 32];

/// The SHA-256 digest of `parts`, each length-prefixed so that no two
/// lists of parts digest alike.
fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Digest {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// Upstream's delegated authentication and authorization flags.
#[derive(Debug, Clone, clap::Args)]
pub struct DelegationArgs {
    /// The kubeconfig of the API server that reviews tokens (TokenReview);
    /// without it, the cluster's own (`--kubeconfig` or in-cluster).
    #[arg(long, value_name = "FILE")]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// The kubeconfig of the API server that authorizes requests
    /// (SubjectAccessReview); without it, the cluster's own.
    #[arg(long, value_name = "FILE")]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// Paths served to anyone, without a token; a trailing `*` matches a
    /// prefix.
    #[arg(long, value_delimiter = ',', value_name = "PATHS", default_value = "/healthz,/readyz,/livez")]
    pub authorization_always_allow_paths: Vec<String>,
    /// How long a token review's answer is kept.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,
    /// How long an allowed request's decision is kept.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long a refused request's decision is kept.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
}

impl Default for DelegationArgs {
    fn default() -> Self {
        DelegationArgs {
            authentication_kubeconfig: None,
            authorization_kubeconfig: None,
            authorization_always_allow_paths: ["/healthz", "/readyz", "/livez"].map(str::to_owned).to_vec(),
            authentication_token_webhook_cache_ttl: Duration::from_secs(10),
            authorization_webhook_cache_authorized_ttl: Duration::from_secs(10),
            authorization_webhook_cache_unauthorized_ttl: Duration::from_secs(10),
        }
    }
}

/// A user a token review named.
#[derive(Debug, Clone)]
struct User {
    name: String,
    uid: Option<String>,
    groups: Vec<String>,
}

/// What the admin server does with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Serve it.
    Allowed,
    /// 401: no token, or one the review refused.
    Unauthenticated,
    /// 403, with upstream's message.
    Forbidden(String),
    /// 500: a review could not be asked.
    Failed(String),
}

/// Answers with expiry times, bounded in number.
struct Cache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: std::hash::Hash + Eq, V: Clone> Cache<K, V> {
    fn new() -> Self {
        Cache { entries: Mutex::new(HashMap::new()) }
    }

    fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.get(key).filter(|(expiry, _)| *expiry > Instant::now()).map(|(_, value)| value.clone())
    }

    fn put(&self, key: K, value: V, ttl: Duration) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= MAX_CACHED {
            let now = Instant::now();
            entries.retain(|_, (expiry, _)| *expiry > now);
            if entries.len() >= MAX_CACHED {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now() + ttl, value));
    }
}

/// Delegated authentication and authorization for the admin server.
pub struct Delegation {
    authentication: kube::Client,
    authorization: kube::Client,
    args: DelegationArgs,
    /// Users by their token's digest.
    tokens: Cache<Digest, User>,
    /// Decisions by the digest of the user and the path.
    decisions: Cache<Digest, bool>,
}

impl Delegation {
    /// Builds the review clients: from the flags' kubeconfigs, or else from
    /// the cluster the controllers use (`--kubeconfig` and `--master`,
    /// in-cluster without them).
    ///
    /// # Errors
    /// When a kubeconfig cannot be read or no cluster configuration is
    /// found.
    pub async fn new(args: &DelegationArgs, cluster: &ClientSettings) -> anyhow::Result<Delegation> {
        let authentication = match &args.authentication_kubeconfig {
            Some(path) => client(Some(path), None, "--authentication-kubeconfig").await?,
            None => client(cluster.kubeconfig.as_ref(), cluster.master.as_deref(), "--kubeconfig").await?,
        };
        let authorization = match &args.authorization_kubeconfig {
            Some(path) => client(Some(path), None, "--authorization-kubeconfig").await?,
            None => client(cluster.kubeconfig.as_ref(), cluster.master.as_deref(), "--kubeconfig").await?,
        };
        Ok(Delegation {
            authentication,
            authorization,
            args: args.clone(),
            tokens: Cache::new(),
            decisions: Cache::new(),
        })
    }

    /// Whether `path` is served without a token.
    fn always_allowed(&self, path: &str) -> bool {
        self.args.authorization_always_allow_paths.iter().any(|allowed| match allowed.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => allowed == path,
        })
    }

    /// Decides a `GET` of `path` with the `Authorization` header `authorization`.
    pub async fn decide(&self, authorization: Option<&str>, path: &str) -> Decision {
        if self.always_allowed(path) {
            return Decision::Allowed;
        }
        let token = authorization.and_then(|value| value.strip_prefix("Bearer ")).map(str::trim);
        let Some(token) = token.filter(|token| !token.is_empty()) else { return Decision::Unauthenticated };
        if token.len() > MAX_TOKEN_BYTES {
            tracing::debug!(
                bytes = token.len(),
                "refused an admin request's token longer than {MAX_TOKEN_BYTES} bytes"
            );
            return Decision::Unauthenticated;
        }
        let token_digest = digest([token.as_bytes()]);
        let user = match self.tokens.get(&token_digest) {
            Some(user) => user,
            None => match self.review_token(token).await {
                Ok(Some(user)) => {
                    let ttl = self.args.authentication_token_webhook_cache_ttl;
                    self.tokens.put(token_digest, user.clone(), ttl);
                    user
                }
                // Not kept: fresh tokens must not fill the cache.
                Ok(None) => return Decision::Unauthenticated,
                Err(err) => {
                    tracing::warn!("cannot review a token of an admin request: {err:#}");
                    return Decision::Unauthenticated;
                }
            },
        };
        let groups = user.groups.iter().map(String::as_bytes);
        let parts = [user.name.as_bytes(), user.uid.as_deref().unwrap_or_default().as_bytes(), path.as_bytes()];
        let key = digest(parts.into_iter().chain(groups));
        let allowed = match self.decisions.get(&key) {
            Some(allowed) => allowed,
            None => match self.review_access(&user, path).await {
                Ok(allowed) => {
                    let ttl = if allowed {
                        self.args.authorization_webhook_cache_authorized_ttl
                    } else {
                        self.args.authorization_webhook_cache_unauthorized_ttl
                    };
                    self.decisions.put(key, allowed, ttl);
                    allowed
                }
                Err(err) => return Decision::Failed(format!("cannot authorize the request: {err:#}")),
            },
        };
        if allowed {
            Decision::Allowed
        } else {
            Decision::Forbidden(format!("forbidden: User {:?} cannot get path {path:?}", user.name))
        }
    }

    /// The user `token` belongs to, or `None` when the review refuses it.
    async fn review_token(&self, token: &str) -> anyhow::Result<Option<User>> {
        let review = TokenReview {
            spec: TokenReviewSpec { token: token.to_owned(), ..TokenReviewSpec::default() },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.authentication.clone())
            .create(&PostParams::default(), &review)
            .await
            .context("TokenReview")?;
        let status = reviewed.status.unwrap_or_default();
        Ok(match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Some(User {
                name: user.username.unwrap_or_default(),
                uid: user.uid,
                groups: user.groups.unwrap_or_default(),
            }),
            _ => None,
        })
    }

    /// Whether `user` may `get` `path`.
    async fn review_access(&self, user: &User, path: &str) -> anyhow::Result<bool> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: user.uid.clone(),
                groups: Some(user.groups.clone()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some("get".to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let reviewed = Api::<SubjectAccessReview>::all(self.authorization.clone())
            .create(&PostParams::default(), &review)
            .await
            .context("SubjectAccessReview")?;
        Ok(reviewed.status.is_some_and(|status| status.allowed && !status.denied.unwrap_or(false)))
    }
}

/// A client for the cluster of the kubeconfig `path` (given as `flag`),
/// or the inferred one, at `master` when given.
async fn client(path: Option<&PathBuf>, master: Option<&str>, flag: &str) -> anyhow::Result<kube::Client> {
    let mut config = match path {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).with_context(|| format!("cannot read {flag} {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await.context("no cluster to delegate the admin server's checks to")?,
    };
    if let Some(master) = master {
        config.cluster_url = master.parse().with_context(|| format!("--master {master:?} is not a URL"))?;
    }
    Ok(wasm_ccm_kube::client::unlimited(config)?)
}

/// The admin server's middleware: serves a request only when
/// [`Delegation::decide`] allows it.
pub async fn guard(State(delegation): State<Arc<Delegation>>, request: Request, next: Next) -> Response {
    let authorization = request.headers().get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    match delegation.decide(authorization, request.uri().path()).await {
        Decision::Allowed => next.run(request).await,
        Decision::Unauthenticated => (StatusCode::UNAUTHORIZED, "Unauthorized").into_response(),
        Decision::Forbidden(message) => (StatusCode::FORBIDDEN, message).into_response(),
        Decision::Failed(message) => (StatusCode::INTERNAL_SERVER_ERROR, message).into_response(),
    }
}
