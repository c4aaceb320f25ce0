//! The HTTP client behind a provider's `http` import: one per provider, with
//! pooled connections, TLS by rustls, and every hop checked against the
//! allow-list.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use url::Url;

use crate::bindings::http::{Error as HttpError, Method, Request, RequestAuth, Response};
use crate::call::throttle::Throttle;
use crate::error::LoadError;
use crate::imports::credentials::{Credentials, Role};
use crate::imports::http::allowlist::{AllowList, Denied, Target};
use crate::imports::http::scrub::Scrubber;
use crate::imports::http::sigv4::{self, SigningError};

/// The longest host a metric is labelled with: the longest DNS name.
const MAX_HOST_LABEL: usize = 253;
/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;
/// Name lookups of one provider at once: each holds a thread of the
/// blocking pool, which the whole process shares.
const CONCURRENT_LOOKUPS: usize = 4;
/// Idle connections kept per host, and for how long.
const IDLE_PER_HOST: usize = 4;
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

tokio::task_local! {
    /// The scheme and port of the request being connected, for the address
    /// checks of its name lookup.
    static CONNECTING: Target;
}

/// Headers a provider may not set: the host decides where a request goes
/// and how it is framed.
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Body size caps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    pub(crate) request: usize,
    pub(crate) response: usize,
}

/// One provider's HTTP client.
pub(crate) struct Outbound {
    client: reqwest::Client,
    allow_list: Arc<AllowList>,
    limits: BodyLimits,
    /// Its sealed credentials, scrubbed from every answer.
    scrubber: Scrubber,
}

/// A blocking name lookup: the system's resolver, or a test's.
type Lookup = Arc<dyn Fn(&str) -> std::io::Result<Vec<SocketAddr>> + Send + Sync>;

/// The system's resolver, as `getaddrinfo` answers.
fn system_lookup(host: &str) -> std::io::Result<Vec<SocketAddr>> {
    Ok((host, 0).to_socket_addrs()?.collect())
}

/// Resolves names and drops the addresses the allow-list refuses, so that
/// a connection only ever goes to a checked address; a few lookups at once.
struct CheckedResolver {
    allow_list: Arc<AllowList>,
    /// Turns to look a name up, each held by the blocking lookup itself
    /// until it ends, even when the request that asked has timed out: a
    /// provider's stalled lookups hold at most this many threads of the
    /// blocking pool the whole process shares.
    lookups: Arc<Semaphore>,
    lookup: Lookup,
}

impl CheckedResolver {
    fn new(allow_list: Arc<AllowList>, lookup: Lookup) -> Self {
        CheckedResolver { allow_list, lookups: Arc::new(Semaphore::new(CONCURRENT_LOOKUPS)), lookup }
    }
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_list = self.allow_list.clone();
        let lookups = self.lookups.clone();
        let lookup = self.lookup.clone();
        // A connection made for the pool in the background has no request:
        // no special address is allowed for it.
        let target = CONNECTING.try_with(|target| *target).ok();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let turn = lookups.acquire_owned().await?;
            let looked_up = host.clone();
            let resolved = tokio::task::spawn_blocking(move || {
                let _turn = turn;
                lookup(&looked_up)
            })
            .await??;
            let mut refused = None;
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|address| match allow_list.check_address(&host, address.ip(), target) {
                    Ok(()) => true,
                    Err(denied) => {
                        refused = Some(denied);
                        false
                    }
                })
                .collect();
            match (allowed.is_empty(), refused) {
                (false, _) => Ok(Box::new(allowed.into_iter()) as Addrs),
                (true, Some(denied)) => Err(Box::new(denied) as Box<dyn std::error::Error + Send + Sync>),
                (true, None) => Err(format!("{host} has no addresses").into()),
            }
        })
    }
}

impl Outbound {
    /// A client for `allow_list`, trusting the system's and the web's
    /// certificate authorities and those of `trusted_certificates` (PEM),
    /// whose answers `scrubber` scrubs.
    pub(crate) fn new(
        allow_list: AllowList,
        limits: BodyLimits,
        trusted_certificates: Option<&[u8]>,
        scrubber: Scrubber,
    ) -> Result<Self, LoadError> {
        let allow_list = Arc::new(allow_list);
        let resolver = CheckedResolver::new(allow_list.clone(), Arc::new(system_lookup));
        let mut roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<Vec<_>, _>>()
            .map_err(LoadError::TrustedCertificates)?;
        if let Some(pem) = trusted_certificates {
            roots.extend(reqwest::Certificate::from_pem_bundle(pem).map_err(LoadError::TrustedCertificates)?);
        }
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Losing a race to another installer is fine: one is installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        // The system's roots, Mozilla's and the provider's own.
        let builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(resolver))
            .user_agent(concat!("wasm-ccm/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(IDLE_PER_HOST)
            .pool_idle_timeout(IDLE_TIMEOUT)
            .tls_certs_merge(roots);
        let client =
            builder.build().map_err(|err| LoadError::Engine(format!("cannot build the HTTP client: {err}")))?;
        Ok(Outbound { client, allow_list, limits, scrubber })
    }

    /// `host:port` of `url` when the allow-list allows it, for metrics:
    /// a host no entry allows is never a label. The host is at most 253
    /// characters, as DNS allows.
    pub(crate) fn allowed_origin(&self, url: &str) -> Option<String> {
        let url = Url::parse(url).ok()?;
        self.allow_list.check_url(&url).ok()?;
        let host = url.host_str()?;
        Some(format!("{}:{}", &host[..host.floor_char_boundary(MAX_HOST_LABEL)], url.port_or_known_default()?))
    }

    /// Sends `request` for a call whose deadline is `deadline`, each hop
    /// once `rate` lets it, and scrubs the provider's sealed credentials
    /// from the answer or the error.
    ///
    /// A wait for `rate` that outlasts the request's own timeout fails the
    /// request; one that reaches the call's deadline does not end here, so
    /// that the call ends at its deadline like any host call that outlasts
    /// it.
    pub(crate) async fn send(
        &self,
        request: Request,
        credentials: &Credentials,
        rate: Option<&Throttle>,
        deadline: Instant,
    ) -> Result<Response, HttpError> {
        self.scrubber.result(self.exchange(request, credentials, rate, deadline).await)
    }

    async fn exchange(
        &self,
        request: Request,
        credentials: &Credentials,
        rate: Option<&Throttle>,
        deadline: Instant,
    ) -> Result<Response, HttpError> {
        let mut url = Url::parse(&request.url)
            .map_err(|err| HttpError::InvalidRequest(format!("bad URL {:?}: {err}", request.url)))?;
        if request.body.len() > self.limits.request {
            return Err(HttpError::TooLarge(format!(
                "request body of {} bytes is over the {} byte cap",
                request.body.len(),
                self.limits.request
            )));
        }
        let mut headers = checked_headers(&request.headers)?;
        let own_signature = match request.auth {
            Some(_) => None,
            None => sigv4::self_signed(&mut headers, credentials, &url).map_err(signing_error)?,
        };
        let auth = request.auth.or(own_signature.map(RequestAuth::AwsSigv4));
        if self.scrubber.is_active() {
            // An encoded answer could not be scrubbed.
            headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        }
        let requested = request.timeout_ms.map(|ms| Instant::now() + Duration::from_millis(u64::from(ms)));
        let until = requested.map_or(deadline, |requested| requested.min(deadline));
        let origin = url.origin();
        let mut method = request.method;
        let mut body = request.body;
        for hop in 0..=MAX_REDIRECTS {
            let denied = |denied: Denied| match hop {
                0 => HttpError::Denied(denied.to_string()),
                _ => HttpError::Denied(format!("redirect refused: {denied}")),
            };
            self.allow_list.check_url(&url).map_err(denied)?;
            let target = Target::of(&url).map_err(denied)?;
            // Before signing, so that a signature is as fresh as its request.
            if let Some(rate) = rate {
                if until < deadline {
                    tokio::time::timeout_at(until, rate.take()).await.map_err(|_| HttpError::Timeout)?;
                } else {
                    rate.take().await;
                }
            }
            let mut hop_headers = headers.clone();
            // Credentials go only to the origin the provider named.
            if let Some(auth) = auth.as_ref().filter(|_| url.origin() == origin) {
                authorize(auth, credentials, method, &url, &mut hop_headers, &body)?;
            }
            let sent =
                self.client.request(reqwest_method(method), url.clone()).headers(hop_headers).body(body.clone()).send();
            let response = tokio::time::timeout_at(until, CONNECTING.scope(target, sent))
                .await
                .map_err(|_| HttpError::Timeout)?
                .map_err(transport_error)?;
            let status = response.status();
            let location = response.headers().get(reqwest::header::LOCATION).and_then(|value| value.to_str().ok());
            if let (true, Some(location)) = (status.is_redirection(), location) {
                url = url
                    .join(location)
                    .map_err(|err| HttpError::Transport(format!("bad redirect location {location:?}: {err}")))?;
                if status == reqwest::StatusCode::SEE_OTHER
                    || (matches!(status.as_u16(), 301 | 302) && method == Method::Post)
                {
                    method = Method::Get;
                    body = Vec::new();
                }
                continue;
            }
            return self.read(response, until).await;
        }
        Err(HttpError::Transport(format!("more than {MAX_REDIRECTS} redirects")))
    }

    async fn read(&self, mut response: reqwest::Response, until: Instant) -> Result<Response, HttpError> {
        let cap = self.limits.response;
        let too_large =
            |size: String| HttpError::TooLarge(format!("response body of {size} bytes is over the {cap} byte cap"));
        if let Some(length) = response.content_length().filter(|length| *length > cap as u64) {
            return Err(too_large(length.to_string()));
        }
        let encoding = response.headers().get(CONTENT_ENCODING).filter(|value| *value != "identity");
        if let (true, Some(encoding)) = (self.scrubber.is_active(), encoding) {
            return Err(HttpError::Transport(format!(
                "the answer is encoded ({}), and answers to a provider with sealed credentials are scrubbed of them \
                 as text: the host asks for none",
                String::from_utf8_lossy(encoding.as_bytes())
            )));
        }
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = tokio::time::timeout_at(until, response.chunk())
            .await
            .map_err(|_| HttpError::Timeout)?
            .map_err(transport_error)?
        {
            if body.len() + chunk.len() > cap {
                return Err(too_large(format!("more than {cap}")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response { status, headers, body })
    }
}

fn checked_headers(headers: &[(String, String)]) -> Result<HeaderMap, HttpError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpError::InvalidRequest(format!("bad header name {name:?}")))?;
        if FORBIDDEN_HEADERS.contains(&header.as_str()) {
            return Err(HttpError::InvalidRequest(format!("the header {name:?} is set by the host")));
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| HttpError::InvalidRequest(format!("bad value for header {name:?}")))?;
        map.append(header, value);
    }
    Ok(map)
}

/// A request the host could not sign: refused when a credential may not
/// serve there, invalid otherwise.
fn signing_error(err: SigningError) -> HttpError {
    match err {
        SigningError::Refused(refused) => HttpError::Denied(refused.to_string()),
        other => HttpError::InvalidRequest(other.to_string()),
    }
}

fn authorize(
    auth: &RequestAuth,
    credentials: &Credentials,
    method: Method,
    url: &Url,
    headers: &mut HeaderMap,
    body: &[u8],
) -> Result<(), HttpError> {
    let added = match auth {
        RequestAuth::Bearer(name) => {
            let token = credentials
                .for_role(name, Role::Bearer, url)
                .map_err(|refused| HttpError::Denied(refused.to_string()))?;
            vec![("authorization".to_owned(), format!("Bearer {token}"))]
        }
        RequestAuth::AwsSigv4(params) => {
            let signed: Vec<(String, String)> = headers
                .iter()
                .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap_or_default().to_owned()))
                .collect();
            let method = reqwest_method(method);
            sigv4::signature_headers(params, credentials, method.as_str(), url, &signed, body).map_err(signing_error)?
        }
    };
    for (name, value) in added {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|err| HttpError::InvalidRequest(err.to_string()))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| HttpError::InvalidRequest(format!("credential for {name} is not a valid header value")))?;
        headers.insert(name, value);
    }
    Ok(())
}

fn reqwest_method(method: Method) -> reqwest::Method {
    match method {
        Method::Get => reqwest::Method::GET,
        Method::Head => reqwest::Method::HEAD,
        Method::Post => reqwest::Method::POST,
        Method::Put => reqwest::Method::PUT,
        Method::Patch => reqwest::Method::PATCH,
        Method::Delete => reqwest::Method::DELETE,
        Method::Options => reqwest::Method::OPTIONS,
    }
}

/// A transport error, or the allow-list's refusal when that is what stopped
/// the connection.
fn transport_error(err: reqwest::Error) -> HttpError {
    if err.is_timeout() {
        return HttpError::Timeout;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut chain = Vec::new();
    while let Some(current) = source {
        if let Some(denied) = current.downcast_ref::<Denied>() {
            return HttpError::Denied(denied.to_string());
        }
        chain.push(current.to_string());
        source = current.source();
    }
    chain.dedup();
    HttpError::Transport(chain.join(": "))
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};

    use super::*;

    /// Lookups that block until released, counting how many run at once.
    #[derive(Default)]
    struct Stuck {
        released: Mutex<bool>,
        release: Condvar,
        running: AtomicUsize,
        most: AtomicUsize,
    }

    impl Stuck {
        fn lookup(&self) -> std::io::Result<Vec<SocketAddr>> {
            let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(running, Ordering::SeqCst);
            let mut released = self.released.lock().unwrap();
            while !*released {
                released = self.release.wait(released).unwrap();
            }
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(vec![SocketAddr::from(([203, 0, 113, 7], 0))])
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lookups_that_timed_out_keep_their_turn_until_they_end() {
        let stuck = Arc::new(Stuck::default());
        let blocking = stuck.clone();
        let resolver = CheckedResolver::new(
            Arc::new(AllowList::parse(["https://*"]).unwrap()),
            Arc::new(move |_: &str| blocking.lookup()),
        );
        let name = || Name::from_str("stalled.example").unwrap();
        // Requests whose lookups stall time out one after another, as a
        // provider's calls would.
        for _ in 0..4 * CONCURRENT_LOOKUPS {
            let timed_out = tokio::time::timeout(Duration::from_millis(20), resolver.resolve(name())).await;
            assert!(timed_out.is_err(), "the lookup is stuck");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (running, most) = (stuck.running.load(Ordering::SeqCst), stuck.most.load(Ordering::SeqCst));
        // Released before the checks, so that a failing test ends.
        *stuck.released.lock().unwrap() = true;
        stuck.release.notify_all();
        assert_eq!(running, CONCURRENT_LOOKUPS, "the stalled lookups keep their turns");
        assert_eq!(most, CONCURRENT_LOOKUPS, "no more run at once");
        let addresses: Vec<SocketAddr> = tokio::time::timeout(Duration::from_secs(5), resolver.resolve(name()))
            .await
            .expect("turns come back once the lookups end")
            .unwrap()
            .collect();
        assert_eq!(addresses, [SocketAddr::from(([203, 0, 113, 7], 0))]);
        assert_eq!(stuck.most.load(Ordering::SeqCst), CONCURRENT_LOOKUPS);
    }
}
