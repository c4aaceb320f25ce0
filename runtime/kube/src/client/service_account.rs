//! A controller's own identity, as upstream's
//! `--use-service-account-credentials` gives it: the ServiceAccount
//! `kube-system/<controller>`, created when missing, whose token the
//! controller manager requests through the TokenRequest API and renews
//! before it expires; every request of the controller's client carries it.

use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use http::HeaderValue;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio_util::sync::CancellationToken;
use tower::{Layer, Service};

/// Where the controllers' ServiceAccounts live, as upstream.
pub const NAMESPACE: &str = "kube-system";
/// How long a token is asked to last, as upstream's default.
const LIFETIME: Duration = Duration::from_secs(3600);
/// How long after a failed renewal it is tried again.
const RETRY: Duration = Duration::from_secs(10);

/// The current token of one ServiceAccount, shared by its client's
/// requests and the task that renews it.
#[derive(Clone)]
pub(super) struct Token {
    header: Arc<RwLock<HeaderValue>>,
}

impl Token {
    fn set(&self, token: &str) -> Result<(), kube::Error> {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|err| kube::Error::Service(format!("the token is not a valid header: {err}").into()))?;
        *self.header.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = value;
        Ok(())
    }

    fn header(&self) -> HeaderValue {
        self.header.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

/// Makes sure the ServiceAccount `name` exists, requests a token for it
/// with `root`, and renews it until `stop`; the token starts valid.
pub(super) async fn token(root: &Client, name: &str, stop: CancellationToken) -> Result<Token, kube::Error> {
    let accounts: Api<ServiceAccount> = Api::namespaced(root.clone(), NAMESPACE);
    if accounts.get_opt(name).await?.is_none() {
        let account = ServiceAccount {
            metadata: ObjectMeta { name: Some(name.to_owned()), ..Default::default() },
            ..Default::default()
        };
        match accounts.create(&PostParams::default(), &account).await {
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            created => {
                created?;
                tracing::info!(service_account = %format_args!("{NAMESPACE}/{name}"), "created the controller's ServiceAccount");
            }
        }
    }
    let token = Token { header: Arc::new(RwLock::new(HeaderValue::from_static(""))) };
    let lifetime = request(&accounts, name, &token).await?;
    let (renewing, name) = (token.clone(), name.to_owned());
    tokio::spawn(async move {
        let mut wait = lifetime.mul_f64(0.8);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            wait = match request(&accounts, &name, &renewing).await {
                Ok(lifetime) => lifetime.mul_f64(0.8),
                Err(err) => {
                    tracing::warn!(service_account = %name, "cannot renew the controller's token, retrying: {err}");
                    RETRY
                }
            };
        }
    });
    Ok(token)
}

/// Requests a new token into `token`; returns how long it lasts.
async fn request(accounts: &Api<ServiceAccount>, name: &str, token: &Token) -> Result<Duration, kube::Error> {
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(i64::try_from(LIFETIME.as_secs()).unwrap_or(i64::MAX)),
            ..Default::default()
        }),
        ..Default::default()
    };
    let granted = accounts.create_token_request(name, &PostParams::default(), &request).await?;
    let status = granted.status.ok_or_else(|| kube::Error::Service("the TokenRequest has no status".into()))?;
    let issued = status.token.ok_or_else(|| kube::Error::Service("the TokenRequest has no token".into()))?;
    token.set(&issued)?;
    // Without an expiry, the token is renewed as if it lasted the lifetime asked for.
    let lifetime = match status.expiration_timestamp {
        Some(expires) => k8s_openapi::jiff::Timestamp::now().duration_until(expires.0),
        None => k8s_openapi::jiff::SignedDuration::try_from(LIFETIME).unwrap_or_default(),
    };
    Ok(Duration::try_from(lifetime).unwrap_or(LIFETIME).max(RETRY))
}

/// Sets every request's `Authorization` header to the current token.
#[derive(Clone)]
pub(super) struct BearerLayer(pub(super) Token);

impl<S> Layer<S> for BearerLayer {
    type Service = Bearer<S>;

    fn layer(&self, inner: S) -> Bearer<S> {
        Bearer { inner, token: self.0.clone() }
    }
}

/// A service whose requests carry a [`Token`].
#[derive(Clone)]
pub(super) struct Bearer<S> {
    inner: S,
    token: Token,
}

impl<S: Service<http::Request<B>>, B> Service<http::Request<B>> for Bearer<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> S::Future {
        let mut header = self.token.header();
        header.set_sensitive(true);
        request.headers_mut().insert(http::header::AUTHORIZATION, header);
        self.inner.call(request)
    }
}
