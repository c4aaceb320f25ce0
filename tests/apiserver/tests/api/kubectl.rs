use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::core::v1::{Event as CoreEvent, Node, Service};
use k8s_openapi::api::events::v1::Event as EventsV1;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::{server, within};

/// Whether the tests' `kubectl` runs.
fn kubectl_installed() -> bool {
    Command::new(wasm_ccm_test_support::kubectl())
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `kubectl` with `args` against the kubeconfig in `dir`, off the async runtime.
async fn kubectl(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let kubeconfig = dir.join("kubeconfig");
    let cache = dir.join("cache");
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(wasm_ccm_test_support::kubectl())
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(cache)
            .args(args)
            .output()
    })
    .await??;
    let stdout = String::from_utf8(output.stdout)?;
    anyhow::ensure!(output.status.success(), "kubectl failed: {}{stdout}", String::from_utf8_lossy(&output.stderr));
    Ok(stdout)
}

fn scratch_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("wasm-ccm-apiserver-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[tokio::test]
async fn kubectl_prints_tables_and_objects() -> anyhow::Result<()> {
    if !kubectl_installed() {
        eprintln!("skipping the kubectl assertions: no kubectl (TEST_ASSET_KUBECTL, KUBEBUILDER_ASSETS or the PATH)");
        return Ok(());
    }
    within(60, async {
        let (server, client) = server().await?;
        let nodes: Api<Node> = Api::all(client.clone());
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "worker-1", "labels": {"node-role.kubernetes.io/worker": ""}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {
                "kubeletVersion": "v1.33.1", "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                "osImage": "", "containerRuntimeVersion": "", "kubeProxyVersion": "", "operatingSystem": "linux",
                "architecture": "amd64"}},
        }))?;
        nodes.create(&PostParams::default(), &node).await?;
        let services: Api<Service> = Api::namespaced(client, "kube-system");
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "ingress"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}]},
        }))?;
        services.create(&PostParams::default(), &service).await?;
        let pending: Service = serde_json::from_value(json!({
            "metadata": {"name": "pending"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]},
        }))?;
        services.create(&PostParams::default(), &pending).await?;
        let ingress = json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
        services.patch_status("ingress", &PatchParams::default(), &Patch::Merge(ingress)).await?;

        let dir = scratch_dir()?;
        server.write_kubeconfig(&dir.join("kubeconfig"))?;
        let table = kubectl(&dir, &["get", "nodes,svc", "-A"]).await?;
        let lines: Vec<&str> = table.lines().collect();
        let header = |first: &str| lines.iter().find(|l| l.split_whitespace().next() == Some(first)).copied();
        let row =
            |name: &str| lines.iter().find(|l| l.contains(name)).map(|l| l.split_whitespace().collect::<Vec<_>>());
        assert!(
            header("NAME").is_some_and(|h| h.contains("STATUS") && h.contains("ROLES") && h.contains("VERSION")),
            "{table}"
        );
        assert!(header("NAMESPACE").is_some_and(|h| h.contains("CLUSTER-IP") && h.contains("PORT(S)")), "{table}");
        let worker = row("node/worker-1").expect(&table);
        assert_eq!(&worker[1..3], ["Ready", "worker"], "{table}");
        assert_eq!(worker.last(), Some(&"v1.33.1"), "{table}");
        let ingress = row("service/ingress").expect(&table);
        assert_eq!(ingress[0], "kube-system");
        assert_eq!(ingress[2], "LoadBalancer");
        assert!(ingress[3].starts_with("10."), "{table}");
        assert_eq!(&ingress[4..6], ["203.0.113.7", "80:30080/TCP"], "{table}");
        let pending = row("service/pending").expect(&table);
        assert_eq!(pending[4], "<pending>", "{table}");

        let object: serde_json::Value =
            serde_json::from_str(&kubectl(&dir, &["get", "node", "worker-1", "-o", "json"]).await?)?;
        assert_eq!(object["kind"], "Node");
        assert_eq!(object["metadata"]["name"], "worker-1");
        assert_eq!(object["status"]["nodeInfo"]["kubeletVersion"], "v1.33.1");
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn kubectl_prints_events_as_a_real_cluster() -> anyhow::Result<()> {
    if !kubectl_installed() {
        eprintln!("skipping the kubectl assertions: no kubectl (TEST_ASSET_KUBECTL, KUBEBUILDER_ASSETS or the PATH)");
        return Ok(());
    }
    within(60, async {
        let (server, client) = server().await?;
        // One event through each API, as the controllers and older recorders write them.
        let recorded: EventsV1 = serde_json::from_value(json!({
            "metadata": {"name": "web.1", "namespace": "default"},
            "eventTime": jiff::Timestamp::now().to_string(),
            "reportingController": "service-controller", "reportingInstance": "service-controller-host1",
            "action": "EnsuringLoadBalancer", "reason": "EnsuringLoadBalancer", "type": "Normal",
            "regarding": {"kind": "Service", "namespace": "default", "name": "web", "apiVersion": "v1"},
            "note": "Ensuring load balancer",
        }))?;
        Api::<EventsV1>::namespaced(client.clone(), "default").create(&PostParams::default(), &recorded).await?;
        let legacy: CoreEvent = serde_json::from_value(json!({
            "metadata": {"name": "node-a.2", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": "node-a"},
            "reason": "SyncLoadBalancerFailed", "message": "Error syncing load balancer: quota exceeded", "type": "Warning",
            "source": {"component": "cloud-node-controller"},
            "firstTimestamp": jiff::Timestamp::now().to_string(), "lastTimestamp": jiff::Timestamp::now().to_string(),
            "count": 2,
        }))?;
        Api::<CoreEvent>::namespaced(client, "default").create(&PostParams::default(), &legacy).await?;

        let dir = scratch_dir()?;
        server.write_kubeconfig(&dir.join("kubeconfig"))?;
        for resource in ["events", "events.events.k8s.io"] {
            let table = kubectl(&dir, &["get", resource, "-A"]).await?;
            let lines: Vec<&str> = table.lines().collect();
            let columns: Vec<&str> = lines[0].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
            assert_eq!(columns, ["NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], "{table}");
            let row = |name: &str| lines.iter().find(|l| l.contains(name)).map(|l| l.split_whitespace().collect::<Vec<_>>());
            let normal = row("service/web").expect(&table);
            assert_eq!(normal[0], "default");
            assert!(normal[1].ends_with('s'), "{table}");
            assert_eq!(&normal[2..], ["Normal", "EnsuringLoadBalancer", "service/web", "Ensuring", "load", "balancer"]);
            let warning = row("node/node-a").expect(&table);
            assert_eq!(&warning[2..5], ["Warning", "SyncLoadBalancerFailed", "node/node-a"], "{table}");
            assert!(lines.iter().any(|l| l.ends_with("Error syncing load balancer: quota exceeded")), "{table}");
        }
        let wide = kubectl(&dir, &["get", "events", "-o", "wide"]).await?;
        let header: Vec<&str> = wide.lines().next().unwrap_or_default().split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(
            header,
            ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"],
            "{wide}"
        );
        let recorded_row = wide.lines().find(|l| l.contains("service/web")).expect(&wide);
        assert!(recorded_row.contains("service-controller, service-controller-host1"), "{wide}");
        assert!(recorded_row.split_whitespace().collect::<Vec<_>>().ends_with(&["1", "web.1"]), "{wide}");
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    })
    .await
}
