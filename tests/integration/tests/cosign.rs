//! Signatures as the real cosign v3 makes them, verified offline with the
//! operator's key: blob bundles (`sign-blob --bundle`, `attest-blob`), the
//! bare base64 signature earlier cosigns wrote, OCI 1.1 referrers (through
//! the referrers tag, since Debian's `docker-registry` has no referrers
//! API) and the `sha256-<hex>.sig` tag; and what is refused: a bundle for
//! other bytes, a wrong key, a tampered payload, a referrer of another
//! manifest, a log entry nobody checks.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use wasm_ccm_distribution::{
    DistributionError, PublicKey, SigningKey, TransparencyLog, Verification, pull, push, referrers_tag, sha256_digest,
    sign_bundle, verify_bytes,
};
use wasm_ccm_tests::clients::{COSIGN_PASSWORD, CosignKeys};
use wasm_ccm_tests::guest;
use wasm_ccm_tests::registry::Registry;
use wasm_ccm_tests::tools::Tool;

fn keyed(keys: &CosignKeys) -> Verification {
    Verification { public_key: Some(PublicKey::from_pem(&keys.public_key_pem()).unwrap()), ..Verification::none() }
}

/// The provider and, beside it, another component: two digests.
fn two_providers(dir: &std::path::Path) -> (Vec<u8>, Vec<u8>) {
    let wasm = guest("provider-fake").to_vec();
    let other = guest("guest-other-world").to_vec();
    std::fs::write(dir.join("provider.wasm"), &wasm).unwrap();
    std::fs::write(dir.join("other.wasm"), &other).unwrap();
    (wasm, other)
}

#[test]
fn blob_bundles_and_bare_signatures_of_cosign_v3_verify_and_impostors_are_refused() {
    let keys = CosignKeys::generate().expect("cosign generate-key-pair");
    let dir = tempfile::tempdir().unwrap();
    let (wasm, other) = two_providers(dir.path());
    let digest = sha256_digest(&wasm);

    // Every form cosign v3 writes for a blob verifies.
    let bundle = keys.sign_blob_bundle(&dir.path().join("provider.wasm")).expect("sign-blob --bundle");
    let attestation = keys.attest_blob_bundle(&dir.path().join("provider.wasm")).expect("attest-blob --bundle");
    let legacy = keys.sign_blob_legacy(&dir.path().join("provider.wasm")).expect("sign-blob --output-signature");
    let as_written: serde_json::Value = serde_json::from_slice(&bundle).unwrap();
    assert_eq!(as_written["mediaType"], "application/vnd.dev.sigstore.bundle.v0.3+json");
    assert!(as_written["messageSignature"].is_object(), "{as_written}");
    assert!(!legacy.starts_with(b"{"), "the bare signature is base64");
    for (form, signature) in [("bundle", &bundle), ("DSSE bundle", &attestation), ("bare signature", &legacy)] {
        assert_eq!(verify_bytes(&wasm, Some(signature), &keyed(&keys)).unwrap(), digest, "{form}");
    }

    // A bundle of other bytes, offered for these.
    let of_other = keys.sign_blob_bundle(&dir.path().join("other.wasm")).unwrap();
    let err = verify_bytes(&wasm, Some(&of_other), &keyed(&keys)).unwrap_err();
    assert_eq!(err.to_string(), format!("sigstore bundle refused: it is for {}, not {digest}", sha256_digest(&other)));
    let attested_other = keys.attest_blob_bundle(&dir.path().join("other.wasm")).unwrap();
    let err = verify_bytes(&wasm, Some(&attested_other), &keyed(&keys)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("the signature verifies but signs {}, not {digest}", sha256_digest(&other)),
        "a DSSE statement naming other bytes"
    );

    // Another key.
    let impostor = CosignKeys::generate().unwrap();
    for signature in [&bundle, &attestation, &legacy] {
        let err = verify_bytes(&wasm, Some(signature), &keyed(&impostor)).unwrap_err();
        assert_eq!(err.to_string(), "signature does not verify with the configured key");
    }

    // The DSSE payload rewritten to name other bytes, its signature kept.
    let mut tampered: serde_json::Value = serde_json::from_slice(&attestation).unwrap();
    let payload = STANDARD.decode(tampered["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap();
    let payload = String::from_utf8(payload)
        .unwrap()
        .replace(digest.strip_prefix("sha256:").unwrap(), sha256_digest(&other).strip_prefix("sha256:").unwrap());
    tampered["dsseEnvelope"]["payload"] = STANDARD.encode(payload).into();
    let tampered = serde_json::to_vec(&tampered).unwrap();
    let err = verify_bytes(&other, Some(&tampered), &keyed(&keys)).unwrap_err();
    assert!(matches!(err, DistributionError::BadSignature), "{err}");
    // The message signature's digest rewritten: the signature no longer covers it.
    let mut rewritten: serde_json::Value = serde_json::from_slice(&bundle).unwrap();
    let other_hash = sha2_base64(&other);
    rewritten["messageSignature"]["messageDigest"]["digest"] = other_hash.into();
    let rewritten = serde_json::to_vec(&rewritten).unwrap();
    let err = verify_bytes(&other, Some(&rewritten), &keyed(&keys)).unwrap_err();
    assert!(matches!(err, DistributionError::BadSignature), "{err}");

    // A log entry no key checks is refused, unless ignored explicitly.
    let mut logged: serde_json::Value = serde_json::from_slice(&bundle).unwrap();
    logged["verificationMaterial"]["tlogEntries"] = serde_json::json!([{
        "logIndex": "1", "logId": {"keyId": STANDARD.encode([0u8; 32])}, "integratedTime": "1",
        "canonicalizedBody": STANDARD.encode(b"{}"),
    }]);
    let logged = serde_json::to_vec(&logged).unwrap();
    let err = verify_bytes(&wasm, Some(&logged), &keyed(&keys)).unwrap_err();
    assert!(err.to_string().contains("it has 1 transparency log entry, and no log key is configured"), "{err}");
    let ignoring = Verification { transparency_log: TransparencyLog::Ignore, ..keyed(&keys) };
    assert_eq!(verify_bytes(&wasm, Some(&logged), &ignoring).unwrap(), digest);
}

#[test]
fn cosign_v3_verifies_the_bundles_wasm_ccm_makes() {
    let keys = CosignKeys::generate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (wasm, _) = two_providers(dir.path());
    let key = SigningKey::from_pem(&std::fs::read(keys.private_key()).unwrap(), Some(COSIGN_PASSWORD.as_bytes()))
        .expect("cosign's encrypted key");
    std::fs::write(dir.path().join("provider.wasm.sigstore.json"), sign_bundle(&wasm, &key).unwrap()).unwrap();
    let bundle = dir.path().join("provider.wasm.sigstore.json").display().to_string();
    let wasm_path = dir.path().join("provider.wasm").display().to_string();
    let public = keys.public_key().display().to_string();
    let output = keys
        .cosign(&["verify-blob", "--key", &public, "--bundle", &bundle, "--insecure-ignore-tlog", &wasm_path])
        .expect("cosign verify-blob accepts the bundle");
    assert!(String::from_utf8_lossy(&output.stderr).contains("Verified OK"), "{output:?}");
}

fn sha2_base64(bytes: &[u8]) -> String {
    let hex = sha256_digest(bytes);
    let hex = hex.strip_prefix("sha256:").unwrap();
    let raw: Vec<u8> = (0..32).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect();
    STANDARD.encode(raw)
}

#[tokio::test]
async fn referrers_and_signature_tags_of_cosign_v3_verify_and_a_referrer_of_another_manifest_is_refused() {
    let registry = Registry::plain().expect("docker-registry");
    let keys = CosignKeys::generate().unwrap();
    let options = registry.options();
    let wasm = guest("provider-fake").to_vec();
    let other = guest("guest-other-world").to_vec();

    // cosign v3's `sign`: a sigstore bundle as an OCI 1.1 referrer.
    let signed = registry.reference("providers/fake:v1");
    let digest = push(&wasm, &signed, &options).await.unwrap();
    keys.sign_image(&format!("{}/providers/fake@{digest}", registry.host()), false).expect("cosign sign");
    let pulled = pull(&signed, &options, &keyed(&keys)).await.expect("the referrer's bundle verifies");
    assert!(pulled.wasm == wasm);
    let served = registry.served();
    let asked = |path: &str| served.iter().rev().find(|served| served.path == path).map(|served| served.status);
    assert_eq!(asked(&format!("/v2/providers/fake/referrers/{digest}")), Some(404), "the registry has no API");
    assert_eq!(
        asked(&format!("/v2/providers/fake/manifests/{}", referrers_tag(&digest))),
        Some(200),
        "the referrers tag was read instead"
    );
    let err = pull(&signed, &options, &keyed(&CosignKeys::generate().unwrap())).await.unwrap_err();
    assert_eq!(err.to_string(), "signature does not verify with the configured key");

    // Earlier cosigns' form: the `sha256-<hex>.sig` tag, still read.
    let legacy = registry.reference("legacy/fake:v1");
    let legacy_digest = push(&wasm, &legacy, &options).await.unwrap();
    keys.sign_image(&format!("{}/legacy/fake@{legacy_digest}", registry.host()), true).expect("cosign sign, legacy");
    assert!(pull(&legacy, &options, &keyed(&keys)).await.expect("the .sig tag verifies").wasm == wasm);

    // Another manifest in the same repository, its referrers tag holding
    // the first manifest's referrer: refused, naming both.
    let elsewhere = registry.reference("providers/fake:v2");
    let other_digest = push(&other, &elsewhere, &options).await.unwrap();
    let index = registry.stored(&index_digest(&registry, &digest).await).unwrap();
    let copied = registry
        .put_by_hand(
            &format!("providers/fake:{}", referrers_tag(&other_digest)),
            "application/vnd.oci.image.index.v1+json",
            &index,
            &[],
        )
        .await
        .unwrap();
    assert_eq!(copied, sha256_digest(&index));
    let referrer = referrer_of(&index);
    let err = pull(&elsewhere, &options, &keyed(&keys)).await.unwrap_err();
    assert_eq!(err.to_string(), format!("the referrer {referrer} is of {digest}, not of {other_digest}"));

    // A referrer that names this manifest but carries the other's bundle.
    let referrer_manifest: serde_json::Value = serde_json::from_slice(&registry.stored(&referrer).unwrap()).unwrap();
    let bundle_digest = referrer_manifest["layers"][0]["digest"].as_str().unwrap().to_owned();
    let mut forged = referrer_manifest.clone();
    forged["subject"]["digest"] = other_digest.clone().into();
    forged["subject"]["size"] = registry.stored(&other_digest).unwrap().len().into();
    let forged = serde_json::to_vec(&forged).unwrap();
    let forged_digest = registry
        .put_by_hand("providers/fake:forged", "application/vnd.oci.image.manifest.v1+json", &forged, &[])
        .await
        .unwrap();
    let forged_index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": forged_digest, "size": forged.len(),
            "artifactType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        }],
    }))
    .unwrap();
    registry
        .put_by_hand(
            &format!("providers/fake:{}", referrers_tag(&other_digest)),
            "application/vnd.oci.image.index.v1+json",
            &forged_index,
            &[],
        )
        .await
        .unwrap();
    let err = pull(&elsewhere, &options, &keyed(&keys)).await.unwrap_err();
    assert_eq!(err.to_string(), format!("the signature verifies but signs {digest}, not {other_digest}"));
    assert!(registry.stored(&bundle_digest).is_ok(), "the bundle read was the first manifest's");
}

/// The digest of the index under `digest`'s referrers tag, as stored.
async fn index_digest(registry: &Registry, digest: &str) -> String {
    let tag = registry.reference(&format!("providers/fake:{}", referrers_tag(digest)));
    wasm_ccm_distribution::resolve(&tag, &registry.options()).await.expect("the referrers tag")
}

/// The one referrer an index lists.
fn referrer_of(index: &[u8]) -> String {
    let index: serde_json::Value = serde_json::from_slice(index).unwrap();
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "{index}");
    assert_eq!(manifests[0]["artifactType"], "application/vnd.dev.sigstore.bundle.v0.3+json");
    manifests[0]["digest"].as_str().unwrap().to_owned()
}

#[test]
fn the_tools_are_the_pinned_versions() {
    let output = Tool::Cosign.run(std::path::Path::new("/"), &["version"], &[]).unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(text.contains(&format!("GitVersion:    {}", Tool::Cosign.version())), "{text}");
    let output = Tool::Oras.run(std::path::Path::new("/"), &["version"], &[]).unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains(&format!("Version:    {}", Tool::Oras.version().trim_start_matches('v'))), "{text}");
    let output = Tool::Wkg.run(std::path::Path::new("/"), &["--version"], &[]).unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), format!("wkg {}", Tool::Wkg.version()));
}
