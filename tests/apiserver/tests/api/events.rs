use k8s_openapi::api::core::v1::{Event as CoreEvent, Service};
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, PostParams};
use kube::runtime::events::{Event as Published, EventType, Recorder, Reporter};
use kube::{Api, Resource};
use serde_json::json;

use crate::{server, within};

#[tokio::test]
async fn recorded_events_are_listed_through_both_apis() -> anyhow::Result<()> {
    within(10, async {
        let (server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let service: Service =
            serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}))?;
        let service = services.create(&PostParams::default(), &service).await?;
        let reporter = Reporter { controller: "wasm-ccm".into(), instance: Some("test".into()) };
        let recorder = Recorder::new(client.clone(), reporter);
        let event = Published {
            type_: EventType::Normal,
            reason: "EnsuringLoadBalancer".into(),
            note: Some("Ensuring load balancer".into()),
            action: "Ensure".into(),
            secondary: None,
        };
        let reference = service.object_ref(&());
        recorder.publish(&event, &reference).await?;
        recorder.publish(&event, &reference).await?;

        let events: Api<Event> = Api::namespaced(client.clone(), "default");
        let listed = events.list(&ListParams::default()).await?;
        assert_eq!(listed.items.len(), 1, "the repeat patches the first event");
        let recorded = &listed.items[0];
        assert_eq!(recorded.series.as_ref().map(|s| s.count), Some(2));
        assert_eq!(recorded.reporting_controller.as_deref(), Some("wasm-ccm"));
        assert_eq!(recorded.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("web"));

        let core: Api<CoreEvent> = Api::namespaced(client, "default");
        let listed =
            core.list(&ListParams::default().fields("involvedObject.name=web,reason=EnsuringLoadBalancer")).await?;
        assert_eq!(listed.items.len(), 1);
        assert_eq!(listed.items[0].message.as_deref(), Some("Ensuring load balancer"));
        assert_eq!(listed.items[0].reporting_component.as_deref(), Some("wasm-ccm"));

        let name = recorded.metadata.name.clone().unwrap();
        let direct = server.object("events.events.k8s.io", Some("default"), &name).expect("stored");
        assert_eq!(direct["apiVersion"], "events.k8s.io/v1");
        assert_eq!(server.object("events", Some("default"), &name).expect("stored")["apiVersion"], "v1");
        Ok(())
    })
    .await
}
