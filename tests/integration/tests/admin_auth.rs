//! The admin server over HTTPS asks the API server who may read it, as
//! upstream's controller managers do: `/metrics` and `/providers` need a
//! bearer token that a `TokenReview` accepts and a `SubjectAccessReview`
//! allowing `get` on the path; the health paths need nothing. Run against
//! the harness and against a real kube-apiserver, with wasm-ccm acting as
//! deploy/'s service account.

use std::time::{Duration, Instant};

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, PostParams};
use serde_json::json;
use wasm_ccm_envtest::Identity;
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::backend::{Backend, TestApiServer};
use wasm_ccm_tests::process::{Process, free_port, https_get};
use wasm_ccm_tests::{on_both_api_servers, repository};

const PATIENCE: Duration = Duration::from_secs(30);
const CCM: &str = "system:serviceaccount:kube-system:cloud-controller-manager";

async fn get(port: u16, path: &'static str, token: Option<String>) -> (u16, String) {
    tokio::task::spawn_blocking(move || https_get(port, path, token.as_deref()))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{path} answers"))
}

async fn the_admin_server_delegates_authentication_and_authorization(backend: &Backend) {
    let server = TestApiServer::start(backend).await;
    let cloud = FakeCloud::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_controller_kubeconfig(&kubeconfig);
    let config = dir.path().join("fake.json");
    std::fs::write(&config, json!({"cloud": cloud.url()}).to_string()).unwrap();
    let reader = server.token(Identity::Admin); // system:masters
    let own = server.token(Identity::CloudControllerManager); // deploy/'s RBAC: no /metrics
    let port = free_port();
    let provider = repository().join("target/wasm/provider_fake.wasm");
    let args: Vec<String> = [
        "run",
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--provider",
        &provider.display().to_string(),
        "--cloud-config",
        &config.display().to_string(),
        "--provider-allow",
        &cloud.url(),
        "--controllers",
        "service",
        "--leader-elect=false",
        "--secure-port",
        &port.to_string(),
        "--bind-address",
        "127.0.0.1",
        "--authorization-webhook-cache-unauthorized-ttl",
        "200ms",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut process = Process::start(&args, &[]);
    let deadline = Instant::now() + PATIENCE;
    while tokio::task::spawn_blocking(move || https_get(port, "/readyz", None)).await.unwrap().map(|(s, _)| s) != Some(200)
    {
        assert!(process.wait(Duration::ZERO).await.is_none(), "wasm-ccm exited");
        assert!(Instant::now() < deadline, "/readyz never answered 200 without a token");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for path in ["/healthz", "/livez"] {
        assert_eq!(get(port, path, None).await.0, 200, "{path} needs no token");
    }

    // Refused: no token, a token no one issued, a user RBAC does not let in.
    assert_eq!(get(port, "/metrics", None).await, (401, "Unauthorized".to_owned()));
    assert_eq!(get(port, "/providers", Some("forged".into())).await.0, 401);
    let (status, body) = get(port, "/metrics", Some(own.clone())).await;
    assert_eq!((status, body.as_str()), (403, format!("forbidden: User {CCM:?} cannot get path \"/metrics\"").as_str()));

    // Allowed.
    let (status, body) = get(port, "/metrics", Some(reader.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("provider_loaded_info"), "{body}");
    let (status, body) = get(port, "/providers", Some(reader.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"digest\""), "{body}");

    // Decisions are cached: more scrapes within the TTL review nothing more.
    if !server.is_real() {
        let reviews = || {
            let counts = server.harness().requests();
            (
                counts.get("create", "tokenreviews.authentication.k8s.io"),
                counts.get("create", "subjectaccessreviews.authorization.k8s.io"),
            )
        };
        let before = reviews();
        for _ in 0..5 {
            assert_eq!(get(port, "/metrics", Some(reader.clone())).await.0, 200);
        }
        assert_eq!(reviews(), before, "five scrapes within the TTL, no new review");
    }

    // RBAC grants wasm-ccm:metrics-reader to the refused user: allowed once
    // the refusal's cache entry expires.
    if !server.is_real() {
        let rbac = std::fs::read_to_string(repository().join("deploy/rbac.yaml")).unwrap();
        let reader_role = rbac.split("\n---\n").find(|doc| doc.contains("name: wasm-ccm:metrics-reader")).unwrap();
        let role: k8s_openapi::api::rbac::v1::ClusterRole = serde_norway::from_str(reader_role).unwrap();
        Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(server.admin())
            .create(&PostParams::default(), &role)
            .await
            .unwrap();
    }
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "scrape-wasm-ccm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wasm-ccm:metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "cloud-controller-manager", "namespace": "kube-system"}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(server.admin()).create(&PostParams::default(), &binding).await.unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, body) = get(port, "/metrics", Some(own.clone())).await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 403, "{body}");
        assert!(Instant::now() < deadline, "the binding never let {CCM} in");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(process.wait(Duration::ZERO).await.is_none(), "wasm-ccm kept serving");
}

on_both_api_servers!(the_admin_server_delegates_authentication_and_authorization);
