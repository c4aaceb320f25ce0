//! Upstream's own cloud-controller-manager, built from the published
//! modules at the newest release, as the judge of what the controllers
//! should do: each scenario here runs twice on the real API server, with
//! upstream's binary and its fake provider, and with `wasm-ccm` and the
//! fake provider configured to answer as upstream's does (zone `zone-a`,
//! region `region-1`, InternalIP 10.0.0.5, ingress 203.0.113.10), and
//! expects the same of both. And what upstream's binary says of its flags.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Service};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use tempfile::TempDir;
use wasm_ccm_envtest::{ControlPlane, Identity, Options};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::process::Process;
use wasm_ccm_tests::{eventually, guest_path};

const PATIENCE: Duration = Duration::from_secs(60);

/// The controller manager a scenario runs.
#[derive(Debug, Clone, Copy)]
enum Manager {
    /// Upstream's, with `k8s.io/cloud-provider/fake`.
    Upstream,
    /// `wasm-ccm run` with the fake provider.
    WasmCcm,
}

/// A control plane and a controller manager running against it, as the
/// ServiceAccount each runs as in the benchmarks.
struct Running {
    admin: kube::Client,
    _process: Process,
    _cloud: Option<FakeCloud>,
    _dir: TempDir,
    _plane: ControlPlane,
}

/// Starts the real control plane and `manager` on it; `None` (said on the
/// terminal) without the real API server's binaries.
async fn start(manager: Manager, test: &str) -> Option<Running> {
    let Backend::Real(assets) = Backend::real(test)? else { return None };
    let plane = ControlPlane::start(&assets, Options::default()).await.expect("the control plane starts");
    let dir = tempfile::tempdir().expect("a directory");
    let kubeconfig = dir.path().join("kubeconfig");
    let (args, binary, cloud) = match manager {
        Manager::Upstream => {
            plane.write_kubeconfig(Identity::UpstreamControllerManager, &kubeconfig).expect("a kubeconfig");
            let args = [
                "--cloud-provider=fake",
                "--secure-port=0",
                "--allocate-node-cidrs=false",
                "--configure-cloud-routes=false",
                "--controllers=*,-route",
            ];
            let mut args: Vec<String> = args.map(str::to_owned).to_vec();
            args.push(format!("--kubeconfig={}", kubeconfig.display()));
            (args, assets.upstream_ccm().expect("upstream's cloud-controller-manager beside kube-apiserver"), None)
        }
        Manager::WasmCcm => {
            plane.write_kubeconfig(Identity::CloudControllerManager, &kubeconfig).expect("a kubeconfig");
            let cloud = FakeCloud::start().await.expect("the fake cloud starts");
            let config = dir.path().join("fake.json");
            let instance = json!({"name": "node-a", "id": "i-a", "zone": "zone-a", "region": "region-1",
                                  "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]});
            let fake = json!({"cloud": cloud.url(), "loadBalancerPool": ["203.0.113.10/32"], "instances": [instance]});
            std::fs::write(&config, fake.to_string()).expect("the fake provider's configuration");
            let provider = guest_path("provider-fake");
            let args = [
                "run",
                "--secure-port=0",
                "--configure-cloud-routes=false",
                "--controllers=*,-route",
                &format!("--kubeconfig={}", kubeconfig.display()),
                &format!("--provider={}", provider.display()),
                &format!("--cloud-config={}", config.display()),
                &format!("--provider-allow={}", cloud.url()),
            ];
            (args.map(str::to_owned).to_vec(), crate::binary().to_owned(), Some(cloud))
        }
    };
    let log = dir.path().join("manager.log");
    let process = Process::start_logged(&binary, &args, &[("POD_NAME", "judged")], &log);
    let admin = plane.client(Identity::Admin).await.expect("an admin client");
    Some(Running { admin, _process: process, _cloud: cloud, _dir: dir, _plane: plane })
}

async fn create<K>(api: &Api<K>, object: serde_json::Value) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let object: K = serde_json::from_value(object).expect("an object");
    api.create(&PostParams::default(), &object).await.expect("created")
}

const UNINITIALIZED: &str = "node.cloudprovider.kubernetes.io/uninitialized";

/// Node `node-a` as kubelet registers it with `--provider-id`: upstream
/// leaves a node tainted whose provider ID neither kubelet nor the cloud
/// sets, and its fake sets none.
async fn node_a(admin: &kube::Client) -> Node {
    let node = json!({
        "metadata": {"name": "node-a"},
        "spec": {
            "providerID": "fake://i-a",
            "taints": [{"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"}],
        },
    });
    create(&Api::<Node>::all(admin.clone()), node).await
}

/// A node is initialised from the cloud: the uninitialized taint goes, and
/// it has the cloud's zone, region and address. Upstream removes the taint
/// before it writes the addresses (wasm-ccm writes them first), so both
/// are awaited.
async fn a_node_is_initialized_from_the_cloud(manager: Manager) {
    let Some(running) = start(manager, "upstream::a_node_is_initialized_from_the_cloud").await else { return };
    node_a(&running.admin).await;
    let nodes = Api::<Node>::all(running.admin.clone());
    let what = format!("{manager:?} to initialise node-a: no taint, zone-a, region-1, InternalIP 10.0.0.5");
    eventually(&what, PATIENCE, async || {
        let node = nodes.get("node-a").await.ok()?;
        let taints = node.spec.as_ref()?.taints.clone().unwrap_or_default();
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let addresses = node.status.as_ref()?.addresses.clone().unwrap_or_default();
        let initialized = taints.iter().all(|taint| taint.key != UNINITIALIZED)
            && labels.get("topology.kubernetes.io/zone").map(String::as_str) == Some("zone-a")
            && labels.get("topology.kubernetes.io/region").map(String::as_str) == Some("region-1")
            && addresses.iter().any(|address| address.type_ == "InternalIP" && address.address == "10.0.0.5");
        initialized.then_some(())
    })
    .await;
}

/// A LoadBalancer Service gets the cleanup finalizer, the cloud's ingress
/// and the service controller's events; deleted, it goes.
async fn a_load_balancer_s_life(manager: Manager) {
    let Some(running) = start(manager, "upstream::a_load_balancer_s_life").await else { return };
    node_a(&running.admin).await;
    let services = Api::<Service>::namespaced(running.admin.clone(), "default");
    let spec = json!({"metadata": {"name": "web"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
    create(&services, spec).await;
    let service = eventually(&format!("{manager:?} to publish an ingress"), PATIENCE, async || {
        let service = services.get("web").await.ok()?;
        let ingress = service.status.as_ref()?.load_balancer.as_ref()?.ingress.clone()?;
        (!ingress.is_empty()).then_some(service)
    })
    .await;
    let ingress = service.status.and_then(|status| status.load_balancer).and_then(|lb| lb.ingress).unwrap_or_default();
    assert_eq!(ingress[0].ip.as_deref(), Some("203.0.113.10"), "{manager:?}");
    let finalizers = service.metadata.finalizers.unwrap_or_default();
    assert!(finalizers.iter().any(|f| f == "service.kubernetes.io/load-balancer-cleanup"), "{manager:?}");
    let events = Api::<Event>::namespaced(running.admin.clone(), "default");
    let by_source = ListParams::default().fields("source=service-controller");
    eventually(&format!("{manager:?}'s EnsuredLoadBalancer event"), PATIENCE, async || {
        let listed = events.list(&by_source).await.ok()?.items;
        let reasons: BTreeSet<String> = listed.into_iter().filter_map(|event| event.reason).collect();
        (reasons.contains("EnsuringLoadBalancer") && reasons.contains("EnsuredLoadBalancer")).then_some(())
    })
    .await;
    services.delete("web", &DeleteParams::default()).await.expect("deleted");
    eventually(&format!("{manager:?} to let the Service go"), PATIENCE, async || {
        services.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
}

/// Each scenario, judged by upstream and run by wasm-ccm.
macro_rules! judged_by_upstream {
    ($($scenario:ident),+ $(,)?) => {
        mod upstream_ccm {
            $(
                #[::tokio::test]
                async fn $scenario() {
                    super::$scenario(super::Manager::Upstream).await;
                }
            )+
        }
        mod wasm_ccm {
            $(
                #[::tokio::test]
                async fn $scenario() {
                    super::$scenario(super::Manager::WasmCcm).await;
                }
            )+
        }
    };
}

judged_by_upstream!(a_node_is_initialized_from_the_cloud, a_load_balancer_s_life);

/// `wasm-ccm run` accepts the flags of this list (`args.rs`
/// `every_flag_of_upstream_s_newest_release_is_accepted`); it must be the
/// one upstream's binary gives, or the check proves nothing.
const CHECKED_FLAGS: &str = include_str!("../../../runtime/cli/src/options/upstream-flags.txt");

#[test]
fn the_flags_wasm_ccm_accepts_are_upstream_s_own() {
    let Some(Backend::Real(assets)) = Backend::real("upstream::the_flags_wasm_ccm_accepts_are_upstream_s_own") else {
        return;
    };
    let binary = assets.upstream_ccm().expect("upstream's cloud-controller-manager beside kube-apiserver");
    let help = std::process::Command::new(&binary).arg("--help").output().expect("it runs");
    let text = String::from_utf8_lossy(&help.stdout).into_owned() + &String::from_utf8_lossy(&help.stderr);
    let flags: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("-v, ").unwrap_or(line);
            let name = line.strip_prefix("--")?;
            name.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next()
        })
        .filter(|flag| !matches!(*flag, "help" | "version"))
        .collect();
    let checked: BTreeSet<&str> = CHECKED_FLAGS.lines().collect();
    assert!(flags.len() > 80, "upstream's --help lists its flags: {text}");
    assert_eq!(
        flags.difference(&checked).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "flags of {} missing from runtime/cli/src/options/upstream-flags.txt",
        binary.display()
    );
    assert_eq!(checked.difference(&flags).collect::<Vec<_>>(), Vec::<&&str>::new(), "flags upstream no longer has");
}
