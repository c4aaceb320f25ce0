//! The HTTP stack under the controller manager's clients: kube-rs's, with
//! `TCP_NODELAY` on every connection.
//!
//! kube-rs connects with Nagle's algorithm on and has no option to turn it
//! off (kube-rs issue 2056). A new connection's first request then waits
//! until the TLS handshake's last segment is acknowledged, which the API
//! server's side delays (delayed acknowledgements): taking the lease took
//! 50 ms, 9–25 ms with `TCP_NODELAY`, and every connection the controllers
//! open in a burst paid the same on its first request.
//!
//! The layers are kube-rs's own, from [`ConfigExt`], in kube-rs's order:
//! the API server's URL, retries of 429, 503 and 504 responses, the
//! kubeconfig's credentials, its extra headers, a span per request
//! (tower-http's, which logs no failure), and kube-rs's TLS and timeouts
//! around the connector. Not kept: the expiry of an exec plugin's client
//! certificate that kube-rs records in `Client::valid_until`, which nothing
//! here reads. A configuration with a proxy gets kube-rs's stack as it is.

use http::{Request, Response};
use http_body_util::BodyExt;
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use kube::config::Config;
use tower::retry::RetryLayer;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_http::trace::TraceLayer;

/// A client's service stack, its response bodies boxed.
pub(super) type Stack = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// A client builder for `config`: kube-rs's layers over connections with
/// `TCP_NODELAY`.
///
/// # Errors
/// When the TLS settings, the credentials or the extra headers are bad.
pub(super) fn builder(config: &Config) -> Result<ClientBuilder<Stack>, kube::Error> {
    if config.proxy_url.is_some() {
        return ClientBuilder::try_from(config.clone());
    }
    let client = hyper_util::client::legacy::Builder::new(TokioExecutor::new()).build(connector(config)?);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.default_retry.then(|| RetryLayer::new(RetryPolicy::server_retry())))
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        // Failures are not logged here: the controllers log each with its
        // context, and an outage of the API server once.
        .layer(TraceLayer::new_for_http().on_failure(()))
        .map_err(BoxError::from)
        .service(client)
        .map_response(|response| response.map(|body| Box::new(body.map_err(BoxError::from)) as Box<DynBody>))
        .boxed();
    Ok(ClientBuilder::new(service, config.default_namespace.clone()))
}

/// Connections to the API server: TCP with `TCP_NODELAY`, TLS as the
/// kubeconfig says, and its timeouts.
fn connector(config: &Config) -> Result<TimeoutConnector<hyper_rustls::HttpsConnector<HttpConnector>>, kube::Error> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    let mut connector = TimeoutConnector::new(config.rustls_https_connector_with_connector(tcp)?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    Ok(connector)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, ListParams};
    use kube::config::KubeConfigOptions;
    use tower::Service;
    use wasm_ccm_apiserver::ApiServer;

    use super::*;

    #[tokio::test]
    async fn connections_go_out_with_tcp_nodelay() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url: http::Uri = format!("http://{}", listener.local_addr().unwrap()).parse().unwrap();
        let mut connector = connector(&Config::new(url.clone())).unwrap();
        let stream = connector.call(url).await.unwrap();
        let hyper_rustls::MaybeHttpsStream::Http(tcp) = stream.get_ref() else {
            panic!("a plain HTTP URL is connected without TLS");
        };
        assert!(tcp.inner().nodelay().unwrap());
    }

    #[tokio::test]
    async fn a_client_on_the_stack_retries_an_unavailable_api_server_as_kube_rs_does() {
        let server = ApiServer::start().await.unwrap();
        let config = Config::from_custom_kubeconfig(server.kubeconfig(), &KubeConfigOptions::default()).await.unwrap();
        let client = builder(&config).unwrap().build();
        server.faults().fail_next(1, 503);
        Api::<Namespace>::all(client).list(&ListParams::default()).await.unwrap();
        assert_eq!(server.requests().get("list", "namespaces"), 2);
    }
}
