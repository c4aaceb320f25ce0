//! The Helm chart in `deploy/chart/wasm-ccm`, with the real `helm`: it
//! lints, it renders the objects of the kustomize base and of each of its
//! components for the matching values, it refuses values that cannot work
//! together with a message saying what to change, and the API server takes
//! what it renders in a server-side dry run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use wasm_ccm_distribution::{SigningKey, sign_bytes};
use wasm_ccm_envtest::{ControlPlane, Identity, Options};
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::tools::Tool;
use wasm_ccm_tests::{guest, repository};

use crate::deploy::{Manifests, as_decoded, differences, yaml_documents};

/// A copy of the chart with a signed provider in it, as its values say to
/// make one.
struct Chart {
    dir: tempfile::TempDir,
    /// The public key the provider is signed with, in PEM.
    public_key: String,
}

impl Chart {
    fn new(wasm: &[u8]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        crate::deploy::copy_dir(&repository().join("deploy/chart/wasm-ccm"), &dir.path().join("wasm-ccm"));
        let key = SigningKey::generate().unwrap();
        let provider = dir.path().join("wasm-ccm/provider");
        std::fs::write(provider.join("provider.wasm"), wasm).unwrap();
        std::fs::write(provider.join("provider.wasm.sig"), sign_bytes(wasm, &key).unwrap()).unwrap();
        Chart { dir, public_key: key.public_key_pem().unwrap() }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("wasm-ccm")
    }

    /// A values file of `values` with the key set, as
    /// `--set-file trust.publicKey=cosign.pub` would.
    fn values(&self, name: &str, values: &Value) -> PathBuf {
        let mut values = values.clone();
        if values.pointer("/trust/publicKey").is_none() {
            values.as_object_mut().unwrap().insert("trust".to_owned(), json!({"publicKey": self.public_key}));
        }
        let file = self.dir.path().join(format!("{name}.values.json"));
        std::fs::write(&file, values.to_string()).unwrap();
        file
    }

    /// `helm` with `args` and the values file of `values`: its standard
    /// output, or its standard error.
    fn helm(&self, args: &[&str], name: &str, values: &Value) -> Result<String, String> {
        let output = Command::new(Tool::Helm.path())
            .args(args)
            .arg(self.path())
            .arg("--values")
            .arg(self.values(name, values))
            .env("HELM_CACHE_HOME", self.dir.path().join("helm-cache"))
            .env("HELM_CONFIG_HOME", self.dir.path().join("helm-config"))
            .env("HELM_DATA_HOME", self.dir.path().join("helm-data"))
            .output()
            .expect("helm runs");
        let stdout = String::from_utf8(output.stdout).unwrap();
        if output.status.success() { Ok(stdout) } else { Err(String::from_utf8_lossy(&output.stderr).into_owned()) }
    }

    /// What `helm template` renders in `kube-system` for `values`.
    fn template(&self, name: &str, values: &Value) -> Result<String, String> {
        self.helm(&["template", "wasm-ccm", "--namespace", "kube-system"], name, values)
    }
}

/// The value sets the chart is tested with, each with the kustomize
/// components it matches.
fn cases() -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        ("default", json!({}), vec!["pod-disruption-budget"]),
        (
            "controller-identities",
            json!({"controllerIdentities": {"enabled": true}}),
            vec!["pod-disruption-budget", "controller-identities"],
        ),
        (
            "providers-file",
            json!({"providersFile": {"enabled": true}}),
            vec!["pod-disruption-budget", "providers-file"],
        ),
        (
            "monitoring",
            json!({"monitoring": {"serviceMonitor": {"enabled": true}, "prometheusRule": {"enabled": true}}}),
            vec!["pod-disruption-budget", "monitoring"],
        ),
    ]
}

/// `name` without the hash kustomize adds to a generated ConfigMap's.
fn unhashed(name: &str) -> String {
    for generated in ["wasm-ccm-provider", "wasm-ccm-trust"] {
        if name.strip_prefix(generated).is_some_and(|rest| rest.len() == 11 && rest.starts_with('-')) {
            return generated.to_owned();
        }
    }
    name.to_owned()
}

/// `object` with what may differ between the chart and kustomize left out:
/// labels and annotations (Helm adds its own), ConfigMaps' name hashes,
/// the key and signature (made afresh for each), and the layout of the
/// YAML and JSON files a ConfigMap holds.
fn normal(object: &Value) -> Value {
    let mut object = as_decoded(object);
    for metadata in ["/metadata", "/spec/template/metadata"] {
        if let Some(metadata) = object.pointer_mut(metadata).and_then(Value::as_object_mut) {
            metadata.remove("labels");
            metadata.remove("annotations");
        }
    }
    let name = unhashed(object["metadata"]["name"].as_str().unwrap_or_default());
    object["metadata"]["name"] = json!(name);
    if let Some(volumes) = object.pointer_mut("/spec/template/spec/volumes").and_then(Value::as_array_mut) {
        for volume in volumes {
            if let Some(source) = volume.pointer_mut("/configMap/name") {
                *source = json!(unhashed(source.as_str().unwrap()));
            }
        }
    }
    let config_map = object["kind"] == "ConfigMap";
    if let Some(data) = object.get_mut("data").and_then(Value::as_object_mut).filter(|_| config_map) {
        for (key, value) in data.iter_mut() {
            let text = value.as_str().unwrap_or_default().to_owned();
            *value = if key.ends_with(".json") {
                serde_json::from_str(&text).unwrap_or_else(|err| panic!("{key}: {err}"))
            } else if key.ends_with(".yaml") {
                yaml_documents(&text).into_iter().next().unwrap_or(Value::Null)
            } else if key == "cosign.pub" || key == "provider.wasm.sig" {
                json!("(made for the test)")
            } else {
                json!(text)
            };
        }
    }
    object
}

/// The objects of `objects` by kind and name, normalised.
fn by_name(objects: &[Value]) -> BTreeMap<String, Value> {
    objects
        .iter()
        .map(|object| {
            let object = normal(object);
            (format!("{} {}", object["kind"].as_str().unwrap(), object["metadata"]["name"].as_str().unwrap()), object)
        })
        .collect()
}

#[test]
fn helm_lint_passes_for_every_value_set() {
    let chart = Chart::new(&guest("provider-fake"));
    let mut cases = cases();
    cases.push((
        "oci",
        json!({"provider": {"source": "oci", "oci": "oci://registry.example/providers/acme:1.2.0", "registryConfigSecret": "registry", "minimumVersion": "1.2.0"},
               "admin": {"tlsSecret": "wasm-ccm-tls"}, "monitoring": {"dashboard": {"enabled": true}}}),
        Vec::new(),
    ));
    for (name, values, _) in cases {
        let linted = chart.helm(&["lint", "--strict", "--namespace", "kube-system"], name, &values);
        let output = linted.unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(output.contains("1 chart(s) linted, 0 chart(s) failed"), "{name}: {output}");
    }
}

/// For each value set, the chart renders exactly the objects kustomize
/// makes of the base with the matching components, field for field.
#[test]
fn the_chart_renders_what_kustomize_builds() {
    let wasm = guest("provider-fake");
    let chart = Chart::new(&wasm);
    for (name, values, components) in cases() {
        let rendered = chart.template(name, &values).unwrap_or_else(|err| panic!("{name}: {err}"));
        let rendered = by_name(&yaml_documents(&rendered));
        let built = by_name(&Manifests::build_with(&wasm, None, &components).objects);
        let only = |a: &BTreeMap<String, Value>, b: &BTreeMap<String, Value>| -> Vec<String> {
            a.keys().filter(|key| !b.contains_key(*key)).cloned().collect()
        };
        assert_eq!(only(&rendered, &built), Vec::<String>::new(), "{name}: only the chart renders these");
        assert_eq!(only(&built, &rendered), Vec::<String>::new(), "{name}: only kustomize builds these");
        for (key, object) in &built {
            let mut found = Vec::new();
            differences("", object, &rendered[key], &mut found);
            assert_eq!(found, Vec::<String>::new(), "{name}: {key} differs from kustomize's");
        }
    }
}

#[test]
fn the_chart_rolls_the_pods_when_the_provider_changes() {
    let chart = Chart::new(&guest("provider-fake"));
    let checksum = |values: &Value| -> String {
        let rendered = yaml_documents(&chart.template("checksum", values).unwrap());
        let deployment = rendered.iter().find(|object| object["kind"] == "Deployment").unwrap();
        deployment["spec"]["template"]["metadata"]["annotations"]["checksum/configmaps"].as_str().unwrap().to_owned()
    };
    let first = checksum(&json!({}));
    assert_eq!(first.len(), 64, "{first}");
    assert_eq!(checksum(&json!({})), first, "the same values, the same pods");
    assert_ne!(checksum(&json!({"provider": {"cloudConfig": "{\"region\": \"us-east-1\"}"}})), first);
}

#[test]
fn values_that_cannot_work_together_are_refused() {
    let chart = Chart::new(&guest("provider-fake"));
    let refused = [
        (json!({"provider": {"source": "oci"}}), "provider.source=oci needs provider.oci"),
        (
            json!({"provider": {"oci": "oci://registry.example/acme:1"}}),
            "provider.oci is set but provider.source is chart",
        ),
        (
            json!({"provider": {"source": "oci", "oci": "registry.example/acme:1"}}),
            "provider.oci must start with oci://",
        ),
        (json!({"provider": {"source": "file"}}), "provider.source must be chart, configMap or oci"),
        (json!({"provider": {"source": "configMap"}}), "provider.source=configMap needs provider.configMapName"),
        (json!({"provider": {"minimumVersion": "1.0.0"}}), "provider.minimumVersion needs a signed OCI provider"),
        (
            json!({"provider": {"source": "oci", "oci": "oci://r.example/a:1", "sha256": "sha256:00"}}),
            "provider.sha256 pins a file or ConfigMap provider",
        ),
        (json!({"trust": {"publicKey": ""}}), "provider.requireSignature needs the key"),
        (
            json!({"providersFile": {"enabled": true}, "provider": {"source": "oci", "oci": "oci://r.example/a:1"}}),
            "providersFile.enabled replaces the single provider",
        ),
        (json!({"leaderElection": {"enabled": false}}), "replicas=2 needs leaderElection.enabled"),
        (json!({"replicas": 1}), "podDisruptionBudget.enabled needs replicas >= 2"),
        (
            json!({"admin": {"securePort": 0}, "monitoring": {"serviceMonitor": {"enabled": true}}}),
            "monitoring needs the admin server's /metrics",
        ),
        (json!({"cluster": {"configureRoutes": true}}), "cluster.configureRoutes needs cluster.cidr"),
    ];
    for (index, (values, expected)) in refused.iter().enumerate() {
        let err = chart.template(&format!("refused-{index}"), values).expect_err(expected);
        assert!(err.contains(expected), "{values}: {err}");
    }
    // Without a component in the chart, or its signature.
    std::fs::remove_file(chart.path().join("provider/provider.wasm.sig")).unwrap();
    let err = chart.template("unsigned", &json!({})).unwrap_err();
    assert!(err.contains("provider.requireSignature needs the signature beside the component"), "{err}");
    assert!(chart.template("unsigned-allowed", &json!({"provider": {"requireSignature": false}})).is_ok());
    std::fs::remove_file(chart.path().join("provider/provider.wasm")).unwrap();
    let err = chart.template("empty", &json!({"provider": {"requireSignature": false}})).unwrap_err();
    assert!(err.contains("copy it to provider/provider.wasm"), "{err}");
    // Other sources need no component in the chart.
    let values = json!({"provider": {"source": "configMap", "configMapName": "acme"}});
    let rendered = yaml_documents(&chart.template("configmap", &values).unwrap());
    let deployment = rendered.iter().find(|object| object["kind"] == "Deployment").unwrap();
    let volumes = deployment["spec"]["template"]["spec"]["volumes"].as_array().unwrap();
    assert!(volumes.iter().any(|volume| volume["configMap"]["name"] == "acme"), "{volumes:?}");
    assert!(!rendered.iter().any(|object| object["metadata"]["name"] == "wasm-ccm-provider"));
}

/// `kubectl` against `plane` as an administrator, with `args`.
fn kubectl(plane: &ControlPlane, dir: &Path, args: &[&str]) -> Result<String, String> {
    let kubeconfig = dir.join("admin.kubeconfig");
    plane.write_kubeconfig(Identity::Admin, &kubeconfig).unwrap();
    let output = Command::new(wasm_ccm_tests::kubectl())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    if output.status.success() {
        Ok(String::from_utf8(output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// On the real API server, with the Prometheus Operator's resources
/// defined: `kubectl apply --server-side --dry-run=server` takes every
/// object the chart renders for each value set (the API server validates
/// each against its schema, the custom resources against theirs), and
/// refuses one the chart could get wrong.
#[tokio::test(flavor = "multi_thread")]
async fn the_api_server_takes_the_rendered_chart() {
    let Some(Backend::Real(assets)) = Backend::real("chart::the_api_server_takes_the_rendered_chart") else {
        return;
    };
    let chart = Chart::new(&guest("provider-fake"));
    let crds = Tool::PrometheusOperatorCrds.path();
    let plane = ControlPlane::start(&assets, Options::default()).await.unwrap();
    let dir = chart.dir.path();
    for crd in ["monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"] {
        let file = crds.join(crd);
        kubectl(&plane, dir, &["apply", "--server-side", "-f", file.to_str().unwrap()]).unwrap();
    }
    let established =
        ["wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com"];
    kubectl(&plane, dir, &established).unwrap();
    kubectl(
        &plane,
        dir,
        &["wait", "--for=condition=Established", "--timeout=60s", "crd/prometheusrules.monitoring.coreos.com"],
    )
    .unwrap();

    let mut cases = cases();
    cases.push((
        "everything",
        json!({"controllerIdentities": {"enabled": true},
               "monitoring": {"serviceMonitor": {"enabled": true}, "prometheusRule": {"enabled": true},
                              "dashboard": {"enabled": true}},
               "admin": {"tlsSecret": "wasm-ccm-tls"}}),
        Vec::new(),
    ));
    cases.push((
        "oci",
        json!({"provider": {"source": "oci", "oci": "oci://registry.example/providers/acme:1.2.0",
                            "registryConfigSecret": "registry", "minimumVersion": "1.2.0"},
               "credentials": {"existingSecret": "acme-credentials"}}),
        Vec::new(),
    ));
    for (name, values, _) in cases {
        let rendered = chart.template(name, &values).unwrap();
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, &rendered).unwrap();
        // The control plane made deploy/'s RBAC objects: their fields are taken.
        let applied = kubectl(
            &plane,
            dir,
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--dry-run=server",
                "-o",
                "name",
                "-f",
                file.to_str().unwrap(),
            ],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        let expected: Vec<String> = yaml_documents(&rendered)
            .iter()
            .map(|object| {
                let kind = object["kind"].as_str().unwrap().to_lowercase();
                let group = object["apiVersion"].as_str().unwrap().rsplit_once('/').map(|(group, _)| group);
                let resource = match group {
                    Some(group) => format!("{kind}.{group}"),
                    None => kind,
                };
                format!("{resource}/{}", object["metadata"]["name"].as_str().unwrap())
            })
            .collect();
        let mut applied: Vec<&str> = applied.lines().collect();
        applied.sort_unstable();
        let mut expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        expected.sort_unstable();
        assert_eq!(applied, expected, "{name}: every object, dry run");
    }
    let admin = plane.client(Identity::Admin).await.unwrap();
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(admin.clone(), "kube-system");
    assert!(deployments.get_opt("wasm-ccm").await.unwrap().is_none(), "a dry run stores nothing");

    // Installed for real, with the fake provider in the chart: Helm's
    // record of the release, a Secret of at most 1 MiB, holds it. The RBAC
    // objects the control plane made from deploy/ are taken over, as when
    // moving from kustomize to the chart.
    let kubeconfig = dir.join("admin.kubeconfig");
    let kubeconfig = kubeconfig.to_str().unwrap();
    let install = ["install", "wasm-ccm", "--namespace", "kube-system", "--kubeconfig", kubeconfig, "--take-ownership"];
    let installed = chart.helm(&install, "install", &json!({})).unwrap_or_else(|err| panic!("helm install: {err}"));
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    assert!(deployments.get_opt("wasm-ccm").await.unwrap().is_some(), "the Deployment is installed");
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(admin, "kube-system");
    assert!(secrets.get_opt("sh.helm.release.v1.wasm-ccm.v1").await.unwrap().is_some(), "Helm's record");
    let uninstall = Command::new(Tool::Helm.path())
        .args(["uninstall", "wasm-ccm", "--namespace", "kube-system", "--kubeconfig", kubeconfig])
        .output()
        .unwrap();
    assert!(uninstall.status.success(), "helm uninstall: {}", String::from_utf8_lossy(&uninstall.stderr));

    // What the dry run catches: a field the schema does not have, in a
    // custom resource too.
    let rendered = chart.template("wrong", &json!({"monitoring": {"serviceMonitor": {"enabled": true}}})).unwrap();
    let wrong = rendered.replace("      scheme: https\n", "      scheme: https\n      schemes: [https]\n");
    assert_ne!(wrong, rendered);
    let file = dir.join("wrong.yaml");
    std::fs::write(&file, wrong).unwrap();
    let err = kubectl(&plane, dir, &["apply", "--server-side", "--dry-run=server", "-f", file.to_str().unwrap()])
        .unwrap_err();
    assert!(err.contains("schemes"), "{err}");
}
