use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use wasm_ccm_test_support::NodeFixture;

use crate::{api_code, server, within};

#[tokio::test]
async fn the_initial_namespaces_exist() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let namespaces: Api<Namespace> = Api::all(client);
        let names: Vec<String> =
            namespaces.list(&Default::default()).await?.iter().map(|n| n.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
        let default = namespaces.get("default").await?;
        assert_eq!(default.status.and_then(|s| s.phase).as_deref(), Some("Active"));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn nodes_are_created_read_replaced_and_deleted() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client);
        let created = nodes.create(&PostParams::default(), &Node::test("n1").with_provider_id("fake://n1")).await?;
        let uid = created.metadata.uid.clone().expect("uid");
        assert_eq!(uuid::Uuid::parse_str(&uid)?.get_version_num(), 4);
        let stamp = created.metadata.creation_timestamp.clone().expect("creationTimestamp");
        let rendered = server.object("nodes", None, "n1").expect("stored")["metadata"]["creationTimestamp"].clone();
        assert_eq!(rendered.as_str().map(str::len), Some("2025-01-01T00:00:00Z".len()), "{stamp:?}");
        assert!(created.status.is_some(), "a node keeps the status it registers with");

        let mut fetched = nodes.get("n1").await?;
        assert_eq!(fetched.metadata.uid.as_deref(), Some(uid.as_str()));
        fetched.metadata.labels = Some([("zone".to_string(), "a".to_string())].into());
        let replaced = nodes.replace("n1", &PostParams::default(), &fetched).await?;
        let first: u64 = created.metadata.resource_version.unwrap().parse()?;
        let second: u64 = replaced.metadata.resource_version.clone().unwrap().parse()?;
        assert!(second > first);
        assert_eq!(replaced.metadata.uid.as_deref(), Some(uid.as_str()));

        let unchanged = nodes.replace("n1", &PostParams::default(), &replaced).await?;
        assert_eq!(unchanged.metadata.resource_version, replaced.metadata.resource_version, "no-op writes are skipped");

        nodes.delete("n1", &DeleteParams::default()).await?;
        assert_eq!(api_code(nodes.get("n1").await), Ok((404, "NotFound".into())));
        assert!(server.object("nodes", None, "n1").is_none());
        Ok(())
    })
    .await
}

#[tokio::test]
async fn stale_resource_versions_conflict() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client);
        let original = nodes.create(&PostParams::default(), &Node::test("n1").with_provider_id("fake://n1")).await?;
        let mut first = original.clone();
        first.metadata.labels = Some([("a".to_string(), "1".to_string())].into());
        nodes.replace("n1", &PostParams::default(), &first).await?;
        let mut stale = original.clone();
        stale.metadata.labels = Some([("b".to_string(), "2".to_string())].into());
        assert_eq!(api_code(nodes.replace("n1", &PostParams::default(), &stale).await), Ok((409, "Conflict".into())));

        stale.metadata.resource_version = None;
        let unconditional = nodes.replace("n1", &PostParams::default(), &stale).await?;
        assert_eq!(unconditional.metadata.labels, stale.metadata.labels);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn leases_conflict_on_stale_updates() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let leases: Api<Lease> = Api::namespaced(client, "kube-system");
        let lease = Lease {
            metadata: ObjectMeta { name: Some("cloud-controller-manager".into()), ..Default::default() },
            spec: Some(LeaseSpec {
                holder_identity: Some("a".into()),
                lease_duration_seconds: Some(15),
                ..Default::default()
            }),
        };
        let created = leases.create(&PostParams::default(), &lease).await?;
        let mut taken = created.clone();
        taken.spec.as_mut().unwrap().holder_identity = Some("b".into());
        let renewed = leases.replace("cloud-controller-manager", &PostParams::default(), &taken).await?;
        assert_eq!(renewed.spec.unwrap().holder_identity.as_deref(), Some("b"));

        let mut late = created;
        late.spec.as_mut().unwrap().holder_identity = Some("c".into());
        let conflict = leases.replace("cloud-controller-manager", &PostParams::default(), &late).await;
        assert_eq!(api_code(conflict), Ok((409, "Conflict".into())));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn creates_are_validated_like_the_real_server() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let in_missing_namespace: Api<ConfigMap> = Api::namespaced(client.clone(), "nowhere");
        let named =
            ConfigMap { metadata: ObjectMeta { name: Some("c".into()), ..Default::default() }, ..Default::default() };
        assert_eq!(
            api_code(in_missing_namespace.create(&PostParams::default(), &named).await),
            Ok((404, "NotFound".into()))
        );

        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        config_maps.create(&PostParams::default(), &named).await?;
        let again = config_maps.create(&PostParams::default(), &named).await;
        assert_eq!(api_code(again), Ok((409, "AlreadyExists".into())));

        let nameless = ConfigMap::default();
        assert_eq!(api_code(config_maps.create(&PostParams::default(), &nameless).await), Ok((422, "Invalid".into())));

        let generated = ConfigMap {
            metadata: ObjectMeta { generate_name: Some("gen-".into()), ..Default::default() },
            ..Default::default()
        };
        let created = config_maps.create(&PostParams::default(), &generated).await?;
        let name = created.metadata.name.unwrap();
        assert!(name.starts_with("gen-") && name.len() == 9, "{name}");

        let mut other_namespace = named.clone();
        other_namespace.metadata.name = Some("d".into());
        other_namespace.metadata.namespace = Some("kube-system".into());
        assert_eq!(
            api_code(config_maps.create(&PostParams::default(), &other_namespace).await),
            Ok((400, "BadRequest".into()))
        );

        let mut bad_name = named;
        bad_name.metadata.name = Some("Not_Valid".into());
        assert_eq!(api_code(config_maps.create(&PostParams::default(), &bad_name).await), Ok((422, "Invalid".into())));
        Ok(())
    })
    .await
}
