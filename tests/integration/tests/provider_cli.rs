//! `wasm-ccm provider push`, `inspect`, `verify` and `call`, run as the real binary
//! against a real registry (Debian's `docker-registry`).

use std::process::Command;

use serde_json::json;
use wasm_ccm_distribution::{SigningKey, Verification, pull, resolve, sha256_digest, sign_bytes};
use wasm_ccm_tests::process::Run;
use wasm_ccm_tests::registry::{Registry, Settings, docker_config};
use wasm_ccm_tests::{guest, guest_path};

fn wasm_ccm(args: &[&str]) -> Run {
    Run::of(Command::new(crate::binary()).args(["provider"]).args(args).env_remove("COSIGN_PASSWORD"))
}

fn start(settings: Settings) -> Registry {
    Registry::start(settings).unwrap_or_else(|err| panic!("cannot start the registry: {err:#}"))
}

/// A directory with the fake provider, a key pair, and another public key.
struct Files {
    dir: tempfile::TempDir,
    key: SigningKey,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::generate().unwrap();
        std::fs::write(dir.path().join("fake.wasm"), &*guest("provider-fake")).unwrap();
        std::fs::write(dir.path().join("other-world.wasm"), &*guest("guest-other-world")).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.to_pem().unwrap()).unwrap();
        std::fs::write(dir.path().join("key.pub"), key.public_key_pem().unwrap()).unwrap();
        let other = SigningKey::generate().unwrap();
        std::fs::write(dir.path().join("other.pub"), other.public_key_pem().unwrap()).unwrap();
        Files { dir, key }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

#[tokio::test]
async fn push_inspect_and_verify_a_signed_provider() {
    let registry = start(Settings::default());
    let files = Files::new();
    let wasm = guest("provider-fake");
    let target = format!("oci://{}/providers/fake:v1", registry.host());

    let pushed =
        wasm_ccm(&["push", &files.path("fake.wasm"), &target, "--plain-http", "--sign-key", &files.path("key.pem")])
            .ok();
    let manifest = pushed.field("manifest").to_owned();
    assert_eq!(pushed.field("digest"), sha256_digest(&wasm));
    assert_eq!(pushed.field("size"), format!("{} bytes", wasm.len()));
    assert_eq!(pushed.field("pushed"), format!("{target}@{manifest}"));
    assert!(pushed.field("signed").starts_with(&manifest), "{}", pushed.stdout);

    // The library sees what the command pushed, and its cosign signature.
    let reference = registry.reference("providers/fake:v1");
    assert_eq!(resolve(&reference, &registry.options()).await.unwrap(), manifest);
    let verification =
        Verification { pin: None, public_key: Some(files.key.public_key().unwrap()), ..Verification::none() };
    let pulled = pull(&reference, &registry.options(), &verification).await.expect("signed by the command");
    assert!(pulled.wasm == *wasm);

    // Inspect, from the registry as JSON and from the file as text.
    let json = wasm_ccm(&["inspect", &target, "--plain-http", "--output", "json"]).ok();
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(report["source"], format!("{target}@{manifest}"));
    assert_eq!(report["manifestDigest"], manifest);
    assert_eq!(report["digest"], sha256_digest(&wasm));
    assert_eq!(report["size"], wasm.len());
    assert_eq!(report["component"], true);
    assert_eq!(report["world"]["name"], "wasm-ccm:provider/cloud-provider@0.2.2");
    assert_eq!(report["world"]["provider"], true);
    assert_eq!(report["world"]["problems"], serde_json::json!([]));
    let exports: Vec<&str> = report["exports"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(exports.len(), 9, "the world and the optional instances-batch and metadata-batch: {exports:?}");
    assert!(exports.contains(&"wasm-ccm:provider/load-balancer@0.2.2"), "{exports:?}");
    assert!(report["imports"].as_array().unwrap().contains(&serde_json::json!("wasm-ccm:provider/http@0.2.2")));

    let text = wasm_ccm(&["inspect", &files.path("fake.wasm")]).ok();
    assert_eq!(text.field("source"), files.path("fake.wasm"));
    assert_eq!(text.field("digest"), sha256_digest(&wasm));
    assert_eq!(text.field("kind"), "component");
    assert_eq!(
        text.field("world"),
        "wasm-ccm:provider/cloud-provider@0.2.2: a provider of contract wasm-ccm:provider@0.2.2"
    );
    assert!(text.stdout.contains("exports  wasm-ccm:provider/clusters@0.2.2\n"), "{}", text.stdout);
    assert_eq!(text.field("ships"), "as a file, an OCI artifact or a ConfigMap key");
    // A Go provider is larger than a ConfigMap holds.
    let go = wasm_ccm(&["inspect", &guest_path("provider-fake-go").display().to_string(), "-o", "json"]).ok();
    let go: serde_json::Value = serde_json::from_str(&go.stdout).unwrap();
    assert_eq!(go["fitsConfigMap"], false, "{go}");
    let go = wasm_ccm(&["inspect", &guest_path("provider-fake-go").display().to_string()]).ok();
    assert_eq!(go.field("ships"), "as a file or an OCI artifact: a ConfigMap holds 1 MiB at most");

    // Verify: the right key and pin pass; another key, another pin fail.
    let digest = sha256_digest(&wasm);
    let verified =
        wasm_ccm(&["verify", &target, "--plain-http", "--public-key", &files.path("key.pub"), "--sha256", &digest])
            .ok();
    assert_eq!(verified.field("verified"), target);
    assert_eq!(verified.field("digest"), digest);
    assert_eq!(verified.field("manifest"), manifest);
    assert_eq!(verified.field("pin"), "matches");
    let err = wasm_ccm(&["verify", &target, "--plain-http", "--public-key", &files.path("other.pub")]).error();
    assert_eq!(err, format!("error: {target} does not verify: signature does not verify with the configured key"));
    let wrong = sha256_digest(b"another provider");
    let err = wasm_ccm(&["verify", &target, "--plain-http", "--sha256", &wrong]).error();
    assert_eq!(err, format!("error: {target} does not verify: digest {digest} does not match the pin {wrong}"));

    // An unsigned push of the same bytes elsewhere has no signature.
    let unsigned = format!("oci://{}/providers/unsigned:v1", registry.host());
    wasm_ccm(&["push", &files.path("fake.wasm"), &unsigned, "--plain-http"]).ok();
    let err = wasm_ccm(&["verify", &unsigned, "--plain-http", "--public-key", &files.path("key.pub")]).error();
    assert!(err.starts_with(&format!("error: {unsigned} does not verify: no signature for ")), "{err}");
}

#[tokio::test]
async fn verify_a_file_and_its_blob_signature() {
    let files = Files::new();
    let wasm = guest("provider-fake");
    let signature = files.dir.path().join("fake.wasm.sig");
    std::fs::write(&signature, sign_bytes(&wasm, &files.key).unwrap()).unwrap();
    let signature = signature.display().to_string();
    let file = files.path("fake.wasm");

    let verified = wasm_ccm(&["verify", &file, "--public-key", &files.path("key.pub"), "--signature", &signature]).ok();
    assert_eq!(verified.field("verified"), file);
    assert_eq!(verified.field("digest"), sha256_digest(&wasm));
    assert!(verified.stdout.contains("signature verifies with"), "{}", verified.stdout);
    // The hex alone is a pin too.
    let hex = sha256_digest(&wasm).trim_start_matches("sha256:").to_owned();
    wasm_ccm(&["verify", &file, "--sha256", &hex]).ok();

    let err = wasm_ccm(&["verify", &file, "--public-key", &files.path("other.pub"), "--signature", &signature]).error();
    assert_eq!(err, format!("error: {file} does not verify: signature does not verify with the configured key"));

    // One byte changed after signing.
    let mut changed = wasm.to_vec();
    changed[wasm.len() / 2] ^= 0xff;
    let changed_path = files.path("changed.wasm");
    std::fs::write(&changed_path, &changed).unwrap();
    let err =
        wasm_ccm(&["verify", &changed_path, "--public-key", &files.path("key.pub"), "--signature", &signature]).error();
    assert_eq!(
        err,
        format!("error: {changed_path} does not verify: signature does not verify with the configured key")
    );
    let err = wasm_ccm(&["verify", &changed_path, "--sha256", &sha256_digest(&wasm)]).error();
    assert!(err.contains("does not match the pin"), "{err}");

    let err = wasm_ccm(&["verify", &file]).error();
    assert_eq!(err, format!("error: nothing to verify {file} against: give --sha256, --public-key, or both"));
    let err = wasm_ccm(&["verify", &file, "--public-key", &files.path("key.pub")]).error();
    assert_eq!(err, format!("error: --public-key needs --signature for the file {file}"));
    let err = wasm_ccm(&["verify", &file, "--sha256", "sha256:abc"]).error();
    assert!(err.contains("invalid digest \"sha256:abc\""), "{err}");
    let err = wasm_ccm(&["verify", &file, "--sha256", &hex, "--plain-http"]).error();
    assert_eq!(err, format!("error: --plain-http applies to an oci:// provider only, not to the file {file}"));
}

#[tokio::test]
async fn credentials_tls_and_plain_http() {
    let files = Files::new();
    let wasm = guest("provider-fake");

    // Basic auth from a Docker config file.
    let private = start(Settings { basic_auth: Some(("alice".into(), "s3cret".into())), ..Settings::default() });
    let target = format!("oci://{}/private/fake:v1", private.host());
    let err = wasm_ccm(&["push", &files.path("fake.wasm"), &target, "--plain-http"]).error();
    assert!(err.contains(&format!("registry {} refused access to private/fake", private.host())), "{err}");
    let config = files.dir.path().join("config.json");
    std::fs::write(&config, docker_config(&private.host(), "alice", "s3cret")).unwrap();
    let config = config.display().to_string();
    wasm_ccm(&["push", &files.path("fake.wasm"), &target, "--plain-http", "--registry-config", &config]).ok();
    let digest = sha256_digest(&wasm);
    let verify = ["verify", &target, "--plain-http", "--registry-config", &config, "--sha256", &digest];
    assert_eq!(wasm_ccm(&verify).ok().field("digest"), digest);

    // TLS with the registry's CA; HTTPS is the default.
    let secure = start(Settings { tls: true, ..Settings::default() });
    let ca = files.dir.path().join("ca.pem");
    std::fs::write(&ca, secure.ca_pem().unwrap()).unwrap();
    let ca = ca.display().to_string();
    let target = format!("oci://{}/tls/fake:v1", secure.host());
    let err = wasm_ccm(&["push", &files.path("fake.wasm"), &target]).error();
    assert!(err.contains("certificate") || err.contains("UnknownIssuer"), "{err}");
    wasm_ccm(&["push", &files.path("fake.wasm"), &target, "--registry-ca-file", &ca]).ok();
    let inspected = wasm_ccm(&["inspect", &target, "--registry-ca-file", &ca]).ok();
    assert_eq!(inspected.field("digest"), digest);

    // A plain HTTP registry is not spoken to in plain HTTP unless asked.
    let plain = start(Settings::default());
    let target = format!("oci://{}/plain/fake:v1", plain.host());
    wasm_ccm(&["push", &files.path("fake.wasm"), &target]).error();
    assert!(
        !plain.served().iter().any(|served| served.path.starts_with("/v2/plain/")),
        "nothing reached the repository over HTTPS attempts"
    );
    wasm_ccm(&["push", &files.path("fake.wasm"), &target, "--plain-http"]).ok();
}

#[tokio::test]
async fn what_is_not_a_provider() {
    let registry = start(Settings::default());
    let files = Files::new();

    // A component of another world: described, and said not to be a provider.
    let other = files.path("other-world.wasm");
    let text = wasm_ccm(&["inspect", &other]).ok();
    assert!(
        text.field("world").starts_with(
            "wasm-ccm:provider/cloud-provider@0.2.2: not a provider: missing export wasm-ccm:provider/provider@0.2.2"
        ),
        "{}",
        text.stdout
    );
    let json: serde_json::Value =
        serde_json::from_str(&wasm_ccm(&["inspect", &other, "-o", "json"]).ok().stdout).unwrap();
    assert_eq!(json["world"]["provider"], false);
    assert_eq!(json["world"]["problems"].as_array().unwrap().len(), 7, "{json}");

    // Not WebAssembly: refused by inspect and by push, which sends nothing.
    let script = files.dir.path().join("script.sh");
    std::fs::write(&script, b"#!/bin/sh\necho hi\n").unwrap();
    let script = script.display().to_string();
    let err = wasm_ccm(&["inspect", &script]).error();
    assert_eq!(
        err,
        format!("error: {script}: not a WebAssembly component: the bytes do not start with a WebAssembly header")
    );
    let target = format!("oci://{}/scripts/sh:v1", registry.host());
    let err = wasm_ccm(&["push", &script, &target, "--plain-http"]).error();
    assert!(err.starts_with(&format!("error: cannot push {script} to {target}: not a WebAssembly component")), "{err}");
    assert!(!registry.served().iter().any(|served| served.path.starts_with("/v2/scripts/")));

    // A digest is not a place to push to; a missing key pushes nothing.
    let pinned = format!("oci://{}/acme@{}", registry.host(), sha256_digest(b"x"));
    let err = wasm_ccm(&["push", &files.path("fake.wasm"), &pinned, "--plain-http"]).error();
    assert!(err.contains("a provider is pushed to a tag, not to a digest"), "{err}");
    let target = format!("oci://{}/acme:v1", registry.host());
    let missing = files.path("missing.pem");
    let err = wasm_ccm(&["push", &files.path("fake.wasm"), &target, "--plain-http", "--sign-key", &missing]).error();
    assert!(err.starts_with(&format!("error: cannot read --sign-key {missing}")), "{err}");
    assert!(!registry.served().iter().any(|served| served.path.starts_with("/v2/acme/")));
}

#[tokio::test]
async fn a_call_grows_to_the_memory_the_operator_allows_and_no_further() {
    let hostile = guest_path("guest-hostile").display().to_string();
    let grow = |mebibytes: u32| {
        json!({"service": {"metadata": {
            "name": "web", "namespace": "default",
            "annotations": {"hostile/attack": "grow", "hostile/arg": mebibytes.to_string()},
        }}})
        .to_string()
    };
    // Past the 1 GiB a pool slot held before the engine followed the flag.
    let grown = wasm_ccm(&[
        "call",
        "ensure-load-balancer",
        &grow(1040),
        "--provider",
        &hostile,
        "--provider-memory",
        "1152MiB",
    ])
    .ok();
    assert!(grown.stdout.contains("grew 1040 MiB"), "{}", grown.stdout);
    let err =
        wasm_ccm(&["call", "ensure-load-balancer", &grow(1040), "--provider", &hostile, "--provider-memory", "1GiB"])
            .error();
    assert!(err.contains("memory"), "{err}");
    let err = wasm_ccm(&["call", "info", "--provider", &hostile, "--provider-memory", "5GiB"]).error();
    assert_eq!(err, "error: --provider-memory must be at most 4GiB, the most a 32-bit linear memory holds");
}
