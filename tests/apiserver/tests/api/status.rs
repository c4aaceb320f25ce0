use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::{server, within};

fn ingress(service: &Service) -> Vec<String> {
    let balancer = service.status.as_ref().and_then(|s| s.load_balancer.as_ref());
    balancer.and_then(|b| b.ingress.clone()).unwrap_or_default().into_iter().filter_map(|i| i.ip).collect()
}

#[tokio::test]
async fn the_main_resource_ignores_status_and_the_status_subresource_ignores_spec() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client, "default");
        let mut requested: Service = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}]}},
        }))?;
        let created = services.create(&PostParams::default(), &requested).await?;
        assert!(ingress(&created).is_empty(), "status is reset on create");

        requested = created.clone();
        requested.status = serde_json::from_value(json!({"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}}))?;
        requested.metadata.labels = Some([("via".to_string(), "main".to_string())].into());
        let replaced = services.replace("web", &PostParams::default(), &requested).await?;
        assert!(ingress(&replaced).is_empty(), "the main resource does not write status");
        assert_eq!(replaced.metadata.labels.as_ref().unwrap()["via"], "main");

        let mut status_write = replaced.clone();
        status_write.status = requested.status.clone();
        status_write.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
        status_write.metadata.labels = Some([("via".to_string(), "status".to_string())].into());
        let written = services.replace_status("web", &PostParams::default(), &status_write).await?;
        assert_eq!(ingress(&written), ["1.1.1.1"]);
        assert_eq!(written.spec.as_ref().unwrap().type_.as_deref(), Some("LoadBalancer"), "spec is kept");
        assert_eq!(written.metadata.labels.as_ref().unwrap()["via"], "status", "metadata is written");

        let patched = services
            .patch_status(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"via": "patch"}}, "spec": {"type": "NodePort"},
                                     "status": {"loadBalancer": {"ingress": [{"ip": "2.2.2.2"}]}}})),
            )
            .await?;
        assert_eq!(ingress(&patched), ["2.2.2.2"]);
        assert_eq!(patched.spec.unwrap().type_.as_deref(), Some("LoadBalancer"));
        assert_eq!(patched.metadata.labels.unwrap()["via"], "patch");

        let fetched = services.get_status("web").await?;
        assert_eq!(ingress(&fetched), ["2.2.2.2"]);
        Ok(())
    })
    .await
}
