use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{PartialObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::json;
use wasm_ccm_apiserver::{ApiServer, Config};

use crate::{server, within};

fn config_map(name: &str) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({"metadata": {"name": name}}))?)
}

fn event_name(event: &WatchEvent<ConfigMap>) -> (String, String) {
    match event {
        WatchEvent::Added(c) => ("ADDED".into(), c.metadata.name.clone().unwrap()),
        WatchEvent::Modified(c) => ("MODIFIED".into(), c.metadata.name.clone().unwrap()),
        WatchEvent::Deleted(c) => ("DELETED".into(), c.metadata.name.clone().unwrap()),
        WatchEvent::Bookmark(b) => ("BOOKMARK".into(), b.metadata.resource_version.clone()),
        WatchEvent::Error(e) => ("ERROR".into(), e.code.to_string()),
    }
}

#[tokio::test]
async fn a_watch_resumes_after_a_resource_version() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        let first = config_maps.create(&PostParams::default(), &config_map("a")?).await?;
        config_maps.create(&PostParams::default(), &config_map("b")?).await?;
        config_maps.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v"}}))).await?;
        config_maps.delete("b", &Default::default()).await?;

        let resumed = first.metadata.resource_version.unwrap();
        let events: Vec<_> = config_maps
            .watch(&WatchParams::default().disable_bookmarks(), &resumed)
            .await?
            .take(3)
            .try_collect()
            .await?;
        let seen: Vec<_> = events.iter().map(event_name).collect();
        assert_eq!(
            seen,
            [("ADDED".into(), "b".into()), ("MODIFIED".into(), "a".into()), ("DELETED".into(), "b".into())]
        );

        let from_start: Vec<_> =
            config_maps.watch(&WatchParams::default().disable_bookmarks(), "0").await?.take(1).try_collect().await?;
        assert_eq!(event_name(&from_start[0]), ("ADDED".into(), "a".into()), "rv 0 starts with the current objects");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn bookmarks_arrive_and_timeouts_end_the_stream() -> anyhow::Result<()> {
    within(10, async {
        let config = Config { bookmark_interval: Duration::from_millis(100), ..Config::default() };
        let server = ApiServer::start_with("127.0.0.1:0".parse()?, config).await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(server.client().await, "default");
        let revision = config_maps.list(&Default::default()).await?.metadata.resource_version.unwrap();
        let params = WatchParams::default().timeout(1);
        let events: Vec<_> = config_maps.watch(&params, &revision).await?.try_collect().await?;
        assert!(!events.is_empty(), "the stream ends after timeoutSeconds");
        for event in &events {
            assert_eq!(event_name(event), ("BOOKMARK".into(), revision.clone()));
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn objects_leaving_a_selector_are_deleted_from_the_watch() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        let params = WatchParams::default().disable_bookmarks().labels("app=web");
        let mut events = config_maps.watch(&params, "0").await?.boxed();
        config_maps.create(&PostParams::default(), &config_map("other")?).await?;
        config_maps
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "web", "labels": {"app": "web"}}}))?,
            )
            .await?;
        config_maps
            .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})))
            .await?;
        config_maps
            .patch("other", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})))
            .await?;
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(event_name(&events.try_next().await?.expect("an event")));
        }
        assert_eq!(
            seen,
            [("ADDED".into(), "web".into()), ("DELETED".into(), "web".into()), ("ADDED".into(), "other".into())]
        );
        Ok(())
    })
    .await
}

/// Applies watcher events until `done` holds for the objects seen; returns the objects and the errors.
async fn follow<S>(stream: &mut S, mut done: impl FnMut(&[String]) -> bool) -> (Vec<String>, Vec<watcher::Error>)
where
    S: Stream<Item = Result<watcher::Event<ConfigMap>, watcher::Error>> + Unpin,
{
    let (mut seen, mut errors) = (Vec::new(), Vec::new());
    while !done(&seen) {
        match stream.next().await.expect("the watcher does not end") {
            Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) => seen.push(c.metadata.name.unwrap()),
            Ok(watcher::Event::InitDone) => seen.push("<init done>".into()),
            Ok(_) => {}
            Err(error) => errors.push(error),
        }
    }
    (seen, errors)
}

fn config_map_watcher(client: Client) -> impl Stream<Item = Result<watcher::Event<ConfigMap>, watcher::Error>> + Unpin {
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    watcher(config_maps, watcher::Config::default()).boxed()
}

#[tokio::test]
async fn expired_resource_versions_make_the_watcher_relist() -> anyhow::Result<()> {
    within(15, async {
        let config = Config { bookmark_interval: Duration::from_secs(60), ..Config::default() };
        let server = ApiServer::start_with("127.0.0.1:0".parse()?, config).await?;
        let client = server.client().await;
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        config_maps.create(&PostParams::default(), &config_map("before")?).await?;
        let old = config_maps.list(&Default::default()).await?.metadata.resource_version.unwrap();

        let mut stream = config_map_watcher(client.clone());
        follow(&mut stream, |seen| seen.last().is_some_and(|s| s == "<init done>")).await;

        let nodes: Api<Node> = Api::all(client);
        nodes.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "n1"}}))?).await?;
        server.faults().expire_resource_versions();
        config_maps.create(&PostParams::default(), &config_map("meanwhile")?).await?;

        let (seen, errors) = follow(&mut stream, |seen| seen.iter().any(|s| s == "meanwhile")).await;
        assert!(
            errors.iter().any(|e| matches!(e, watcher::Error::WatchError(status) if status.code == 410)),
            "the resumed watch gets 410: {errors:?}"
        );
        assert!(seen.contains(&"before".to_string()), "the watcher listed again: {seen:?}");

        let resumed: Vec<_> = config_maps.watch(&WatchParams::default(), &old).await?.try_collect().await?;
        assert_eq!(resumed.len(), 1);
        let WatchEvent::Error(status) = &resumed[0] else { panic!("expected an ERROR event, got {resumed:?}") };
        assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
        assert!(status.message.starts_with(&format!("too old resource version: {old} (")), "{}", status.message);
        Ok(())
    })
    .await
}

/// Waits until the server has answered `count` watch requests for ConfigMaps.
async fn watches_opened(server: &ApiServer, count: u64) {
    while server.requests().get("watch", "configmaps") < count {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn dropped_watches_resume_without_missing_events() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        config_maps.create(&PostParams::default(), &config_map("first")?).await?;
        let (sender, mut received) = tokio::sync::mpsc::unbounded_channel();
        let mut stream = config_map_watcher(client);
        tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                let _ = sender.send(event);
            }
        });

        let mut seen = Vec::new();
        for (opened, name) in [(1, "second"), (2, "third")] {
            watches_opened(&server, opened).await;
            server.faults().drop_watches();
            config_maps.create(&PostParams::default(), &config_map(name)?).await?;
            while !seen.iter().any(|s| s == name) {
                match received.recv().await.expect("the watcher does not end")? {
                    watcher::Event::Apply(c) | watcher::Event::InitApply(c) => seen.push(c.metadata.name.unwrap()),
                    watcher::Event::Init => seen.push("<init>".into()),
                    _ => {}
                }
            }
        }
        assert_eq!(seen, ["<init>", "first", "second", "third"], "no relist, nothing missed");
        assert_eq!(server.requests().get("list", "configmaps"), 1);
        watches_opened(&server, 3).await;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn streaming_lists_end_with_the_initial_events_bookmark() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
        config_maps.create(&PostParams::default(), &config_map("a")?).await?;
        let mut stream = watcher(config_maps.clone(), watcher::Config::default().streaming_lists()).boxed();
        let (seen, errors) = follow(&mut stream, |seen| seen.last().is_some_and(|s| s == "<init done>")).await;
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(seen, ["a", "<init done>"]);
        assert_eq!(server.requests().get("list", "configmaps"), 0, "the watcher did not list");
        assert_eq!(server.requests().get("watch", "configmaps"), 1);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn metadata_watchers_get_partial_objects() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client.clone());
        nodes.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "n1"}}))?).await?;
        let listed = nodes.list_metadata(&Default::default()).await?;
        assert_eq!(listed.items[0].metadata.name.as_deref(), Some("n1"));

        let metadata: Api<PartialObjectMeta<Node>> = Api::all(client);
        let mut stream = watcher(metadata, watcher::Config::default()).boxed();
        loop {
            match stream.try_next().await?.expect("the watcher does not end") {
                watcher::Event::InitDone => break,
                watcher::Event::InitApply(node) => assert_eq!(node.metadata.name.as_deref(), Some("n1")),
                _ => {}
            }
        }
        nodes.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "n2"}}))?).await?;
        match stream.try_next().await?.expect("the watcher does not end") {
            watcher::Event::Apply(node) => assert_eq!(node.metadata.name.as_deref(), Some("n2")),
            other => panic!("expected the new node, got {other:?}"),
        }
        Ok(())
    })
    .await
}
