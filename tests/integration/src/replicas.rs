//! `wasm-ccm run` as a process against an API server of either kind and the
//! fake cloud: the files a replica reads, its command line, and what the
//! replicas did, read back from the API server.

use std::path::Path;

use k8s_openapi::api::core::v1::{Event, Service};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use tempfile::TempDir;
use wasm_ccm_fake_cloud::FakeCloud;

use crate::backend::{Backend, TestApiServer};
use crate::guest_path;

/// An API server, the fake cloud, and the kubeconfig and fake provider
/// configuration replicas read.
pub struct Replicas {
    /// The API server.
    pub api: TestApiServer,
    /// The fake provider's cloud.
    pub cloud: FakeCloud,
    dir: TempDir,
}

impl Replicas {
    /// Starts `backend`'s API server and the fake cloud; the fake provider
    /// gets `faults`.
    pub async fn start(backend: &Backend, faults: Value) -> Self {
        let api = TestApiServer::start(backend).await;
        let cloud = FakeCloud::start().await.expect("the fake cloud starts");
        let dir = tempfile::Builder::new().prefix("wasm-ccm-replicas-").tempdir().expect("a temporary directory");
        api.write_controller_kubeconfig(&dir.path().join("kubeconfig"));
        let config = json!({"cloud": cloud.url(), "loadBalancerPool": ["198.51.100.0/24"], "faults": faults});
        std::fs::write(dir.path().join("fake.json"), config.to_string()).expect("the fake provider's configuration");
        Replicas { api, cloud, dir }
    }

    /// A directory that lives as long as the replicas, for their logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `wasm-ccm run` with the fake provider, its admin server on `port`
    /// over plain HTTP.
    pub fn args(&self, port: u16) -> Vec<String> {
        let path = |file: &str| self.dir.path().join(file).display().to_string();
        [
            "run",
            "--kubeconfig",
            &path("kubeconfig"),
            "--provider",
            &guest_path("provider-fake").display().to_string(),
            "--cloud-config",
            &path("fake.json"),
            "--provider-allow",
            &self.cloud.url(),
            "--secure-port",
            &port.to_string(),
            "--bind-address",
            "127.0.0.1",
            "--admin-plain-http",
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect()
    }

    /// Who holds the leader election Lease.
    pub async fn holder(&self) -> String {
        let lease = self.api.object("leases", Some("kube-system"), "cloud-controller-manager").await;
        lease.and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned)).unwrap_or_default()
    }

    /// Creates a LoadBalancer Service `name` in `default`.
    pub async fn create_service(&self, name: &str) {
        let services: Api<Service> = Api::namespaced(self.api.admin(), "default");
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        }))
        .expect("a Service");
        services.create(&PostParams::default(), &service).await.expect("the Service is created");
    }

    /// The ingress IP of Service `name`, once it has one.
    pub async fn ingress(&self, name: &str) -> Option<String> {
        let service = self.api.object("services", Some("default"), name).await?;
        service["status"]["loadBalancer"]["ingress"][0]["ip"].as_str().map(str::to_owned)
    }

    /// Who reported the `reason` events about Service `name`.
    pub async fn reporters(&self, reason: &str, name: &str) -> Vec<String> {
        let events: Api<Event> = Api::all(self.api.admin());
        let events = events.list(&ListParams::default()).await.expect("events").items;
        events
            .into_iter()
            .filter(|event| event.reason.as_deref() == Some(reason))
            .filter(|event| event.involved_object.name.as_deref() == Some(name))
            .filter_map(|event| event.reporting_instance)
            .collect()
    }
}
