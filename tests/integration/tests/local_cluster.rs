//! `wasm-ccm local --kubeconfig`: the fake cloud for an existing cluster,
//! here a real kube-apiserver, with wasm-ccm acting as deploy/'s identity.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;
use wasm_ccm_controllers::UNINITIALIZED_TAINT;
use wasm_ccm_envtest::{ControlPlane, Identity, Options};
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::process::Process;
use wasm_ccm_tests::{NodeFixture, ServiceFixture, eventually, guest};

#[tokio::test]
async fn local_gives_an_existing_cluster_a_fake_cloud() {
    let Some(Backend::Real(assets)) =
        Backend::real(concat!(module_path!(), "::local_gives_an_existing_cluster_a_fake_cloud"))
    else {
        return;
    };
    let plane = ControlPlane::start(&assets, Options::default()).await.expect("the real API server");
    let admin = plane.client(Identity::Admin).await.unwrap();
    let nodes: Api<Node> = Api::all(admin.clone());
    let zoned = [("topology.kubernetes.io/zone", "rack-2"), ("node.kubernetes.io/instance-type", "bare-metal")];
    for (name, address, labels) in [("worker-a", "172.18.0.2", &[][..]), ("worker-b", "172.18.0.3", &zoned)] {
        // As a kubelet with `--cloud-provider=external` registers it.
        let node = Node::test(name)
            .with_taint(UNINITIALIZED_TAINT)
            .with_addresses(&[("InternalIP", address), ("Hostname", name)])
            .with_labels(labels);
        nodes.create(&PostParams::default(), &node).await.unwrap();
    }
    let shop: Namespace = serde_json::from_value(json!({"metadata": {"name": "shop"}})).unwrap();
    Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &shop).await.unwrap();
    let default: Api<Service> = Api::namespaced(admin.clone(), "default");
    default.create(&PostParams::default(), &Service::test("web")).await.unwrap();
    default.create(&PostParams::default(), &Service::test("internal").with_type("ClusterIP")).await.unwrap();
    let shop: Api<Service> = Api::namespaced(admin.clone(), "shop");
    shop.create(&PostParams::default(), &Service::test("api").with_namespace("shop")).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(Identity::CloudControllerManager, &kubeconfig).unwrap();
    let provider = dir.path().join("fake.wasm");
    std::fs::write(&provider, &*guest("provider-fake")).unwrap();
    let output = dir.path().join("output");
    let args: Vec<String> = ["local", "--admin-port", "0", "--load-balancer-pool", "198.51.100.0/28", "--kubeconfig"]
        .into_iter()
        .map(String::from)
        .chain([kubeconfig.display().to_string(), "--provider".into(), provider.display().to_string()])
        .collect();
    let mut local = Process::start_logged(crate::binary(), &args, &[], &output);
    eventually("the summary", Duration::from_secs(30), async || {
        let text = std::fs::read_to_string(&output).ok()?;
        text.contains("keeps running").then_some(())
    })
    .await;
    let text = std::fs::read_to_string(&output).unwrap();
    assert!(text.contains(&format!("cluster of {}, fake cloud at http://127.0.0.1:", kubeconfig.display())), "{text}");
    assert!(text.contains("initialising 2 nodes and provisioning 2 load balancers..."), "{text}");
    assert!(text.contains("node worker-a: initialised as fake://worker-a"), "{text}");
    assert!(text.contains("service default/web: load balancer at 198.51.100."), "{text}");
    assert!(text.contains("service shop/api: load balancer at 198.51.100."), "{text}");
    assert!(!text.contains("internal"), "{text}");

    // The nodes keep their own addresses and get the cloud's labels.
    let worker_b = nodes.get("worker-b").await.unwrap();
    assert_eq!(worker_b.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()), Some("fake://worker-b"));
    let labels = worker_b.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("topology.kubernetes.io/zone").map(String::as_str), Some("rack-2"));
    assert_eq!(labels.get("node.kubernetes.io/instance-type").map(String::as_str), Some("bare-metal"));
    let addresses = worker_b.status.and_then(|status| status.addresses).unwrap_or_default();
    let internal_ips: Vec<&str> =
        addresses.iter().filter(|a| a.type_ == "InternalIP").map(|a| a.address.as_str()).collect();
    assert_eq!(internal_ips, ["172.18.0.3"]);
    let internal = default.get("internal").await.unwrap();
    assert!(internal.status.and_then(|status| status.load_balancer).and_then(|lb| lb.ingress).is_none());

    local.signal("INT");
    let exit = local.wait(Duration::from_secs(15)).await.expect("local stops on Ctrl-C");
    assert!(exit.success(), "{exit:?}");
    assert!(kubeconfig.exists(), "the cluster's kubeconfig is left alone");
    assert_eq!(nodes.list(&Default::default()).await.unwrap().items.len(), 2, "no node was deleted");
}
