use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams};
use serde_json::json;

use crate::{api_code, server, within};

#[tokio::test]
async fn finalizers_hold_a_deleted_object_until_they_are_removed() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client, "default");
        let start = services.list(&Default::default()).await?.metadata.resource_version.unwrap();
        let mut events = services.watch(&WatchParams::default().disable_bookmarks(), &start).await?.boxed();

        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "lb", "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        }))?;
        let created = services.create(&PostParams::default(), &service).await?;
        assert!(matches!(events.try_next().await?, Some(WatchEvent::Added(_))));

        let wrong_uid = DeleteParams { preconditions: Some(Preconditions { uid: Some("nope".into()), resource_version: None }), ..Default::default() };
        assert_eq!(api_code(services.delete("lb", &wrong_uid).await), Ok((409, "Conflict".into())));

        let deleted = services.delete("lb", &DeleteParams::default()).await?;
        let marked = deleted.left().expect("the object is returned while finalizers remain");
        assert!(marked.metadata.deletion_timestamp.is_some());
        assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
        let Some(WatchEvent::Modified(modified)) = events.try_next().await? else { panic!("expected MODIFIED") };
        assert!(modified.metadata.deletion_timestamp.is_some());
        assert!(services.get("lb").await?.metadata.deletion_timestamp.is_some());

        let refused = services
            .patch("lb", &PatchParams::default(), &Patch::Strategic(json!({"metadata": {"finalizers": ["another"]}})))
            .await;
        assert_eq!(api_code(refused), Ok((422, "Invalid".into())));

        let relabelled = services
            .patch("lb", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"still": "here"}}})))
            .await?;
        assert!(relabelled.metadata.labels.is_some(), "other changes are allowed while deleting");
        assert!(matches!(events.try_next().await?, Some(WatchEvent::Modified(_))));

        let remove: json_patch::Patch = serde_json::from_value(json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "service.kubernetes.io/load-balancer-cleanup"},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ]))?;
        services.patch("lb", &PatchParams::default(), &Patch::Json::<()>(remove)).await?;
        assert_eq!(api_code(services.get("lb").await), Ok((404, "NotFound".into())));
        assert!(server.object("services", Some("default"), "lb").is_none());
        let Some(WatchEvent::Deleted(gone)) = events.try_next().await? else { panic!("expected DELETED") };
        assert_eq!(gone.metadata.uid, created.metadata.uid);

        let reused = serde_json::from_value::<Service>(json!({"metadata": {"name": "again"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": created.spec.unwrap().ports.unwrap()[0].node_port}]}}))?;
        services.create(&PostParams::default(), &reused).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn deleting_without_finalizers_removes_at_once() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client, "default");
        let service: Service =
            serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}))?;
        let created = services.create(&PostParams::default(), &service).await?;
        let stale = DeleteParams {
            preconditions: Some(Preconditions { uid: None, resource_version: Some("1".into()) }),
            ..Default::default()
        };
        assert_eq!(api_code(services.delete("web", &stale).await), Ok((409, "Conflict".into())));
        let exact = DeleteParams {
            preconditions: Some(Preconditions {
                uid: created.metadata.uid.clone(),
                resource_version: created.metadata.resource_version.clone(),
            }),
            ..Default::default()
        };
        let removed = services.delete("web", &exact).await?.left().expect("the deleted object");
        assert_eq!(removed.metadata.uid, created.metadata.uid);
        assert_eq!(api_code(services.get("web").await), Ok((404, "NotFound".into())));
        Ok(())
    })
    .await
}
