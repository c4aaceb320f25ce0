//! Interoperability with the OCI clients vendors use, the real binaries
//! against Debian's `docker-registry`: what `wasm-ccm provider push` pushes,
//! `oras pull` and `wkg oci pull` read byte for byte; what `oras push` (as
//! the CNCF WebAssembly format's guide writes it, and as an OCI 1.1
//! artifact) and `wkg oci push` push, wasm-ccm pulls and verifies with
//! its cosign v3 signature.

use std::process::Command;

use wasm_ccm_distribution::{
    LAYER_TITLE, PublicKey, TITLE_ANNOTATION, Verification, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, pull,
    resolve, sha256_digest,
};
use wasm_ccm_tests::clients::CosignKeys;
use wasm_ccm_tests::guest;
use wasm_ccm_tests::process::Run;
use wasm_ccm_tests::registry::Registry;
use wasm_ccm_tests::tools::Tool;

/// A directory with the fake provider in it, as `provider.wasm`.
fn work() -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let wasm = guest("provider-fake").to_vec();
    std::fs::write(dir.path().join("provider.wasm"), &wasm).unwrap();
    (dir, wasm)
}

#[tokio::test]
async fn what_wasm_ccm_pushes_oras_and_wkg_pull_byte_for_byte() {
    let registry = Registry::plain().expect("docker-registry");
    let (dir, wasm) = work();
    let image = format!("{}/providers/fake:v1", registry.host());
    let file = dir.path().join("provider.wasm").display().to_string();
    Run::of(Command::new(crate::binary()).args(["provider", "push", &file, &format!("oci://{image}"), "--plain-http"]))
        .ok();
    let digest = resolve(&registry.reference("providers/fake:v1"), &registry.options()).await.unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&registry.stored(&digest).unwrap()).unwrap();
    assert_eq!(manifest["layers"][0]["annotations"][TITLE_ANNOTATION], LAYER_TITLE, "{manifest}");

    let oras_out = dir.path().join("oras");
    std::fs::create_dir(&oras_out).unwrap();
    Tool::Oras.run(&oras_out, &["pull", "--plain-http", &image, "-o", "."], &[]).expect("oras pull");
    let pulled = std::fs::read(oras_out.join(LAYER_TITLE)).expect("oras writes the layer under its title");
    assert!(pulled == wasm, "oras pulls the bytes pushed");

    Tool::Wkg
        .run(dir.path(), &["oci", "pull", "--insecure", &registry.host(), &image, "-o", "wkg.wasm"], &[])
        .expect("wkg oci pull");
    assert!(std::fs::read(dir.path().join("wkg.wasm")).unwrap() == wasm, "wkg pulls the bytes pushed");
}

/// Signs `image` (by digest) with cosign v3 and pulls it with the key.
async fn cosigned_pull(registry: &Registry, keys: &CosignKeys, repository: &str) -> (String, Vec<u8>) {
    let reference = registry.reference(&format!("{repository}:v1"));
    let digest = resolve(&reference, &registry.options()).await.unwrap();
    keys.sign_image(&format!("{}/{repository}@{digest}", registry.host()), false).expect("cosign sign");
    let verification =
        Verification { public_key: Some(PublicKey::from_pem(&keys.public_key_pem()).unwrap()), ..Verification::none() };
    let pulled =
        pull(&reference, &registry.options(), &verification).await.unwrap_or_else(|err| panic!("{repository}: {err}"));
    assert_eq!(pulled.manifest_digest, digest);
    (digest, pulled.wasm)
}

#[tokio::test]
async fn what_oras_and_wkg_push_wasm_ccm_pulls_with_its_cosign_signature() {
    let registry = Registry::plain().expect("docker-registry");
    let keys = CosignKeys::generate().expect("cosign generate-key-pair");
    let (dir, wasm) = work();
    let host = registry.host();
    let run = |tool: Tool, args: &[&str]| tool.run(dir.path(), args, &[]).map(drop);

    // The CNCF WebAssembly format's guide: a config of its media type.
    let config = serde_json::json!({
        "architecture": "wasm", "os": "wasip2", "layerDigests": [sha256_digest(&wasm)],
    });
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let config_arg = format!("config.json:{WASM_CONFIG_MEDIA_TYPE}");
    let layer_arg = format!("provider.wasm:{WASM_LAYER_MEDIA_TYPE}");
    run(Tool::Oras, &["push", "--plain-http", &format!("{host}/oras/guide:v1"), "--config", &config_arg, &layer_arg])
        .expect("oras push --config");
    // An OCI 1.1 artifact: the empty config, the artifact type beside it.
    let artifact_type = format!("--artifact-type={WASM_CONFIG_MEDIA_TYPE}");
    run(Tool::Oras, &["push", "--plain-http", &format!("{host}/oras/artifact:v1"), &artifact_type, &layer_arg])
        .expect("oras push --artifact-type");
    run(Tool::Wkg, &["oci", "push", "--insecure", &host, &format!("{host}/wkg/fake:v1"), "provider.wasm"])
        .expect("wkg oci push");

    for repository in ["oras/guide", "oras/artifact", "wkg/fake"] {
        let (digest, pulled) = cosigned_pull(&registry, &keys, repository).await;
        assert!(pulled == wasm, "{repository}: the bytes pushed");
        let manifest: serde_json::Value = serde_json::from_slice(&registry.stored(&digest).unwrap()).unwrap();
        assert_eq!(manifest["layers"][0]["mediaType"], WASM_LAYER_MEDIA_TYPE, "{repository}: {manifest}");
    }
}
