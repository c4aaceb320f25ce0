use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

use crate::{api_code, server, within};

async fn create(config_maps: &Api<ConfigMap>, name: &str, labels: serde_json::Value) -> anyhow::Result<ConfigMap> {
    let config_map = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?;
    Ok(config_maps.create(&PostParams::default(), &config_map).await?)
}

fn names(list: &[ConfigMap]) -> Vec<String> {
    list.iter().map(|c| c.metadata.name.clone().unwrap()).collect()
}

#[tokio::test]
async fn pages_are_consistent_with_the_first_one() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        for index in 0..25 {
            create(&config_maps, &format!("cm-{index:02}"), json!({})).await?;
        }
        let first = config_maps.list(&ListParams::default().limit(10)).await?;
        assert_eq!(first.items.len(), 10);
        assert_eq!(first.metadata.remaining_item_count, Some(15));
        let revision = first.metadata.resource_version.clone();
        create(&config_maps, "cm-late", json!({})).await?;

        let mut all = names(&first.items);
        let mut token = first.metadata.continue_.clone();
        while let Some(next) = token.filter(|t| !t.is_empty()) {
            let page = config_maps.list(&ListParams::default().limit(10).continue_token(&next)).await?;
            assert_eq!(page.metadata.resource_version, revision, "every page is read at the first page's revision");
            all.extend(names(&page.items));
            token = page.metadata.continue_;
        }
        let expected: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
        assert_eq!(all, expected);
        assert_eq!(config_maps.list(&ListParams::default()).await?.items.len(), 26);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn continue_tokens_expire_with_compaction() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        for index in 0..3 {
            create(&config_maps, &format!("cm-{index}"), json!({})).await?;
        }
        let first = config_maps.list(&ListParams::default().limit(1)).await?;
        create(&config_maps, "cm-new", json!({})).await?;
        server.faults().expire_resource_versions();
        let token = first.metadata.continue_.expect("a continue token");
        let expired = config_maps.list(&ListParams::default().limit(1).continue_token(&token)).await;
        assert_eq!(api_code(expired), Ok((410, "Expired".into())));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn label_and_field_selectors_filter() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        create(&config_maps, "prod", json!({"env": "prod", "tier": "web"})).await?;
        create(&config_maps, "dev", json!({"env": "dev"})).await?;
        create(&config_maps, "plain", json!({})).await?;
        let select = |selector: &str| {
            let config_maps = config_maps.clone();
            let params = ListParams::default().labels(selector);
            async move { anyhow::Ok(names(&config_maps.list(&params).await?.items)) }
        };
        assert_eq!(select("env=prod").await?, ["prod"]);
        assert_eq!(select("env!=prod").await?, ["dev", "plain"]);
        assert_eq!(select("env in (dev,prod)").await?, ["dev", "prod"]);
        assert_eq!(select("env notin (dev)").await?, ["plain", "prod"]);
        assert_eq!(select("env").await?, ["dev", "prod"]);
        assert_eq!(select("!env").await?, ["plain"]);
        assert_eq!(select("env=prod,tier=web").await?, ["prod"]);

        let by_name = config_maps.list(&ListParams::default().fields("metadata.name=dev")).await?;
        assert_eq!(names(&by_name.items), ["dev"]);
        let unsupported = config_maps.list(&ListParams::default().fields("spec.nodeName=x")).await;
        assert_eq!(api_code(unsupported), Ok((400, "BadRequest".into())));
        Ok(())
    })
    .await
}
