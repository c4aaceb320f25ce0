use k8s_openapi::api::core::v1::{ConfigMap, Node, Service};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::{api_code, server, within};

async fn create_node(nodes: &Api<Node>, name: &str) -> anyhow::Result<Node> {
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"a": "1", "b": "2"}},
        "spec": {"taints": [
            {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
            {"key": "other", "effect": "NoExecute"}]},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady"},
                {"type": "MemoryPressure", "status": "False"}],
            "addresses": [{"type": "Hostname", "address": name}]},
    }))?;
    Ok(nodes.create(&PostParams::default(), &node).await?)
}

#[tokio::test]
async fn merge_and_json_patches_apply() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client);
        create_node(&nodes, "n1").await?;
        let merged = nodes
            .patch("n1", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"a": null, "c": "3"}}})))
            .await?;
        let labels = merged.metadata.labels.unwrap();
        assert_eq!(labels.keys().collect::<Vec<_>>(), ["b", "c"]);

        let operations: json_patch::Patch = serde_json::from_value(json!([
            {"op": "test", "path": "/metadata/labels/b", "value": "2"},
            {"op": "replace", "path": "/metadata/labels/b", "value": "20"},
        ]))?;
        let patched = nodes.patch("n1", &PatchParams::default(), &Patch::Json::<()>(operations)).await?;
        assert_eq!(patched.metadata.labels.unwrap()["b"], "20");

        let failing: json_patch::Patch =
            serde_json::from_value(json!([{"op": "test", "path": "/metadata/labels/b", "value": "2"}]))?;
        let failed = nodes.patch("n1", &PatchParams::default(), &Patch::Json::<()>(failing)).await;
        assert_eq!(api_code(failed), Ok((422, "Invalid".into())));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn strategic_merge_handles_finalizers_taints_conditions_and_addresses() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client);
        create_node(&nodes, "n1").await?;
        let params = PatchParams::default();

        let added = nodes.patch("n1", &params, &Patch::Strategic(json!({"metadata": {"finalizers": ["a", "b"]}}))).await?;
        assert_eq!(added.metadata.finalizers, Some(vec!["a".into(), "b".into()]));
        let union = nodes.patch("n1", &params, &Patch::Strategic(json!({"metadata": {"finalizers": ["c", "a"]}}))).await?;
        assert_eq!(union.metadata.finalizers, Some(vec!["a".into(), "b".into(), "c".into()]));
        let removed = nodes
            .patch("n1", &params, &Patch::Strategic(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "c"]}})))
            .await?;
        assert_eq!(removed.metadata.finalizers, Some(vec!["b".into()]));

        let untainted = nodes
            .patch("n1", &params, &Patch::Strategic(json!({"spec": {"taints": [{"key": "other", "effect": "NoExecute"}]}})))
            .await?;
        let taints = untainted.spec.unwrap().taints.unwrap();
        assert_eq!(taints.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), ["other"], "taints are replaced");

        let ready = nodes
            .patch_status(
                "n1",
                &params,
                &Patch::Strategic(json!({"status": {
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                    "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "ExternalIP", "address": "1.2.3.4"}],
                }})),
            )
            .await?;
        let status = ready.status.unwrap();
        let conditions: Vec<(String, String)> =
            status.conditions.unwrap().into_iter().map(|c| (c.type_, c.status)).collect();
        assert_eq!(conditions, [("Ready".into(), "True".into()), ("MemoryPressure".into(), "False".into())]);
        let addresses: Vec<String> = status.addresses.unwrap().into_iter().map(|a| a.type_).collect();
        assert_eq!(addresses, ["Hostname", "InternalIP", "ExternalIP"]);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn load_balancer_status_is_replaced_and_ports_merge_by_port() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client, "default");
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
        }))?;
        services.create(&PostParams::default(), &service).await?;
        let params = PatchParams::default();
        let ingress = |ips: &[&str]| json!({"status": {"loadBalancer": {"ingress": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>()}}});

        services.patch_status("web", &params, &Patch::Strategic(ingress(&["1.1.1.1", "2.2.2.2"]))).await?;
        let replaced = services.patch_status("web", &params, &Patch::Strategic(ingress(&["3.3.3.3"]))).await?;
        let ips: Vec<String> = replaced.status.unwrap().load_balancer.unwrap().ingress.unwrap().into_iter().filter_map(|i| i.ip).collect();
        assert_eq!(ips, ["3.3.3.3"]);

        let retargeted = services
            .patch("web", &params, &Patch::Strategic(json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}})))
            .await?;
        let ports = retargeted.spec.unwrap().ports.unwrap();
        assert_eq!(ports.len(), 2, "ports merge by port number");
        assert_eq!(ports[1].target_port, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8443)));
        assert!(ports[1].node_port.is_some(), "the node port survives the patch");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn patches_with_a_stale_resource_version_conflict_and_apply_is_unsupported() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        let created = config_maps
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "v"}}))?,
            )
            .await?;
        let version = created.metadata.resource_version.unwrap();
        let current = config_maps
            .patch(
                "c",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"resourceVersion": version}, "data": {"k": "w"}})),
            )
            .await?;
        assert_eq!(current.data.unwrap()["k"], "w");
        let stale = config_maps
            .patch(
                "c",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"resourceVersion": version}, "data": {"k": "x"}})),
            )
            .await;
        assert_eq!(api_code(stale), Ok((409, "Conflict".into())));

        let apply = config_maps
            .patch(
                "c",
                &PatchParams::apply("test"),
                &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
            )
            .await;
        assert_eq!(api_code(apply), Ok((415, "UnsupportedMediaType".into())));
        Ok(())
    })
    .await
}
