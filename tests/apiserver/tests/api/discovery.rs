use kube::core::GroupVersionKind;
use kube::discovery::Scope;

use crate::{server, within};

#[tokio::test]
async fn discovery_finds_the_resources_controllers_use() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let discovery = kube::Discovery::new(client.clone()).run().await?;
        assert!(discovery.has_group("coordination.k8s.io"));
        assert!(discovery.has_group("events.k8s.io"));

        let (nodes, capabilities) = discovery.resolve_gvk(&GroupVersionKind::gvk("", "v1", "Node")).expect("nodes");
        assert_eq!(nodes.plural, "nodes");
        assert_eq!(capabilities.scope, Scope::Cluster);
        assert!(capabilities.subresources.iter().any(|(sub, _)| sub.plural == "status"));

        let (services, capabilities) =
            discovery.resolve_gvk(&GroupVersionKind::gvk("", "v1", "Service")).expect("services");
        assert_eq!(services.plural, "services");
        assert_eq!(capabilities.scope, Scope::Namespaced);

        let (leases, _) =
            discovery.resolve_gvk(&GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease")).expect("leases");
        assert_eq!(leases.plural, "leases");
        let (events, _) =
            discovery.resolve_gvk(&GroupVersionKind::gvk("events.k8s.io", "v1", "Event")).expect("events");
        assert_eq!(events.plural, "events");

        let version = client.apiserver_version().await?;
        assert_eq!((version.major.as_str(), version.minor.as_str()), ("1", "33"));
        assert!(version.git_version.starts_with("v1.33."), "{}", version.git_version);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn health_endpoints_answer_ok() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        for path in ["/healthz", "/livez", "/readyz"] {
            let request = axum::http::Request::get(path).body(Vec::new())?;
            assert_eq!(client.request_text(request).await?, "ok");
        }
        Ok(())
    })
    .await
}
