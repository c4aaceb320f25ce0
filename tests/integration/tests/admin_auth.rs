//! The admin server over HTTPS asks the API server who may read it, as
//! upstream's controller managers do: `/metrics` and `/providers` need a
//! bearer token that a `TokenReview` accepts and a `SubjectAccessReview`
//! allowing `get` on the path; the health paths need nothing. Run against
//! the harness and against a real kube-apiserver, with wasm-ccm acting as
//! deploy/'s service account.

use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, PostParams};
use serde_json::json;
use wasm_ccm_envtest::Identity;
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::backend::{Backend, TestApiServer};
use wasm_ccm_tests::process::{Process, https_get};
use wasm_ccm_tests::{free_port, guest_path, on_both_api_servers, repository, resident_bytes};

const PATIENCE: Duration = Duration::from_secs(30);
const CCM: &str = "system:serviceaccount:kube-system:cloud-controller-manager";

async fn get(port: u16, path: &'static str, token: Option<String>) -> (u16, String) {
    tokio::task::spawn_blocking(move || https_get(port, path, token.as_deref()))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{path} answers"))
}

/// `wasm-ccm run` with its admin server over HTTPS on a free port, against
/// `server`, once `/readyz` answers; the directory holds its files.
async fn start(server: &TestApiServer, cloud: &FakeCloud) -> (Process, u16, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_controller_kubeconfig(&kubeconfig);
    let config = dir.path().join("fake.json");
    std::fs::write(&config, json!({"cloud": cloud.url()}).to_string()).unwrap();
    let port = free_port().unwrap();
    let provider = guest_path("provider-fake");
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
    let mut process = Process::start(crate::binary(), &args, &[]);
    let deadline = Instant::now() + PATIENCE;
    while tokio::task::spawn_blocking(move || https_get(port, "/readyz", None)).await.unwrap().map(|(s, _)| s)
        != Some(200)
    {
        assert!(process.wait(Duration::ZERO).await.is_none(), "wasm-ccm exited");
        assert!(Instant::now() < deadline, "/readyz never answered 200 without a token");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (process, port, dir)
}

async fn the_admin_server_delegates_authentication_and_authorization(backend: &Backend) {
    let server = TestApiServer::start(backend).await;
    let cloud = FakeCloud::start().await.unwrap();
    let reader = server.token(Identity::Admin); // system:masters
    let own = server.token(Identity::CloudControllerManager); // deploy/'s RBAC: no /metrics
    let (mut process, port, _files) = start(&server, &cloud).await;
    for path in ["/healthz", "/livez"] {
        assert_eq!(get(port, path, None).await.0, 200, "{path} needs no token");
    }

    // Refused: no token, a token no one issued, a user RBAC does not let in.
    assert_eq!(get(port, "/metrics", None).await, (401, "Unauthorized".to_owned()));
    assert_eq!(get(port, "/providers", Some("forged".into())).await.0, 401);
    let (status, body) = get(port, "/metrics", Some(own.clone())).await;
    assert_eq!(
        (status, body.as_str()),
        (403, format!("forbidden: User {CCM:?} cannot get path \"/metrics\"").as_str())
    );

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
        let role: ClusterRole = serde_norway::from_str(reader_role).unwrap();
        Api::<ClusterRole>::all(server.admin()).create(&PostParams::default(), &role).await.unwrap();
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

async fn create<K>(api: Api<K>, object: serde_json::Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let object: K = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

fn subject_access(user: &str, groups: &[&str], path: Option<&str>, service_in: Option<&str>) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            groups: Some(groups.iter().map(|group| (*group).to_owned()).collect()),
            non_resource_attributes: path
                .map(|path| NonResourceAttributes { path: Some(path.to_owned()), verb: Some("get".to_owned()) }),
            resource_attributes: service_in.map(|namespace| ResourceAttributes {
                namespace: Some(namespace.to_owned()),
                verb: Some("get".to_owned()),
                resource: Some("services".to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

/// The reviews the admin server asks for, answered by each server: what
/// the admin server relies on is the same on both.
async fn token_and_access_reviews(backend: &Backend) {
    let server = TestApiServer::start(backend).await;
    let token = server.token(Identity::CloudControllerManager);
    let tokens = Api::<TokenReview>::all(server.admin());
    let review = |token: &str| TokenReview {
        spec: TokenReviewSpec { token: token.to_owned(), ..TokenReviewSpec::default() },
        ..TokenReview::default()
    };
    let known = tokens.create(&PostParams::default(), &review(&token)).await.unwrap().status.unwrap();
    assert_eq!(known.authenticated, Some(true), "{known:?}");
    let user = known.user.unwrap();
    assert_eq!(user.username.as_deref(), Some(CCM));
    let groups = user.groups.unwrap_or_default();
    for group in ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"] {
        assert!(groups.iter().any(|known| known == group), "{group} in {groups:?}");
    }
    let forged = tokens.create(&PostParams::default(), &review("forged")).await.unwrap().status.unwrap();
    assert_ne!(forged.authenticated, Some(true), "{forged:?}");
    assert!(forged.user.and_then(|user| user.username).is_none());
    eprintln!("a forged token's review: error {:?}", forged.error);

    let access = Api::<SubjectAccessReview>::all(server.admin());
    let allowed = |review: SubjectAccessReview| {
        let access = access.clone();
        async move { access.create(&PostParams::default(), &review).await.unwrap().status.unwrap().allowed }
    };
    assert!(allowed(subject_access("root", &["system:masters"], Some("/metrics"), None)).await);
    assert!(!allowed(subject_access("nobody", &["system:authenticated"], Some("/metrics"), None)).await);
    assert!(!allowed(subject_access("nobody", &["system:authenticated"], None, Some("default"))).await);
    let grants: Vec<serde_json::Value> = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "read-metrics"},
               "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "read-metrics"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "read-metrics"},
               "subjects": [{"kind": "User", "name": "nobody"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "read-services", "namespace": "default"},
               "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "read-services", "namespace": "default"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-services"},
               "subjects": [{"kind": "Group", "name": "readers"}]}),
    ];
    for grant in grants {
        let admin = server.admin();
        match (grant["kind"].as_str().unwrap(), grant["metadata"]["namespace"].as_str()) {
            ("ClusterRole", _) => create(Api::<ClusterRole>::all(admin), grant).await,
            ("ClusterRoleBinding", _) => create(Api::<ClusterRoleBinding>::all(admin), grant).await,
            ("Role", Some(namespace)) => create(Api::<Role>::namespaced(admin, namespace), grant).await,
            (_, namespace) => create(Api::<RoleBinding>::namespaced(admin, namespace.unwrap()), grant).await,
        }
    }
    // The real server's RBAC follows its caches: poll.
    let deadline = Instant::now() + PATIENCE;
    while !allowed(subject_access("nobody", &["system:authenticated"], Some("/metrics"), None)).await {
        assert!(Instant::now() < deadline, "the ClusterRoleBinding never applied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!allowed(subject_access("nobody", &["system:authenticated"], Some("/providers"), None)).await);
    while !allowed(subject_access("somebody", &["readers"], None, Some("default"))).await {
        assert!(Instant::now() < deadline, "the RoleBinding never applied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!allowed(subject_access("somebody", &["readers"], None, Some("kube-system"))).await);
}

/// Distinct bad tokens of each kind, long and reviewed: 10,000 in all.
const BAD_TOKENS: u64 = 5000;

/// Fresh tokens from anyone cost neither memory nor reviews past a bound:
/// a token over the length cap is refused before any review, and a token
/// the review refuses is not kept.
#[tokio::test]
async fn fresh_bad_tokens_leave_memory_flat_and_long_ones_unreviewed() {
    let server = TestApiServer::start(&Backend::Harness).await;
    let cloud = FakeCloud::start().await.unwrap();
    let (mut process, port, _files) = start(&server, &cloud).await;
    let reviews = || server.harness().requests().get("create", "tokenreviews.authentication.k8s.io");
    let (before, reviewed) = (resident_bytes(&process.id().to_string()), reviews());
    let long = "x".repeat(100 * 1024);
    for round in 0..BAD_TOKENS {
        assert_eq!(get(port, "/metrics", Some(format!("{round}{long}"))).await.0, 401);
    }
    assert_eq!(reviews(), reviewed, "no token over the cap is reviewed");
    for round in 0..BAD_TOKENS {
        assert_eq!(get(port, "/providers", Some(format!("forged-{round}-{}", &long[..8 * 1024]))).await.0, 401);
    }
    assert_eq!(reviews(), reviewed + BAD_TOKENS, "each token under the cap is reviewed once");
    assert_eq!(get(port, "/providers", Some(format!("forged-0-{}", &long[..8 * 1024]))).await.0, 401);
    assert_eq!(reviews(), reviewed + BAD_TOKENS + 1, "a refusal is not kept, so not found again");
    let grown = resident_bytes(&process.id().to_string()).saturating_sub(before);
    assert!(
        grown < 32 << 20,
        "{} MiB of long tokens and {} MiB of refused ones kept {} MiB",
        BAD_TOKENS * 100 / 1024,
        BAD_TOKENS * 8 / 1024,
        grown >> 20
    );
    assert!(process.wait(Duration::ZERO).await.is_none(), "wasm-ccm kept serving");
}

on_both_api_servers!(the_admin_server_delegates_authentication_and_authorization, token_and_access_reviews);
