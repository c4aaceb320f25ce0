use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::json;

use crate::{api_code, server, within};

/// A client that does not retry, so injected failures reach the test.
async fn client_without_retries(server: &wasm_ccm_apiserver::ApiServer) -> anyhow::Result<Client> {
    let mut config = kube::Config::from_custom_kubeconfig(server.kubeconfig(), &Default::default()).await?;
    config.default_retry = false;
    Ok(Client::try_from(config)?)
}

#[tokio::test]
async fn injected_failures_answer_then_recover() -> anyhow::Result<()> {
    within(10, async {
        let (server, _) = server().await?;
        let client = client_without_retries(&server).await?;
        let nodes: Api<Node> = Api::all(client.clone());
        server.faults().fail_next(3, 429);
        for _ in 0..3 {
            assert_eq!(api_code(nodes.list(&Default::default()).await), Ok((429, "TooManyRequests".into())));
        }
        assert!(nodes.list(&Default::default()).await.is_ok());

        server.faults().fail_next(1, 429);
        let request = axum::http::Request::get("/api/v1/nodes").body(Vec::new())?;
        let response = client.send(request.map(kube::client::Body::from)).await?;
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()["retry-after"], "1");

        server.faults().fail_next(2, 500);
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}}))?;
        for _ in 0..2 {
            assert_eq!(api_code(nodes.create(&PostParams::default(), &node).await), Ok((500, "InternalError".into())));
        }
        nodes.create(&PostParams::default(), &node).await?;
        assert_eq!(server.requests().get("create", "nodes"), 3);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_default_client_retries_too_many_requests() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client);
        server.faults().fail_next(1, 429);
        let started = Instant::now();
        nodes.list(&Default::default()).await?;
        assert!(started.elapsed() >= Duration::from_millis(900), "the client honoured Retry-After");
        assert_eq!(server.requests().get("list", "nodes"), 2);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn latency_delays_every_answer_until_turned_off() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client);
        nodes.list(&Default::default()).await?;
        server.faults().set_latency(Duration::from_millis(300));
        let started = Instant::now();
        nodes.list(&Default::default()).await?;
        assert!(started.elapsed() >= Duration::from_millis(300));
        server.faults().set_latency(Duration::ZERO);
        let started = Instant::now();
        nodes.list(&Default::default()).await?;
        assert!(started.elapsed() < Duration::from_millis(300));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn requests_are_counted_by_verb_and_resource() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client);
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}}))?;
        nodes.create(&PostParams::default(), &node).await?;
        nodes.get("n1").await?;
        nodes.get_status("n1").await?;
        nodes.list(&Default::default()).await?;
        let counts = server.requests();
        assert_eq!(counts.get("create", "nodes"), 1);
        assert_eq!(counts.get("get", "nodes"), 1);
        assert_eq!(counts.get("get", "nodes/status"), 1);
        assert_eq!(counts.get("list", "nodes"), 1);
        assert_eq!(counts.total(), 4);
        assert!(counts.to_string().contains("nodes/status"));
        server.reset_requests();
        assert_eq!(server.requests().total(), 0);
        Ok(())
    })
    .await
}
