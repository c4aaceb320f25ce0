//! The manifests in `deploy/`: every object `kubectl kustomize` makes of
//! them is a valid Kubernetes object that kubectl accepts, the Deployment
//! runs `wasm-ccm` as its comments say, and the RBAC rules grant exactly the
//! requests the controllers make.
//!
//! Schemas are checked by a round trip through k8s-openapi's typed structs:
//! a field the struct does not know (a misspelt one) is dropped on the way
//! and shows as a difference. The API server harness serves no OpenAPI, so
//! kubectl runs with `--validate=false` against it: it maps every object to
//! a served resource through discovery, and the harness checks names and
//! namespaces of a dry-run create.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Node, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::{Deserialize as _, DeserializeOwned};
use serde_json::{Value, json};
use wasm_ccm_apiserver::{ApiServer, RequestAttributes, RequestCounts};
use wasm_ccm_distribution::{SigningKey, sign_bytes};
use wasm_ccm_envtest::{ControlPlane, Identity, Options};
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::backend::Backend;
use wasm_ccm_tests::process::{Process, https_get};
use wasm_ccm_tests::{free_port, guest, repository};

/// The namespace the kustomization puts everything in.
const NAMESPACE: &str = "kube-system";
/// The largest ConfigMap the API server accepts: its values, decoded, add up
/// to at most 1 MiB.
const MAX_CONFIGMAP_BYTES: usize = 1024 * 1024;
/// How long the run waits for the controllers before it fails.
const PATIENCE: Duration = Duration::from_secs(30);

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every document of a YAML stream, as JSON values.
pub(crate) fn yaml_documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| Value::deserialize(document).expect("a YAML document"))
        .filter(|document| !document.is_null())
        .collect()
}

/// What `kubectl kustomize` makes of a copy of `deploy/`.
pub(crate) struct Manifests {
    /// The copy, with the provider in `deploy/provider/`.
    pub(crate) dir: tempfile::TempDir,
    /// The objects, in kustomize's order, base64 values unwrapped.
    pub(crate) objects: Vec<Value>,
}

impl Manifests {
    /// Builds `deploy/` with `wasm` as `provider/provider.wasm` and, when
    /// given, `cloud_config` as `provider/cloud-config.json`, as its README
    /// says to.
    fn build(wasm: &[u8], cloud_config: Option<&str>) -> Self {
        Self::build_with(wasm, cloud_config, &[])
    }

    /// Builds `deploy/` as [`Manifests::build`], through an overlay that
    /// adds the `components` of `deploy/components/`.
    pub(crate) fn build_with(wasm: &[u8], cloud_config: Option<&str>, components: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let deploy = dir.path().join("deploy");
        copy_dir(&repository().join("deploy"), &deploy);
        std::fs::write(deploy.join("provider/provider.wasm"), wasm).unwrap();
        // The secure form: the provider signed, the key in its own ConfigMap.
        let key = SigningKey::generate().unwrap();
        std::fs::write(deploy.join("provider/provider.wasm.sig"), sign_bytes(wasm, &key).unwrap()).unwrap();
        std::fs::write(deploy.join("trust/cosign.pub"), key.public_key_pem().unwrap()).unwrap();
        if let Some(config) = cloud_config {
            std::fs::write(deploy.join("provider/cloud-config.json"), config).unwrap();
        }
        let overlay = dir.path().join("overlay");
        std::fs::create_dir_all(&overlay).unwrap();
        let components: Vec<String> =
            components.iter().map(|component| format!("../deploy/components/{component}")).collect();
        let kustomization = json!({"resources": ["../deploy"], "components": components});
        std::fs::write(overlay.join("kustomization.yaml"), kustomization.to_string()).unwrap();
        let output =
            Command::new(wasm_ccm_tests::kubectl()).arg("kustomize").arg(&overlay).output().expect("kubectl runs");
        assert!(output.status.success(), "kubectl kustomize: {}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8(output.stdout).expect("kustomize prints UTF-8");
        std::fs::write(dir.path().join("built.yaml"), &text).unwrap();
        Manifests { dir, objects: yaml_documents(&text).iter().map(as_decoded).collect() }
    }

    /// The file holding every built object.
    pub(crate) fn built(&self) -> PathBuf {
        self.dir.path().join("built.yaml")
    }

    /// The objects of `kind`.
    fn all(&self, kind: &str) -> Vec<&Value> {
        self.objects.iter().filter(|object| object["kind"] == kind).collect()
    }

    /// The ConfigMap generated under `name` (kustomize adds a hash).
    fn generated(&self, name: &str) -> ConfigMap {
        let prefix = format!("{name}-");
        let found: Vec<&Value> = self
            .all("ConfigMap")
            .into_iter()
            .filter(|object| object["metadata"]["name"].as_str().is_some_and(|found| found.starts_with(&prefix)))
            .collect();
        assert_eq!(found.len(), 1, "one ConfigMap {name}");
        serde_json::from_value(found[0].clone()).unwrap_or_else(|err| panic!("the ConfigMap {name}: {err}"))
    }

    /// The one object of `kind`, typed.
    fn one<T: DeserializeOwned>(&self, kind: &str) -> T {
        let objects = self.all(kind);
        assert_eq!(objects.len(), 1, "one {kind}");
        serde_json::from_value(objects[0].clone()).unwrap_or_else(|err| panic!("the {kind}: {err}"))
    }

    /// The object of `kind` named `name`, typed.
    fn named<T: DeserializeOwned>(&self, kind: &str, name: &str) -> T {
        let object = self
            .all(kind)
            .into_iter()
            .find(|object| object["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name}"));
        serde_json::from_value(object.clone()).unwrap_or_else(|err| panic!("the {kind} {name}: {err}"))
    }

    fn deployment(&self) -> Deployment {
        self.one("Deployment")
    }
}

fn container(deployment: &Deployment) -> Container {
    let spec = deployment.spec.template.spec.as_ref().expect("a pod spec");
    assert_eq!(spec.containers.len(), 1, "one container");
    spec.containers[0].clone()
}

/// `object` as the API server decodes it: base64 values may be wrapped over
/// lines (kustomize wraps them), which the server's decoder skips.
pub(crate) fn as_decoded(object: &Value) -> Value {
    let mut object = object.clone();
    let field = match object["kind"].as_str() {
        Some("ConfigMap") => "binaryData",
        Some("Secret") => "data",
        _ => return object,
    };
    if let Some(values) = object.get_mut(field).and_then(Value::as_object_mut) {
        for value in values.values_mut() {
            if let Some(text) = value.as_str() {
                *value = Value::String(text.chars().filter(|c| *c != '\n' && *c != '\r').collect());
            }
        }
    }
    object
}

fn again<T: DeserializeOwned + Serialize>(object: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(object.clone()).map_err(|err| err.to_string())?;
    serde_json::to_value(&typed).map_err(|err| err.to_string())
}

/// Where `original` and `back` differ, by path.
pub(crate) fn differences(path: &str, original: &Value, back: &Value, found: &mut Vec<String>) {
    match (original, back) {
        (Value::Object(original), Value::Object(back)) => {
            for (key, value) in original {
                let path = format!("{path}.{key}");
                match back.get(key) {
                    Some(other) => differences(&path, value, other, found),
                    None => found.push(format!("{path} is not a field of the typed object")),
                }
            }
            for key in back.keys().filter(|key| !original.contains_key(*key)) {
                found.push(format!("{path}.{key} appeared"));
            }
        }
        (Value::Array(original), Value::Array(back)) if original.len() == back.len() => {
            for (index, (value, other)) in original.iter().zip(back).enumerate() {
                differences(&format!("{path}[{index}]"), value, other, found);
            }
        }
        _ if original == back => {}
        _ => found.push(format!("{path}: {original} became {back}")),
    }
}

/// Deserialises `object` into its k8s-openapi struct and serialises it
/// back; the differences if anything was lost or changed on the way.
fn round_trip(object: &Value) -> Result<(), String> {
    let object = as_decoded(object);
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let back = match (api_version, kind) {
        ("v1", "ServiceAccount") => again::<ServiceAccount>(&object),
        ("v1", "ConfigMap") => again::<ConfigMap>(&object),
        ("v1", "Secret") => again::<Secret>(&object),
        ("apps/v1", "Deployment") => again::<Deployment>(&object),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => again::<ClusterRole>(&object),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => again::<ClusterRoleBinding>(&object),
        ("rbac.authorization.k8s.io/v1", "Role") => again::<Role>(&object),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => again::<RoleBinding>(&object),
        _ => return Err(format!("no typed struct for {api_version} {kind}")),
    }?;
    let mut found = Vec::new();
    differences("", &object, &back, &mut found);
    if found.is_empty() { Ok(()) } else { Err(found.join("; ")) }
}

#[test]
fn every_manifest_survives_a_round_trip_through_the_typed_structs() {
    let manifests = Manifests::build(&guest("provider-aws"), None);
    let kinds: BTreeSet<&str> = manifests.objects.iter().filter_map(|object| object["kind"].as_str()).collect();
    let expected = [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "Role",
        "RoleBinding",
        "Secret",
        "ServiceAccount",
    ];
    assert_eq!(kinds, BTreeSet::from(expected));
    // Two ClusterRoles (the controllers', the scrapers') and two ConfigMaps
    // (the provider, the key it is signed with); one of each other kind.
    assert_eq!(manifests.objects.len(), expected.len() + 2);
    assert_eq!((manifests.all("ClusterRole").len(), manifests.all("ConfigMap").len()), (2, 2));
    for object in &manifests.objects {
        let name = format!("{} {}", object["kind"], object["metadata"]["name"]);
        if let Err(lost) = round_trip(object) {
            panic!("{name} does not survive the round trip: {lost}");
        }
        let cluster_scoped = matches!(object["kind"].as_str(), Some("ClusterRole" | "ClusterRoleBinding"));
        let namespace = object["metadata"]["namespace"].as_str();
        assert_eq!(namespace, (!cluster_scoped).then_some(NAMESPACE), "{name}'s namespace");
        assert_eq!(object["metadata"]["labels"]["app.kubernetes.io/name"], "wasm-ccm", "{name}'s labels");
    }
}

#[test]
fn a_misspelt_field_fails_the_round_trip() {
    let manifests = Manifests::build(&guest("provider-fake"), None);
    let mut deployment = manifests.all("Deployment")[0].clone();
    assert_eq!(round_trip(&deployment), Ok(()));
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = json!(true);
    let lost = round_trip(&deployment).expect_err("a misspelt field is caught");
    assert!(
        lost.contains(".spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem is not a field"),
        "{lost}"
    );

    let snippets = [
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: x}\nrules:\n- apiGroups: ['']\n  resources: [nodes]\n  resourceName: [a]\n  verbs: [get]\n",
            ".rules[0].resourceName is not a field",
        ),
        ("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nstringdata: {key: value}\n", ".stringdata is not a field"),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n  selector: {}\n  template: {}\n",
            ".spec.replica is not a field",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: two\n  selector: {}\n  template: {}\n",
            "invalid type",
        ),
        ("apiVersion: v1\nkind: ConfigMaps\nmetadata: {name: x}\n", "no typed struct for v1 ConfigMaps"),
        ("apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: x}\n", "no typed struct"),
    ];
    for (snippet, expected) in snippets {
        let object = &yaml_documents(snippet)[0];
        let lost = round_trip(object).expect_err(snippet);
        assert!(lost.contains(expected), "{snippet}: {lost}");
    }
}

/// The flags of `args` given as `--name=value`, by name.
fn flags(args: &[String]) -> BTreeMap<String, String> {
    args.iter()
        .skip(1)
        .map(|arg| {
            let (name, value) = arg.split_once('=').unwrap_or_else(|| panic!("{arg} is written --flag=value"));
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

#[test]
fn the_deployment_runs_wasm_ccm_as_documented() {
    let wasm = guest("provider-aws");
    let manifests = Manifests::build(&wasm, None);
    let deployment = manifests.deployment();
    let spec = deployment.spec.clone();
    assert_eq!(spec.replicas, Some(2));
    let pod = spec.template.spec.clone().unwrap();
    let container = container(&deployment);
    let args = container.args.clone().unwrap();
    assert_eq!(args[0], "run");
    let flags = flags(&args);
    assert_eq!(flags.len(), args.len() - 1, "no flag is given twice: {args:?}");
    assert_eq!(flags["--leader-elect"], "true");
    assert_eq!(flags["--leader-elect-resource-namespace"], "$(POD_NAMESPACE)");
    assert_eq!(flags["--secure-port"], "10258");
    assert!(!flags.contains_key("--admin-plain-http"), "the admin server speaks HTTPS");
    // Only a signed provider loads; the key comes from another ConfigMap.
    assert_eq!(flags["--provider-signature"], "/etc/wasm-ccm/provider/provider.wasm.sig");
    assert_eq!(flags["--provider-public-key"], "/etc/wasm-ccm/trust/cosign.pub");
    assert_eq!(container.image.as_deref(), Some("ghcr.io/wasm-ccm/wasm-ccm:0.1.0"), "kustomize sets the image");

    // The probes reach the admin server over HTTPS.
    let ports = container.ports.clone().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!((ports[0].name.as_deref(), ports[0].container_port), (Some("https"), 10258));
    for (probe, path) in [(&container.liveness_probe, "/livez"), (&container.readiness_probe, "/readyz")] {
        let get = probe.clone().and_then(|probe| probe.http_get).expect("an HTTP probe");
        assert_eq!(get.path.as_deref(), Some(path));
        assert_eq!(get.scheme.as_deref(), Some("HTTPS"));
        assert_eq!(serde_json::to_value(&get.port).unwrap(), json!("https"));
    }

    // Limits and a locked-down security context.
    let resources = container.resources.clone().unwrap();
    for (what, values) in [("requests", resources.requests), ("limits", resources.limits)] {
        let values = values.unwrap_or_default();
        assert!(values.contains_key("cpu") && values.contains_key("memory"), "{what}: {values:?}");
    }
    let security = container.security_context.clone().unwrap();
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(security.capabilities.and_then(|c| c.drop), Some(vec!["ALL".to_owned()]));
    let pod_security = pod.security_context.clone().unwrap();
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert!(pod_security.run_as_user.is_some_and(|uid| uid != 0));
    assert_eq!(pod_security.seccomp_profile.map(|profile| profile.type_), Some("RuntimeDefault".to_owned()));
    assert_eq!(pod.host_network, Some(false));

    // The downward API names the replica and its namespace.
    let env: BTreeMap<String, String> = container
        .env
        .clone()
        .unwrap()
        .into_iter()
        .map(|var| {
            let field = var.value_from.and_then(|from| from.field_ref).map(|field| field.field_path);
            (var.name, field.unwrap_or_default())
        })
        .collect();
    assert_eq!(
        env,
        BTreeMap::from([
            ("POD_NAME".to_owned(), "metadata.name".to_owned()),
            ("POD_NAMESPACE".to_owned(), "metadata.namespace".to_owned())
        ])
    );

    // It runs on new and control-plane nodes.
    let tolerations: BTreeSet<String> =
        pod.tolerations.clone().unwrap().into_iter().filter_map(|toleration| toleration.key).collect();
    for key in ["node.cloudprovider.kubernetes.io/uninitialized", "node-role.kubernetes.io/control-plane"] {
        assert!(tolerations.contains(key), "tolerates {key}");
    }

    // As the service account the bindings name.
    let account: ServiceAccount = manifests.one("ServiceAccount");
    assert_eq!(pod.service_account_name, account.metadata.name);
    let binding: ClusterRoleBinding = manifests.one("ClusterRoleBinding");
    let role_binding: RoleBinding = manifests.one("RoleBinding");
    for subjects in [binding.subjects, role_binding.subjects] {
        let subject = subjects.unwrap()[0].clone();
        assert_eq!((subject.kind.as_str(), Some(subject.name)), ("ServiceAccount", account.metadata.name.clone()));
        assert_eq!(subject.namespace.as_deref(), Some(NAMESPACE));
    }

    // Every file flag points into a read-only mount of the generated
    // ConfigMap or the Secret, at a key they hold; the one writable mount
    // is the compile cache's emptyDir.
    let volumes = pod.volumes.clone().unwrap();
    let (mounts, writable): (Vec<_>, Vec<_>) =
        container.volume_mounts.clone().unwrap().into_iter().partition(|mount| mount.read_only == Some(true));
    let [cache] = writable.as_slice() else { panic!("one writable mount: {writable:?}") };
    let cache_volume = volumes.iter().find(|volume| volume.name == cache.name).expect("its volume");
    assert!(cache_volume.empty_dir.is_some(), "{cache_volume:?}");
    assert!(
        args.iter()
            .any(|arg| arg.strip_prefix("--compile-cache=").is_some_and(|dir| dir.starts_with(&cache.mount_path))),
        "{args:?}"
    );
    let config_map: ConfigMap = manifests.generated("wasm-ccm-provider");
    let trust: ConfigMap = manifests.generated("wasm-ccm-trust");
    let secret: Secret = manifests.one("Secret");
    let keys_of = |mount_path: &str| -> BTreeSet<String> {
        let mount = mounts.iter().find(|mount| mount.mount_path == mount_path).expect("a mount");
        let volume = volumes.iter().find(|volume| volume.name == mount.name).expect("its volume");
        if let Some(source) = &volume.config_map {
            let config_map = [&config_map, &trust]
                .into_iter()
                .find(|config_map| config_map.metadata.name.as_ref() == Some(&source.name))
                .expect("a generated ConfigMap's name");
            let data = config_map.data.clone().unwrap_or_default().into_keys();
            data.chain(config_map.binary_data.clone().unwrap_or_default().into_keys()).collect()
        } else if let Some(source) = &volume.secret {
            assert_eq!(source.secret_name, secret.metadata.name.clone());
            let data = secret.data.clone().unwrap_or_default().into_keys();
            data.chain(secret.string_data.clone().unwrap_or_default().into_keys()).collect()
        } else {
            panic!("{mount_path} is neither the ConfigMap nor the Secret")
        }
    };
    for flag in ["--provider", "--provider-signature", "--provider-public-key", "--cloud-config"] {
        let path = Path::new(&flags[flag]);
        let keys = keys_of(path.parent().unwrap().to_str().unwrap());
        assert!(keys.contains(path.file_name().unwrap().to_str().unwrap()), "{flag}: {keys:?}");
    }
    let credentials = keys_of(&flags["--provider-credentials"]);
    assert_eq!(credentials, BTreeSet::from(["access-key-id".to_owned(), "secret-access-key".to_owned()]));

    // The ConfigMap carries the component byte for byte, within the API
    // server's size limit, and the configuration as text.
    let binary = config_map.binary_data.clone().unwrap();
    assert_eq!(binary["provider.wasm"].0, *wasm, "the component, byte for byte");
    let config = std::fs::read_to_string(repository().join("deploy/provider/cloud-config.json")).unwrap();
    assert_eq!(config_map.data.clone().unwrap()["cloud-config.json"], config);
    let size = wasm.len() + config.len();
    assert!(size <= MAX_CONFIGMAP_BYTES, "the AWS provider's ConfigMap holds {size} bytes, over 1 MiB");
}

/// A kubeconfig for `api` in `dir`.
fn kubeconfig(api: &ApiServer, dir: &Path) -> PathBuf {
    let path = dir.join("kubeconfig");
    api.write_kubeconfig(&path).unwrap();
    path
}

/// `kubectl create --dry-run=server --validate=false -o name -f file`
/// against `api`: its output, or its error.
async fn kubectl_create(api: &ApiServer, dir: &Path, file: PathBuf) -> Result<String, String> {
    let kubeconfig = kubeconfig(api, dir);
    let output = tokio::task::spawn_blocking(move || {
        Command::new(wasm_ccm_tests::kubectl())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["create", "--dry-run=server", "--validate=false", "-o", "name", "-f"])
            .arg(&file)
            .output()
            .expect("kubectl runs")
    })
    .await
    .unwrap();
    if output.status.success() {
        Ok(String::from_utf8(output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[tokio::test]
async fn kubectl_accepts_every_object() {
    let manifests = Manifests::build(&guest("provider-aws"), None);
    let api = ApiServer::start().await.unwrap();
    let created = kubectl_create(&api, manifests.dir.path(), manifests.built()).await.unwrap();
    let names: BTreeSet<&str> = created.lines().collect();
    let expected = BTreeSet::from([
        "serviceaccount/cloud-controller-manager",
        "role.rbac.authorization.k8s.io/wasm-ccm:cloud-controller-manager",
        "clusterrole.rbac.authorization.k8s.io/wasm-ccm:cloud-controller-manager",
        "clusterrole.rbac.authorization.k8s.io/wasm-ccm:metrics-reader",
        "rolebinding.rbac.authorization.k8s.io/wasm-ccm:cloud-controller-manager",
        "clusterrolebinding.rbac.authorization.k8s.io/wasm-ccm:cloud-controller-manager",
        "secret/wasm-ccm-credentials",
        "deployment.apps/wasm-ccm",
    ]);
    let (generated, named): (BTreeSet<&str>, BTreeSet<&str>) = names.iter().partition(|name| {
        name.starts_with("configmap/wasm-ccm-provider-") || name.starts_with("configmap/wasm-ccm-trust-")
    });
    assert_eq!(named, expected);
    assert_eq!(generated.len(), 2, "and the two ConfigMaps: {names:?}");
    let requests = api.requests();
    assert_eq!(requests.get("create", "deployments"), 1, "{requests}");
    assert!(api.object("deployments", Some(NAMESPACE), "wasm-ccm").is_none(), "a dry run stores nothing");

    // What this check catches: a kind no API group serves, and a name the
    // kind does not allow.
    let wrong = [
        (
            "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: x, namespace: kube-system}\n",
            "no matches for kind",
        ),
        (
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: Cloud_Controller, namespace: kube-system}\n",
            "Invalid value",
        ),
    ];
    for (index, (snippet, expected)) in wrong.into_iter().enumerate() {
        let file = manifests.dir.path().join(format!("wrong-{index}.yaml"));
        std::fs::write(&file, snippet).unwrap();
        let refused = kubectl_create(&api, manifests.dir.path(), file).await.expect_err(snippet);
        assert!(refused.contains(expected), "{snippet}: {refused}");
    }
}

/// The rules bound to one service account: those of the ClusterRoles its
/// ClusterRoleBindings name, in every namespace, and those of the Roles its
/// RoleBindings name, in theirs.
struct Grants {
    cluster: Vec<PolicyRule>,
    namespaced: Vec<(String, PolicyRule)>,
}

impl Grants {
    fn of(manifests: &Manifests, namespace: &str, account: &str) -> Self {
        let names_account = |subjects: &Option<Vec<k8s_openapi::api::rbac::v1::Subject>>| {
            subjects.iter().flatten().any(|subject| {
                subject.kind == "ServiceAccount"
                    && subject.name == account
                    && subject.namespace.as_deref() == Some(namespace)
            })
        };
        let mut grants = Grants { cluster: Vec::new(), namespaced: Vec::new() };
        for binding in manifests.all("ClusterRoleBinding") {
            let binding: ClusterRoleBinding = serde_json::from_value(binding.clone()).unwrap();
            if names_account(&binding.subjects) {
                assert_eq!(binding.role_ref.kind, "ClusterRole");
                let role: ClusterRole = manifests.named("ClusterRole", &binding.role_ref.name);
                grants.cluster.extend(role.rules.unwrap_or_default());
            }
        }
        for binding in manifests.all("RoleBinding") {
            let binding: RoleBinding = serde_json::from_value(binding.clone()).unwrap();
            if names_account(&binding.subjects) {
                assert_eq!(binding.role_ref.kind, "Role", "a RoleBinding of a Role");
                let role: Role = manifests.named("Role", &binding.role_ref.name);
                let namespace = binding.metadata.namespace.clone().expect("a namespaced binding");
                assert_eq!(
                    role.metadata.namespace.as_ref(),
                    Some(&namespace),
                    "the Role is in the binding's namespace"
                );
                grants
                    .namespaced
                    .extend(role.rules.unwrap_or_default().into_iter().map(|rule| (namespace.clone(), rule)));
            }
        }
        grants
    }

    /// Whether RBAC lets the account make `request`. Discovery and health
    /// checks are allowed to every authenticated user (the built-in
    /// `system:discovery` and `system:public-info-viewer` roles).
    fn allows(&self, request: &RequestAttributes) -> bool {
        match request {
            RequestAttributes::NonResource { verb, path, .. } => {
                const PUBLIC: &[&str] = &["/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz"];
                verb == "get" && PUBLIC.iter().any(|prefix| path == prefix || path.starts_with(&format!("{prefix}/")))
            }
            RequestAttributes::Resource { verb, group, resource, subresource, namespace, .. } => {
                let resource = match subresource {
                    Some(subresource) => format!("{resource}/{subresource}"),
                    None => resource.clone(),
                };
                self.cluster.iter().any(|rule| matches(rule, verb, group, &resource))
                    || self.namespaced.iter().any(|(granted, rule)| {
                        namespace.as_ref() == Some(granted) && matches(rule, verb, group, &resource)
                    })
            }
        }
    }
}

/// Whether `rule` grants `verb` on `group`'s `resource` (`plural` or
/// `plural/subresource`), as the RBAC authorizer matches them. Rules
/// limited to some objects by `resourceNames` match nothing here: the
/// controllers' lists, watches and creates name no object.
fn matches(rule: &PolicyRule, verb: &str, group: &str, resource: &str) -> bool {
    let has = |list: &Option<Vec<String>>, value: &str| list.iter().flatten().any(|item| item == "*" || item == value);
    rule.resource_names.iter().flatten().next().is_none()
        && rule.verbs.iter().any(|item| item == "*" || item == verb)
        && has(&rule.api_groups, group)
        && (has(&rule.resources, resource)
            || resource.split_once('/').is_some_and(|(plural, _)| has(&rule.resources, &format!("{plural}/*"))))
}

/// Every (group, resource, verb) a rule grants.
fn granted(rule: &PolicyRule) -> Vec<(String, String, String)> {
    let mut all = Vec::new();
    for group in rule.api_groups.iter().flatten() {
        for resource in rule.resources.iter().flatten() {
            for verb in &rule.verbs {
                all.push((group.clone(), resource.clone(), verb.clone()));
            }
        }
    }
    all
}

/// Resource requests by kind: (API group, resource or
/// resource/subresource, verb, namespace).
type Used = BTreeSet<(String, String, String, Option<String>)>;

/// The resource requests `user` made.
fn requests_of(counts: &RequestCounts, user: &str) -> Used {
    counts
        .attributes()
        .filter_map(|(request, _)| match request {
            RequestAttributes::Resource { user: Some(by), verb, group, resource, subresource, namespace }
                if by == user =>
            {
                let resource = match subresource {
                    Some(subresource) => format!("{resource}/{subresource}"),
                    None => resource.clone(),
                };
                Some((group.clone(), resource, verb.clone(), namespace.clone()))
            }
            _ => None,
        })
        .collect()
}

/// One line per kind of request, for failure messages.
fn listing(used: &Used) -> String {
    let lines: Vec<String> = used
        .iter()
        .map(|(group, resource, verb, namespace)| {
            format!("{verb} {resource} in group {group:?} in namespace {}", namespace.as_deref().unwrap_or("(all)"))
        })
        .collect();
    lines.join("\n")
}

/// The grants no request used: cluster-wide ones used in no namespace,
/// namespaced ones not used in theirs.
fn unused_grants(grants: &Grants, used: &Used) -> Vec<String> {
    let mut unused = Vec::new();
    for rule in &grants.cluster {
        for (group, resource, verb) in granted(rule) {
            if !used.iter().any(|(g, r, v, _)| (g, r, v) == (&group, &resource, &verb)) {
                unused.push(format!("ClusterRole: {verb} {resource} in group {group:?}"));
            }
        }
    }
    for (namespace, rule) in &grants.namespaced {
        for (group, resource, verb) in granted(rule) {
            let wanted = (group.clone(), resource.clone(), verb.clone(), Some(namespace.clone()));
            if !used.contains(&wanted) {
                unused.push(format!("Role in {namespace}: {verb} {resource} in group {group:?}"));
            }
        }
    }
    unused
}

/// The value of `$(NAME)` references in `text`, as the kubelet expands
/// container arguments.
fn expand(text: &str, env: &[(String, String)]) -> String {
    let mut text = text.to_owned();
    for (name, value) in env {
        text = text.replace(&format!("$({name})"), value);
    }
    assert!(!text.contains("$("), "{text} refers to an undefined variable");
    text
}

/// Replaces `flag` in `args`, or adds it.
fn set_flag(args: &mut Vec<String>, flag: &str, value: &str) {
    args.retain(|arg| arg.split_once('=').map_or(arg.as_str(), |(name, _)| name) != flag);
    args.push(format!("{flag}={value}"));
}

/// The Deployment's container as the kubelet would start it in pod
/// `pod_name`, on this machine: its environment from the downward API, its
/// volumes written under `root` from the built ConfigMap and Secret, and
/// its arguments expanded and pointed at those files.
fn replica(manifests: &Manifests, pod_name: &str, root: &Path) -> (Vec<String>, Vec<(String, String)>) {
    let deployment = manifests.deployment();
    let namespace = deployment.metadata.namespace.clone().expect("a namespace");
    let pod = deployment.spec.template.spec.clone().unwrap();
    let container = container(&deployment);
    assert_eq!(container.command, None, "the image's entry point, wasm-ccm, runs");
    let env: Vec<(String, String)> = container
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|var| {
            let field = var.value_from.clone().and_then(|from| from.field_ref).map(|field| field.field_path);
            let value = match (var.value, field.as_deref()) {
                (Some(value), None) => value,
                (None, Some("metadata.name")) => pod_name.to_owned(),
                (None, Some("metadata.namespace")) => namespace.clone(),
                other => panic!("{}: no value for {other:?}", var.name),
            };
            (var.name, value)
        })
        .collect();
    let mut mounted = Vec::new();
    for mount in container.volume_mounts.clone().unwrap_or_default() {
        let volume = pod.volumes.iter().flatten().find(|volume| volume.name == mount.name).expect("a volume");
        let dir = root.join(&volume.name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        if let Some(source) = &volume.config_map {
            let config_map: ConfigMap = manifests.named("ConfigMap", &source.name);
            files.extend(config_map.data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.into_bytes())));
            files.extend(config_map.binary_data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.0)));
        } else if let Some(source) = &volume.secret {
            let secret: Secret = manifests.named("Secret", source.secret_name.as_deref().expect("a Secret's name"));
            files.extend(secret.data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.0)));
            files.extend(
                secret.string_data.unwrap_or_default().into_iter().map(|(key, value)| (key, value.into_bytes())),
            );
        } else if volume.empty_dir.is_some() {
            // As the kubelet makes it: world-writable.
            std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        } else {
            panic!("volume {} is neither a ConfigMap, a Secret nor an emptyDir", volume.name);
        }
        for (key, bytes) in files {
            std::fs::write(dir.join(key), bytes).unwrap();
        }
        mounted.push((mount.mount_path, dir));
    }
    let args = container
        .args
        .unwrap_or_default()
        .iter()
        .map(|arg| {
            let arg = expand(arg, &env);
            let Some((flag, value)) = arg.split_once('=') else { return arg };
            match mounted.iter().find_map(|(path, dir)| Some((value.strip_prefix(path.as_str())?, dir))) {
                Some((rest, dir)) => format!("{flag}={}{rest}", dir.display()),
                None => arg,
            }
        })
        .collect();
    (args, env)
}

/// The status of `GET path` over HTTPS on loopback `port`, as a kubelet
/// probe sees it; `None` when nothing answers.
fn probe(port: u16, path: &str) -> Option<u16> {
    https_get(port, path, None).map(|(status, _)| status)
}

async fn wait<T>(what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    wasm_ccm_tests::eventually(what, PATIENCE, check).await
}

async fn create_node(nodes: &Api<Node>, name: &str, ready: bool, uninitialized: bool, pod_cidr: &str) {
    let taints = if uninitialized {
        json!([{"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"taints": taints, "podCIDR": pod_cidr, "podCIDRs": [pod_cidr]},
        "status": {
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }, "reason": "Test"}],
            "addresses": [{"type": "Hostname", "address": name}],
        },
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
}

fn taints(node: &Value) -> Vec<String> {
    let taints = node["spec"]["taints"].as_array().cloned().unwrap_or_default();
    taints.iter().filter_map(|taint| taint["key"].as_str().map(str::to_owned)).collect()
}

fn network_available(node: &Value) -> bool {
    let conditions = node["status"]["conditions"].as_array().cloned().unwrap_or_default();
    conditions.iter().any(|condition| condition["type"] == "NetworkUnavailable" && condition["status"] == "False")
}

/// The API server harness, the fake cloud, and `deploy/` built with the
/// fake provider and a configuration for that cloud.
struct Cluster {
    api: ApiServer,
    cloud: FakeCloud,
    manifests: Manifests,
    /// The user the Deployment's service account is.
    user: String,
    /// What RBAC grants that service account.
    grants: Grants,
}

/// A running replica of the Deployment, and the admin port it serves on.
struct Replica {
    process: Process,
    port: u16,
}

impl Cluster {
    async fn start() -> Self {
        let api = ApiServer::start().await.unwrap();
        let cloud = FakeCloud::start().await.unwrap();
        let config = json!({
            "cloud": cloud.url(),
            "loadBalancerPool": ["198.51.100.0/24"],
            "instances": [
                {"name": "node-a", "id": "i-a", "zone": "zone-1", "region": "region-1",
                 "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]},
                {"name": "node-b", "id": "i-b", "zone": "zone-1", "region": "region-1",
                 "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]},
                {"name": "node-stopped", "id": "i-s", "state": "stopped"},
                {"name": "node-gone", "id": "i-g", "state": "terminated"}
            ]
        });
        let manifests = Manifests::build(&guest("provider-fake"), Some(&config.to_string()));
        let account: ServiceAccount = manifests.one("ServiceAccount");
        let account = account.metadata.name.unwrap();
        let user = format!("system:serviceaccount:{NAMESPACE}:{account}");
        let grants = Grants::of(&manifests, NAMESPACE, &account);
        Cluster { api, cloud, manifests, user, grants }
    }

    /// Starts the Deployment's container as pod `pod_name`, as the kubelet
    /// would, with what only a real pod has replaced: the in-cluster
    /// configuration by a kubeconfig acting as the service account
    /// (impersonated), the pod's port by a free one on loopback, AWS by the
    /// fake cloud; routes turned on, with short periods; and `overrides`.
    fn replica(&self, pod_name: &str, overrides: &[(&str, String)]) -> Replica {
        self.replica_without(pod_name, overrides, &[])
    }

    /// [`Cluster::replica`] without the flags `unset`.
    fn replica_without(&self, pod_name: &str, overrides: &[(&str, String)], unset: &[&str]) -> Replica {
        let root = self.manifests.dir.path().join(pod_name);
        let (mut args, env) = replica(&self.manifests, pod_name, &root);
        let mut kubeconfig = self.api.kubeconfig();
        for named in &mut kubeconfig.auth_infos {
            if let Some(auth) = named.auth_info.as_mut() {
                auth.impersonate = Some(self.user.clone());
            }
        }
        let kubeconfig_path = root.join("kubeconfig");
        std::fs::write(&kubeconfig_path, serde_json::to_vec(&kubeconfig).unwrap()).unwrap();
        let port = free_port().unwrap();
        let replaced = [
            ("--kubeconfig", kubeconfig_path.display().to_string()),
            ("--bind-address", "127.0.0.1".to_owned()),
            ("--secure-port", port.to_string()),
            ("--provider-allow", self.cloud.url()),
            ("--configure-cloud-routes", "true".to_owned()),
            ("--cluster-cidr", "10.244.0.0/16".to_owned()),
            ("--node-monitor-period", "200ms".to_owned()),
            ("--node-status-update-frequency", "500ms".to_owned()),
            ("--route-reconciliation-period", "300ms".to_owned()),
        ];
        for (flag, value) in replaced.iter().chain(overrides) {
            set_flag(&mut args, flag, value);
        }
        args.retain(|arg| !unset.contains(&arg.split_once('=').map_or(arg.as_str(), |(name, _)| name)));
        let env: Vec<(&str, &str)> = env.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        Replica { process: Process::start(crate::binary(), &args, &env), port }
    }

    /// The Lease's holder.
    fn holder(&self) -> Option<String> {
        let lease = self.api.object("leases", Some(NAMESPACE), "cloud-controller-manager")?;
        lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
    }

    /// Waits until `replica` (pod `pod_name`) leads and its probes pass.
    async fn wait_ready(&self, replica: &Replica, pod_name: &str) {
        let identity = format!("{pod_name}_");
        wait("the replica to lead", async || self.holder().filter(|holder| holder.starts_with(&identity))).await;
        for path in ["/livez", "/readyz"] {
            let port = replica.port;
            wait(&format!("{path} over HTTPS"), async || {
                let status = tokio::task::spawn_blocking(move || probe(port, path)).await.unwrap();
                (status == Some(200)).then_some(())
            })
            .await;
        }
    }

    /// Stops `replica` as the kubelet does, and waits for it to release the
    /// Lease and exit.
    async fn stop(&self, mut replica: Replica) {
        replica.process.signal("TERM");
        let exit = replica.process.wait(Duration::from_secs(30)).await.expect("it stops");
        assert!(exit.success(), "{exit:?}");
        assert_eq!(self.holder().as_deref(), Some(""), "the lease was released");
    }

    /// The requests the service account made, and those RBAC would refuse.
    fn requests(&self) -> (Used, Vec<String>) {
        let counts = self.api.requests();
        let denied = counts
            .attributes()
            .filter(|(request, _)| match request {
                RequestAttributes::Resource { user, .. } | RequestAttributes::NonResource { user, .. } => {
                    user.as_deref() == Some(self.user.as_str())
                }
            })
            .filter(|(request, _)| !self.grants.allows(request))
            .map(|(request, count)| format!("{request:?} ({count} times)"))
            .collect();
        (requests_of(&counts, &self.user), denied)
    }
}

/// Runs the Deployment's container, with the fake provider in its
/// ConfigMap, against the API server harness over a workload that has every
/// controller act, as the Deployment's service account; then checks its
/// requests against the RBAC rules of `deploy/`.
#[tokio::test(flavor = "multi_thread")]
async fn rbac_allows_exactly_the_requests_the_controllers_make() {
    let cluster = Cluster::start().await;
    let (api, cloud, grants, user) = (&cluster.api, &cluster.cloud, &cluster.grants, &cluster.user);
    let client = api.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    create_node(&nodes, "node-a", true, true, "10.244.1.0/24").await;
    create_node(&nodes, "node-b", true, false, "10.244.2.0/24").await;
    create_node(&nodes, "node-stopped", false, false, "10.244.3.0/24").await;
    create_node(&nodes, "node-gone", false, false, "10.244.4.0/24").await;

    let pod_name = "wasm-ccm-7c9d5b8f6-q4xzt";
    let replica = cluster.replica(pod_name, &[]);
    cluster.wait_ready(&replica, pod_name).await;

    // The admin server: a scraper's token reviewed, and its get on
    // /metrics authorized, through the API as the service account.
    let reader: ClusterRole = cluster.manifests.named("ClusterRole", "wasm-ccm:metrics-reader");
    Api::<ClusterRole>::all(client.clone()).create(&PostParams::default(), &reader).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "prometheus"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wasm-ccm:metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone()).create(&PostParams::default(), &binding).await.unwrap();
    api.add_token("prometheus-token", "system:serviceaccount:monitoring:prometheus", &["system:serviceaccounts"]);
    let port = replica.port;
    let scraped = tokio::task::spawn_blocking(move || https_get(port, "/metrics", Some("prometheus-token")))
        .await
        .unwrap()
        .map(|(status, _)| status);
    assert_eq!(scraped, Some(200));

    // The service controller: a load balancer made, changed and deleted.
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &service).await.unwrap();
    let ingress = |api: &ApiServer| {
        let service = api.object("services", Some("default"), "web")?;
        service["status"]["loadBalancer"]["ingress"][0]["ip"].as_str().map(str::to_owned)
    };
    wait("an ingress for web", async || ingress(api)).await;
    let ports = json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}});
    services.patch("web", &PatchParams::default(), &Patch::Merge(ports)).await.unwrap();
    wait("the load balancer to get port 443", async || {
        let balancers = cloud.objects("load-balancers");
        let ports = balancers.first()?.value["ports"].as_array()?.len();
        (ports == 2).then_some(())
    })
    .await;
    services.delete("web", &DeleteParams::default()).await.unwrap();
    wait("the Service and its load balancer to go", async || {
        (api.object("services", Some("default"), "web").is_none() && cloud.objects("load-balancers").is_empty())
            .then_some(())
    })
    .await;

    // The node controllers and the route controller.
    wait("node-a to be initialised", async || {
        let node = api.object("nodes", None, "node-a")?;
        (node["spec"]["providerID"] == "fake://i-a" && taints(&node).is_empty()).then_some(())
    })
    .await;
    wait("node-gone to be deleted", async || api.object("nodes", None, "node-gone").is_none().then_some(())).await;
    wait("node-stopped to be tainted", async || {
        let node = api.object("nodes", None, "node-stopped")?;
        taints(&node).contains(&"node.cloudprovider.kubernetes.io/shutdown".to_owned()).then_some(())
    })
    .await;
    wait("routes for node-a and node-b", async || {
        let a = api.object("nodes", None, "node-a")?;
        let b = api.object("nodes", None, "node-b")?;
        (network_available(&a) && network_available(&b)).then_some(())
    })
    .await;
    wait("a repeated event counted on the first", async || {
        let counts = api.requests();
        let patched = counts.attributes().any(|(request, _)| {
            matches!(request, RequestAttributes::Resource { verb, group, resource, .. } if verb == "patch" && group.is_empty() && resource == "events")
        });
        patched.then_some(())
    })
    .await;

    // A graceful stop releases the lease.
    cluster.stop(replica).await;

    let (used, denied) = cluster.requests();
    let made = listing(&used);
    assert!(denied.is_empty(), "RBAC would refuse:\n{}\nthe requests made:\n{made}", denied.join("\n"));

    // Every verb granted is used, but the ConfigMap source's, for the source
    // this Deployment does not use, and the namespaces', for a provider
    // picking Services by namespace, which one provider alone does not.
    let configmaps =
        ["get", "list", "watch"].map(|verb| format!("Role in {NAMESPACE}: {verb} configmaps in group \"\""));
    let namespaces = ["list", "watch"].map(|verb| format!("ClusterRole: {verb} namespaces in group \"\""));
    let unused = unused_grants(grants, &used);
    let unexpected: Vec<&String> =
        unused.iter().filter(|grant| !configmaps.contains(*grant) && !namespaces.contains(*grant)).collect();
    assert!(unexpected.is_empty(), "granted but never used: {unexpected:?}\nthe requests made:\n{made}");
    assert_eq!(
        unused.len(),
        configmaps.len() + namespaces.len(),
        "the ConfigMap and namespaces rules are there, unused: {unused:?}"
    );

    // The checks can fail: a request outside the rules is refused, and a
    // verb more is reported unused.
    let outside = [
        ("get", "", "nodes", None, None),
        ("update", "", "services", Some("status"), Some("default")),
        ("update", "", "events", None, Some("default")),
        ("update", "coordination.k8s.io", "leases", None, Some("kube-node-lease")),
        ("list", "coordination.k8s.io", "leases", None, None),
        ("get", "", "secrets", None, Some(NAMESPACE)),
    ];
    for (verb, group, resource, subresource, namespace) in outside {
        let request = RequestAttributes::Resource {
            user: Some(user.clone()),
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: subresource.map(Into::into),
            namespace: namespace.map(Into::into),
        };
        assert!(!grants.allows(&request), "{request:?} is refused");
    }
    let refused =
        RequestAttributes::NonResource { user: Some(user.clone()), verb: "get".into(), path: "/metrics".into() };
    assert!(!grants.allows(&refused));
    let mut wider = Grants { cluster: grants.cluster.clone(), namespaced: grants.namespaced.clone() };
    wider.cluster[0].verbs.push("update".into());
    let resource = wider.cluster[0].resources.clone().unwrap()[0].clone();
    assert!(
        unused_grants(&wider, &used).contains(&format!("ClusterRole: update {resource} in group \"\"")),
        "an extra verb is reported"
    );
}

/// The provider loaded through the API from the generated ConfigMap
/// (`--provider configmap:…`) rather than from its mounted files: the
/// requests that takes are those the Role's ConfigMap rule grants, in the
/// Deployment's namespace, and all of them.
#[tokio::test(flavor = "multi_thread")]
async fn the_configmap_rule_covers_loading_the_provider_through_the_api() {
    let cluster = Cluster::start().await;
    let mut config_map: ConfigMap = cluster.manifests.generated("wasm-ccm-provider");
    let name = config_map.metadata.name.clone().unwrap();
    config_map.metadata.namespace = Some(NAMESPACE.to_owned());
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.api.client().await, NAMESPACE);
    config_maps.create(&PostParams::default(), &config_map).await.unwrap();

    let pod_name = "wasm-ccm-7c9d5b8f6-h8k2m";
    let location = format!("configmap:{NAMESPACE}/{name}/provider.wasm");
    // The signature is the sibling key provider.wasm.sig of the ConfigMap.
    let replica = cluster.replica_without(pod_name, &[("--provider", location)], &["--provider-signature"]);
    cluster.wait_ready(&replica, pod_name).await;
    // Ready does not wait for the reload watch: the source starts it after
    // the load, so a replica stopped at once may not have made it yet.
    wait("the replica to watch its ConfigMap", async || {
        let (used, _) = cluster.requests();
        used.iter()
            .any(|(group, resource, verb, _)| group.is_empty() && resource == "configmaps" && verb == "watch")
            .then_some(())
    })
    .await;
    cluster.stop(replica).await;

    let (used, denied) = cluster.requests();
    let made = listing(&used);
    assert!(denied.is_empty(), "RBAC would refuse:\n{}\nthe requests made:\n{made}", denied.join("\n"));
    let config_map_requests: BTreeSet<(&str, Option<&str>)> = used
        .iter()
        .filter(|(group, resource, _, _)| group.is_empty() && resource == "configmaps")
        .map(|(_, _, verb, namespace)| (verb.as_str(), namespace.as_deref()))
        .collect();
    let expected = ["get", "list", "watch"].map(|verb| (verb, Some(NAMESPACE)));
    assert_eq!(config_map_requests, BTreeSet::from(expected), "the requests made:\n{made}");
    let unused = unused_grants(&cluster.grants, &used);
    for verb in ["get", "list", "watch"] {
        let grant = format!("Role in {NAMESPACE}: {verb} configmaps in group \"\"");
        assert!(!unused.contains(&grant), "{unused:?}");
    }
}

/// Starts a replica of `manifests`' Deployment as pod `pod_name` against
/// the real API server `plane`, as deploy/'s ServiceAccount, its provider
/// allowed `cloud_url`, with the flags of `overrides` set too; and the
/// arguments it was started with.
fn start_on_real_server(
    plane: &ControlPlane,
    manifests: &Manifests,
    pod_name: &str,
    cloud_url: String,
    overrides: &[(&str, &str)],
) -> (Process, Vec<String>) {
    let root = manifests.dir.path().join(pod_name);
    let (mut args, env) = replica(manifests, pod_name, &root);
    let kubeconfig = root.join("kubeconfig");
    plane.write_kubeconfig(Identity::CloudControllerManager, &kubeconfig).unwrap();
    let replaced = [
        ("--kubeconfig", kubeconfig.display().to_string()),
        ("--bind-address", "127.0.0.1".to_owned()),
        ("--secure-port", free_port().unwrap().to_string()),
        ("--provider-allow", cloud_url),
    ];
    for (flag, value) in replaced {
        set_flag(&mut args, flag, &value);
    }
    for (flag, value) in overrides {
        set_flag(&mut args, flag, value);
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
    (Process::start(crate::binary(), &args, &env), args)
}

/// Creates the LoadBalancer Service `web` in `default` and waits for its
/// ingress.
async fn web_gets_an_ingress(admin: &kube::Client) {
    let services: Api<Service> = Api::namespaced(admin.clone(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &service).await.unwrap();
    wait("an ingress for web", async || {
        let service = services.get("web").await.ok()?;
        service.status?.load_balancer?.ingress?.first()?.ip.clone()
    })
    .await;
}

/// With the `controller-identities` component, on a real API server under
/// its RBAC: each controller writes as its own ServiceAccount, made by
/// wasm-ccm with a token from the TokenRequest API, and wasm-ccm's own
/// identity, which the component leaves only reads, events, leader election
/// and those tokens, writes no node or Service. Whichever identity writes,
/// the API server names `wasm-ccm` as the writes' field manager.
#[tokio::test(flavor = "multi_thread")]
async fn each_controller_acts_as_its_own_service_account() {
    let Some(Backend::Real(assets)) = Backend::real("deploy::each_controller_acts_as_its_own_service_account") else {
        return;
    };
    let plane = ControlPlane::start(&assets, Options { audit: true }).await.unwrap();
    let cloud = FakeCloud::start().await.unwrap();
    let config = json!({
        "cloud": cloud.url(),
        "loadBalancerPool": ["198.51.100.0/24"],
        "instances": [
            {"name": "node-a", "id": "i-a", "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]},
            {"name": "node-gone", "id": "i-g", "state": "terminated"}
        ]
    });
    let manifests =
        Manifests::build_with(&guest("provider-fake"), Some(&config.to_string()), &["controller-identities"]);
    let built = std::fs::read_to_string(manifests.built()).unwrap();
    plane.apply_rbac(&built, &manifests.built()).await.unwrap();
    let admin = plane.client(Identity::Admin).await.unwrap();
    let nodes: Api<Node> = Api::all(admin.clone());
    create_node(&nodes, "node-a", true, true, "10.244.1.0/24").await;
    create_node(&nodes, "node-gone", false, false, "10.244.2.0/24").await;

    let overrides = [
        ("--configure-cloud-routes", "true"),
        ("--cluster-cidr", "10.244.0.0/16"),
        ("--node-monitor-period", "200ms"),
        ("--route-reconciliation-period", "300ms"),
    ];
    let (mut process, args) =
        start_on_real_server(&plane, &manifests, "wasm-ccm-7c9d5b8f6-x2v9c", cloud.url(), &overrides);
    assert!(args.contains(&"--use-service-account-credentials=true".to_owned()), "{args:?}");

    web_gets_an_ingress(&admin).await;
    let web = Api::<Service>::namespaced(admin.clone(), "default").get("web").await.unwrap();
    let managers: BTreeSet<(&str, Option<&str>)> = web
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|fields| (fields.manager.as_deref().unwrap_or_default(), fields.subresource.as_deref()))
        .collect();
    assert!(
        managers.contains(&("wasm-ccm", Some("status"))),
        "the status's field manager names wasm-ccm: {managers:?}"
    );
    wait("node-a initialised and routed", async || {
        let node = serde_json::to_value(nodes.get("node-a").await.ok()?).ok()?;
        (node["spec"]["providerID"] == "fake://i-a" && network_available(&node)).then_some(())
    })
    .await;
    wait("node-gone deleted", async || nodes.get_opt("node-gone").await.ok()?.is_none().then_some(())).await;
    process.signal("TERM");
    process.wait(Duration::from_secs(30)).await.expect("it stops");

    let requests = plane.audited_requests().unwrap();
    let writers = |verb: &str, resource: &str| -> BTreeSet<String> {
        requests
            .iter()
            .filter(|(request, _)| request.verb == verb && request.resource == resource)
            .map(|(request, _)| request.user.trim_start_matches("system:serviceaccount:kube-system:").to_owned())
            .collect()
    };
    let set = |users: &[&str]| users.iter().map(|user| (*user).to_owned()).collect::<BTreeSet<String>>();
    assert_eq!(writers("patch", "services"), set(&[]), "the finalizer goes through the status");
    assert_eq!(writers("patch", "services/status"), set(&["service-controller"]));
    // The node controllers act as upstream's do, as `node-controller`.
    assert_eq!(writers("patch", "nodes"), set(&["node-controller"]), "provider ID, labels, taint");
    assert_eq!(writers("patch", "nodes/status"), set(&["node-controller", "route-controller"]));
    assert_eq!(writers("delete", "nodes"), set(&["node-controller"]));
    assert_eq!(writers("create", "serviceaccounts/token"), set(&["cloud-controller-manager"]));
    assert_eq!(writers("list", "services"), set(&["cloud-controller-manager"]), "the shared caches");
    let refused: Vec<_> = requests.iter().filter(|(request, _)| request.code == 403).collect();
    assert!(refused.is_empty(), "nothing was refused: {refused:?}");
}

/// Upgraded without the grant this release's RBAC adds for namespaces
/// (list and watch), wasm-ccm still gives load balancers: only a provider
/// that picks Services by their namespace's labels has namespaces watched,
/// and the one provider here does not, so nothing asks for them.
#[tokio::test(flavor = "multi_thread")]
async fn an_upgrade_without_the_namespaces_grant_still_serves_load_balancers() {
    let Some(Backend::Real(assets)) =
        Backend::real("deploy::an_upgrade_without_the_namespaces_grant_still_serves_load_balancers")
    else {
        return;
    };
    let plane = ControlPlane::start(&assets, Options { audit: true }).await.unwrap();
    let cloud = FakeCloud::start().await.unwrap();
    let config = json!({"cloud": cloud.url(), "loadBalancerPool": ["198.51.100.0/24"]});
    let manifests = Manifests::build_with(&guest("provider-fake"), Some(&config.to_string()), &[]);
    let built = std::fs::read_to_string(manifests.built()).unwrap();
    let mut removed = 0;
    let previous: Vec<String> = yaml_documents(&built)
        .into_iter()
        .map(|mut object| {
            if let Some(rules) = object["rules"].as_array_mut() {
                let before = rules.len();
                rules.retain(|rule| rule["resources"] != json!(["namespaces"]));
                removed += before - rules.len();
            }
            serde_norway::to_string(&object).unwrap()
        })
        .collect();
    assert_eq!(removed, 1, "deploy/'s RBAC grants namespaces in one rule");
    plane.apply_rbac(&previous.join("---\n"), &manifests.built()).await.unwrap();
    let admin = plane.client(Identity::Admin).await.unwrap();
    create_node(&Api::all(admin.clone()), "node-a", true, false, "10.244.1.0/24").await;

    let (mut process, _) = start_on_real_server(&plane, &manifests, "wasm-ccm-7c9d5b8f6-u9p2d", cloud.url(), &[]);
    web_gets_an_ingress(&admin).await;
    process.signal("TERM");
    process.wait(Duration::from_secs(30)).await.expect("it stops");

    let requests = plane.audited_requests().unwrap();
    let asked: Vec<_> = requests.iter().filter(|(request, _)| request.resource == "namespaces").collect();
    assert!(asked.is_empty(), "no provider picks by namespace, yet: {asked:?}");
}

/// With the `providers-file` component: the fake provider twice from the
/// providers file in its ConfigMap, each serving its own load balancer
/// class from its own address pool, vendor-a Services without a class too.
#[tokio::test(flavor = "multi_thread")]
async fn the_providers_file_component_runs_two_providers_by_class() {
    let manifests = Manifests::build_with(&guest("provider-fake"), None, &["providers-file"]);
    let deployment = manifests.deployment();
    let pod_name = "wasm-ccm-7c9d5b8f6-p2v9c";
    let root = manifests.dir.path().join(pod_name);
    let (mut args, env) = replica(&manifests, pod_name, &root);
    assert!(!args.iter().any(|arg| arg.starts_with("--provider=")), "{args:?}");
    // The paths inside the providers file are the pod's, as the flags' are.
    let pod = deployment.spec.template.spec.unwrap();
    let mounts: Vec<(String, PathBuf)> = pod.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .map(|mount| (mount.mount_path.clone(), root.join(&mount.name)))
        .collect();
    for file in ["providers/providers.yaml", "trust/trust.yaml"] {
        let file = root.join(file);
        let mut text = std::fs::read_to_string(&file).expect("the file is mounted");
        for (path, dir) in &mounts {
            text = text.replace(&format!("{path}/"), &format!("{}/", dir.display()));
        }
        std::fs::write(&file, text).unwrap();
    }

    let api = ApiServer::start().await.unwrap();
    let replaced = [
        ("--kubeconfig", kubeconfig(&api, manifests.dir.path()).display().to_string()),
        ("--bind-address", "127.0.0.1".to_owned()),
        ("--secure-port", free_port().unwrap().to_string()),
        ("--leader-elect", "false".to_owned()),
    ];
    for (flag, value) in replaced {
        set_flag(&mut args, flag, &value);
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
    let mut process = Process::start(crate::binary(), &args, &env);

    let services: Api<Service> = Api::namespaced(api.client().await, "default");
    for (name, class) in
        [("a", Some("vendor-a.example.com/lb")), ("b", Some("vendor-b.example.com/lb")), ("plain", None)]
    {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "loadBalancerClass": class, "ports": [{"port": 80}]},
        }))
        .unwrap();
        services.create(&PostParams::default(), &service).await.unwrap();
    }
    let mut ingress = BTreeMap::new();
    for name in ["a", "b", "plain"] {
        let ip = wait(&format!("an ingress for {name}"), async || {
            let service = services.get(name).await.ok()?;
            service.status?.load_balancer?.ingress?.first()?.ip.clone()
        })
        .await;
        let last: u8 = ip.rsplit('.').next().unwrap().parse().unwrap();
        ingress.insert(name, last);
    }
    assert!(ingress["a"] < 128 && ingress["plain"] < 128, "vendor-a's pool: {ingress:?}");
    assert!(ingress["b"] >= 128, "vendor-b's pool: {ingress:?}");
    let owner = |service: &Service| service.metadata.annotations.clone().unwrap_or_default();
    let b = services.get("b").await.unwrap();
    assert_eq!(owner(&b).get("wasm-ccm.io/load-balancer-provider").map(String::as_str), Some("vendor-b"));
    process.signal("TERM");
    process.wait(Duration::from_secs(30)).await.expect("it stops");
}
