//! Reading from a registry: its own HTTP client, so that every answer is
//! read with a cap and every token realm, redirect and resolved address is
//! checked against [`Egress`].
//!
//! Pushes go through `oci-client`; pulls, which a hostile registry answers,
//! go through a [`Session`]: the client library reads manifests, token
//! answers and error bodies whole and follows redirects anywhere.

use std::error::Error as _;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::{ACCEPT, AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderValue, Method, StatusCode};
use oci_client::errors::{OciDistributionError, OciEnvelope};
use reqwest::Url;
use tracing::debug;

use crate::bounded::{self, BodyError, MAX_TOKEN};
use crate::egress::{Egress, GuardedResolver, Refusal};
use crate::{Auth, DistributionError, Reference, RegistryOptions, options};

/// How much of a registry's error answer its error message quotes.
const MAX_MESSAGE: usize = 1024;
/// How much of a token realm's error answer its error message quotes: the
/// realm is a URL the registry chose, so less of what it answers reaches
/// logs and events.
const MAX_REALM_MESSAGE: usize = 256;

/// A connection to one registry's repository, authorised for pulls.
pub(crate) struct Session {
    client: reqwest::Client,
    egress: Arc<Egress>,
    /// `scheme://registry/`.
    base: Url,
    repository: String,
    auth: Auth,
    /// The `Authorization` header requests carry, once a challenge set it.
    authorization: Mutex<Option<HeaderValue>>,
}

impl Session {
    /// Opens a session with `reference`'s registry: asks `/v2/` which
    /// authentication it wants and gets a token when it names a realm.
    ///
    /// # Errors
    /// When the registry cannot be reached, refuses the credentials, or
    /// names a token realm the rules refuse.
    pub(crate) async fn open(reference: &Reference, options: &RegistryOptions) -> Result<Session, DistributionError> {
        let registry = reference.to_oci().resolve_registry().to_owned();
        let scheme =
            if options.plain_http || options.plain_http_registries.contains(&registry) { "http" } else { "https" };
        let base = Url::parse(&format!("{scheme}://{registry}/")).map_err(|err| {
            DistributionError::InvalidReference { reference: reference.to_string(), reason: err.to_string() }
        })?;
        let egress = Arc::new(Egress::for_registry(base.host_str().unwrap_or_default()).await);
        options::install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.timeout)
            .read_timeout(options.timeout)
            .redirect(egress.redirects())
            .dns_resolver(Arc::new(GuardedResolver(Arc::clone(&egress))));
        for der in options.extra_roots()? {
            let certificate = reqwest::Certificate::from_der(&der)
                .map_err(|err| DistributionError::Client(format!("the extra CA is not usable: {err}")))?;
            builder = builder.tls_certs_merge([certificate]);
        }
        let client = builder.build().map_err(|err| DistributionError::Client(err.to_string()))?;
        let session = Session {
            client,
            egress,
            base,
            repository: reference.repository().to_owned(),
            auth: options.auth.clone(),
            authorization: Mutex::new(None),
        };
        let probe = session.url("v2/");
        let response = session.client.get(probe).send().await.map_err(|err| transport("reach", reference, err))?;
        if response.status() == StatusCode::UNAUTHORIZED {
            session.answer_challenge(&response, reference).await?;
        }
        drop(bounded::read_prefix(response).await);
        Ok(session)
    }

    /// The URL of a manifest (by tag or digest) of the repository.
    pub(crate) fn manifest_url(&self, tag_or_digest: &str) -> Url {
        self.url(&format!("v2/{}/manifests/{tag_or_digest}", self.repository))
    }

    /// The URL of the referrers API's index of `digest`'s referrers.
    pub(crate) fn referrers_url(&self, digest: &str) -> Url {
        self.url(&format!("v2/{}/referrers/{digest}", self.repository))
    }

    /// The URL of a blob of the repository.
    pub(crate) fn blob_url(&self, digest: &str) -> Url {
        self.url(&format!("v2/{}/blobs/{digest}", self.repository))
    }

    #[expect(clippy::expect_used, reason = "a path of a parsed reference joins its registry's base URL")]
    fn url(&self, path: &str) -> Url {
        self.base.join(path).expect("repository paths are checked when references are parsed")
    }

    /// Sends a request for `reference` and returns a successful answer; an
    /// unsuccessful one is read (its first 64 KiB) into the error. A `401`
    /// with a challenge is answered once.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: Url,
        accept: &str,
        action: &'static str,
        reference: &Reference,
    ) -> Result<reqwest::Response, DistributionError> {
        let mut retried = false;
        loop {
            let mut request = self.client.request(method.clone(), url.clone()).header(ACCEPT, accept);
            if let Some(authorization) = self.authorization.lock().unwrap_or_else(PoisonError::into_inner).clone() {
                request = request.header(AUTHORIZATION, authorization);
            }
            let response = request.send().await.map_err(|err| transport(action, reference, err))?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            if status == StatusCode::UNAUTHORIZED && !retried && self.answer_challenge(&response, reference).await? {
                retried = true;
                continue;
            }
            let body = bounded::read_prefix(response).await;
            return Err(DistributionError::registry(action, reference, status_error(status, &body, &url)));
        }
    }

    /// Sets the `Authorization` header a `401` answer asks for: basic with
    /// the credentials, or a token from the challenge's realm. Returns
    /// whether there is something new to try.
    async fn answer_challenge(
        &self,
        response: &reqwest::Response,
        reference: &Reference,
    ) -> Result<bool, DistributionError> {
        let Some(header) = response.headers().get(WWW_AUTHENTICATE).and_then(|value| value.to_str().ok()) else {
            return Ok(false);
        };
        let challenges: Vec<_> = http_auth::parser::ChallengeParser::new(header).filter_map(Result::ok).collect();
        let bearer = challenges.iter().find(|challenge| challenge.scheme.eq_ignore_ascii_case("bearer"));
        let param = |name: &str| {
            bearer?.params.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.to_unescaped())
        };
        let authorization = match (param("realm"), &self.auth) {
            (Some(realm), _) => self.token(&realm, param("service"), reference).await?,
            (None, Auth::Basic { username, password }) => {
                let basic = STANDARD.encode(format!("{username}:{password}"));
                HeaderValue::try_from(format!("Basic {basic}"))
                    .map_err(|err| DistributionError::Client(err.to_string()))?
            }
            (None, Auth::Anonymous) => return Ok(false),
        };
        let mut current = self.authorization.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = current.as_ref() != Some(&authorization);
        *current = Some(authorization);
        Ok(changed)
    }

    /// A pull token from `realm`, as the distribution token protocol asks:
    /// the realm is checked first, its answer read with a cap.
    async fn token(
        &self,
        realm: &str,
        service: Option<String>,
        reference: &Reference,
    ) -> Result<HeaderValue, DistributionError> {
        let refused =
            |reason: String| DistributionError::Refused { what: "the token realm", url: realm.to_owned(), reason };
        let mut url = Url::parse(realm).map_err(|err| refused(format!("it is not a URL: {err}")))?;
        match (url.scheme(), self.base.scheme()) {
            ("https", _) | ("http", "http") => {}
            ("http", _) => return Err(refused("it is plain HTTP and the registry is spoken to over HTTPS".to_owned())),
            (scheme, _) => return Err(refused(format!("its scheme {scheme} is not http or https"))),
        }
        self.egress.check_url(&url).map_err(refused)?;
        url.query_pairs_mut().append_pair("scope", &format!("repository:{}:pull", self.repository));
        if let Some(service) = &service {
            url.query_pairs_mut().append_pair("service", service);
        }
        debug!(realm, ?service, "asking for a token");
        let mut request = self.client.get(url.clone());
        if let Auth::Basic { username, password } = &self.auth {
            request = request.basic_auth(username, Some(password));
        }
        let response = request.send().await.map_err(|err| transport("get a token for", reference, err))?;
        if !response.status().is_success() {
            let status = response.status();
            let body = bounded::read_prefix(response).await;
            let detail = format!("the token realm answered {status}: {}", message(&body, MAX_REALM_MESSAGE));
            return Err(DistributionError::Unauthorized {
                registry: reference.registry().to_owned(),
                repository: reference.repository().to_owned(),
                detail,
            });
        }
        let body = bounded::read(response, MAX_TOKEN, "the token answer")
            .await
            .map_err(|err| body_error("get a token for", reference, err))?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body).map_err(|err| DistributionError::Unauthorized {
            registry: reference.registry().to_owned(),
            repository: reference.repository().to_owned(),
            detail: format!("the token answer is not a token: {err}"),
        })?;
        let token = token.token.or(token.access_token).unwrap_or_default();
        HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| DistributionError::Unauthorized {
            registry: reference.registry().to_owned(),
            repository: reference.repository().to_owned(),
            detail: "the token is not a header value".to_owned(),
        })
    }
}

/// A failed request as an error: refusals by the rules as
/// [`DistributionError::Refused`], the rest as [`DistributionError::Registry`].
pub(crate) fn transport(action: &'static str, reference: &Reference, err: reqwest::Error) -> DistributionError {
    let mut source = err.source();
    while let Some(inner) = source {
        if let Some(Refusal { what, target, reason }) = inner.downcast_ref::<Refusal>() {
            return DistributionError::Refused { what, url: target.clone(), reason: reason.clone() };
        }
        source = inner.source();
    }
    DistributionError::Registry {
        action,
        reference: reference.to_string(),
        source: Box::new(OciDistributionError::RequestError(err)),
    }
}

/// A body that could not be read as an error.
pub(crate) fn body_error(action: &'static str, reference: &Reference, err: BodyError) -> DistributionError {
    match err {
        BodyError::TooLarge(err) => err,
        BodyError::Transport(err) => transport(action, reference, err),
    }
}

/// An unsuccessful answer as the client library describes it, so that
/// [`DistributionError::registry`] sorts it.
fn status_error(status: StatusCode, body: &[u8], url: &Url) -> OciDistributionError {
    let url = url.to_string();
    if status == StatusCode::UNAUTHORIZED {
        return OciDistributionError::UnauthorizedError { url };
    }
    match serde_json::from_slice::<OciEnvelope>(body) {
        Ok(envelope) if status.is_client_error() => OciDistributionError::RegistryError { envelope, url },
        _ => OciDistributionError::ServerError { code: status.as_u16(), url, message: message(body, MAX_MESSAGE) },
    }
}

/// The first `max` bytes of an error answer, as text.
fn message(body: &[u8], max: usize) -> String {
    let mut text = String::from_utf8_lossy(&body[..body.len().min(max)]).into_owned();
    if body.len() > max {
        text.push_str("...");
    }
    text
}
