//! Provider distribution against a real registry (Debian's
//! `docker-registry`): push, pull, media types, pins, cosign signatures,
//! tags that move, credentials, TLS, and inspecting a built provider.

use std::process::Command;

use wasm_ccm_distribution::{
    Auth, DistributionError, PublicKey, RegistryOptions, SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, SigningKey,
    Verification, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, inspect, pull, push, resolve, sha256_digest, sign,
    sign_bytes, signature_tag, verify_bytes,
};
use wasm_ccm_tests::guest;
use wasm_ccm_tests::registry::{Registry, Served, Settings, docker_config};

fn provider() -> Vec<u8> {
    guest("provider-fake").to_vec()
}

fn start(settings: Settings) -> Registry {
    Registry::start(settings).unwrap_or_else(|err| panic!("cannot start the registry: {err:#}"))
}

fn with_key(key: &SigningKey) -> Verification {
    Verification { pin: None, public_key: Some(key.public_key().expect("a public key")), ..Verification::none() }
}

/// Manifest and blob requests for `repository`, leaving out `/v2/` probes.
fn repository_requests(served: &[Served], repository: &str) -> Vec<Served> {
    let prefix = format!("/v2/{repository}/");
    served.iter().filter(|served| served.path.starts_with(&prefix)).cloned().collect()
}

#[tokio::test]
async fn push_then_pull_by_tag_and_by_digest() {
    let registry = start(Settings::default());
    let wasm = provider();
    let reference = registry.reference("providers/fake:v1");
    let manifest_digest = push(&wasm, &reference, &registry.options()).await.expect("push");
    assert_eq!(push(&wasm, &reference, &registry.options()).await.unwrap(), manifest_digest, "pushes are reproducible");
    assert_eq!(resolve(&reference, &registry.options()).await.unwrap(), manifest_digest);

    let pulled = pull(&reference, &registry.options(), &Verification::none()).await.expect("pull by tag");
    assert!(pulled.wasm == wasm, "the bytes pulled are the bytes pushed");
    assert_eq!(pulled.digest, sha256_digest(&wasm));
    assert_eq!(pulled.manifest_digest, manifest_digest);
    assert_eq!(pulled.reference, reference.with_digest(&manifest_digest).unwrap());
    assert_eq!(pulled.reference.to_string(), format!("oci://{}/providers/fake:v1@{manifest_digest}", registry.host()));

    let by_digest = registry.reference(&format!("providers/fake@{manifest_digest}"));
    assert_eq!(resolve(&by_digest, &registry.options()).await.unwrap(), manifest_digest);
    let pulled = pull(&by_digest, &registry.options(), &Verification::none()).await.expect("pull by digest");
    assert!(pulled.wasm == wasm);
    assert_eq!(pulled.digest, sha256_digest(&wasm));

    // What the registry stores is the CNCF format, with the component's world.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(registry.blob_path(&manifest_digest)).unwrap()).unwrap();
    assert_eq!(manifest["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1);
    assert_eq!(manifest["layers"][0]["mediaType"], WASM_LAYER_MEDIA_TYPE);
    assert_eq!(manifest["layers"][0]["digest"], sha256_digest(&wasm));
    let config_digest = manifest["config"]["digest"].as_str().unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(registry.blob_path(config_digest)).unwrap()).unwrap();
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(config["layerDigests"], serde_json::json!([sha256_digest(&wasm)]));
    let exports = config["component"]["exports"].as_array().unwrap();
    assert!(exports.contains(&serde_json::json!("wasm-ccm:provider/instances-v2@0.2.2")), "{config}");
    let imports = config["component"]["imports"].as_array().unwrap();
    assert!(imports.contains(&serde_json::json!("wasm-ccm:provider/http@0.2.2")), "{config}");
}

#[tokio::test]
async fn pushing_needs_webassembly_and_a_tag() {
    let registry = start(Settings::default());
    let err = push(b"#!/bin/sh", &registry.reference("acme:v1"), &registry.options()).await.unwrap_err();
    assert!(matches!(err, DistributionError::NotWebAssembly(_)), "{err}");
    let pinned = registry.reference(&format!("acme@{}", sha256_digest(b"x")));
    let err = push(&provider(), &pinned, &registry.options()).await.unwrap_err();
    assert!(err.to_string().contains("a provider is pushed to a tag, not to a digest"), "{err}");
    assert!(repository_requests(&registry.served(), "acme").is_empty(), "nothing reached the registry");
}

#[tokio::test]
async fn older_layer_media_types_are_accepted() {
    let registry = start(Settings::default());
    let wasm = provider();
    for (path, config, layer) in [
        ("legacy:wasm-to-oci", "application/vnd.wasm.config.v1+json", "application/vnd.wasm.content.layer.v1+wasm"),
        (
            "legacy:containerd",
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.module.wasm.content.layer.v1+wasm",
        ),
    ] {
        let digest = registry.push_by_hand(path, (config, b"{}"), &[(layer, &wasm, None)]).await.expect("push by hand");
        let pulled = pull(&registry.reference(path), &registry.options(), &Verification::none()).await.expect(layer);
        assert!(pulled.wasm == wasm, "{layer}");
        assert_eq!(pulled.manifest_digest, digest);
        assert_eq!(pulled.digest, sha256_digest(&wasm));
    }
}

/// A layer of a manifest pushed by hand: media type, bytes, annotations.
type Layer<'a> = (&'a str, &'a [u8], Option<serde_json::Value>);

/// A manifest that is not a provider artifact, and what the refusal names.
struct Refused<'a> {
    path: &'a str,
    config: (&'a str, &'a [u8]),
    layers: Vec<Layer<'a>>,
    expected: &'a str,
}

#[tokio::test]
async fn images_and_multi_layer_artifacts_are_refused() {
    let registry = start(Settings::default());
    let wasm = provider();
    let cases = [
        Refused {
            path: "refused:image",
            config: ("application/vnd.oci.image.config.v1+json", br#"{"architecture":"amd64","os":"linux"}"#),
            layers: vec![("application/vnd.oci.image.layer.v1.tar+gzip", b"not a tarball", None)],
            expected: "layer media type application/vnd.oci.image.layer.v1.tar+gzip is not WebAssembly",
        },
        Refused {
            path: "refused:two-layers",
            config: (WASM_CONFIG_MEDIA_TYPE, b"{}"),
            layers: vec![(WASM_LAYER_MEDIA_TYPE, &wasm, None), (WASM_LAYER_MEDIA_TYPE, b"\0asm\x01\0\0\0", None)],
            expected: "artifact has 2 layers; a provider artifact has exactly one (application/wasm, application/wasm)",
        },
        Refused {
            path: "refused:wrong-config",
            config: ("application/vnd.oci.image.config.v1+json", b"{}"),
            layers: vec![(WASM_LAYER_MEDIA_TYPE, &wasm, None)],
            expected: "config media type application/vnd.oci.image.config.v1+json is not \
                       application/vnd.wasm.config.v0+json",
        },
        Refused {
            path: "refused:helm",
            config: ("application/vnd.cncf.helm.config.v1+json", b"{}"),
            layers: vec![("application/vnd.cncf.helm.chart.content.v1.tar+gzip", b"chart", None)],
            expected: "layer media type application/vnd.cncf.helm.chart.content.v1.tar+gzip is not WebAssembly",
        },
    ];
    for Refused { path, config, layers, expected } in cases {
        let digest = registry.push_by_hand(path, config, &layers).await.expect("push by hand");
        let err = pull(&registry.reference(path), &registry.options(), &Verification::none()).await.unwrap_err();
        assert!(matches!(err, DistributionError::NotAProvider { .. }), "{path}: {err}");
        let message = err.to_string();
        // The refusal names the manifest that was read: the tag and the digest it resolved to.
        let pinned = registry.reference(path).with_digest(&digest).unwrap();
        assert_eq!(pinned.to_string(), format!("oci://{}/{path}@{digest}", registry.host()));
        assert!(message.starts_with(&format!("{pinned} is not a provider artifact: ")), "{path}: {message}");
        assert!(message.contains(expected), "{path}: {message}");
    }
    // Refused from the manifest alone: no layer was downloaded.
    let blob_reads: Vec<_> = registry
        .served()
        .into_iter()
        .filter(|served| served.method == "GET" && served.path.contains("/blobs/"))
        .collect();
    assert!(blob_reads.is_empty(), "{blob_reads:?}");
}

#[tokio::test]
async fn pins_and_size_limits() {
    let registry = start(Settings::default());
    let wasm = provider();
    let reference = registry.reference("pinned:v1");
    push(&wasm, &reference, &registry.options()).await.expect("push");

    let pin = Verification { pin: Some(sha256_digest(&wasm)), public_key: None, ..Verification::none() };
    assert!(pull(&reference, &registry.options(), &pin).await.expect("the right pin").wasm == wasm);
    let wrong =
        Verification { pin: Some(sha256_digest(b"another provider")), public_key: None, ..Verification::none() };
    let err = pull(&reference, &registry.options(), &wrong).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("digest {} does not match the pin {}", sha256_digest(&wasm), sha256_digest(b"another provider"))
    );

    let small = RegistryOptions { max_size: 1000, ..registry.options() };
    let err = pull(&reference, &small, &Verification::none()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("the provider layer is {} bytes, more than the limit of 1000 bytes", wasm.len())
    );
    let layer_reads = registry
        .served()
        .into_iter()
        .filter(|served| served.method == "GET" && served.path.ends_with(&sha256_digest(&wasm)))
        .count();
    assert_eq!(
        layer_reads, 1,
        "only the pull with the right pin and within the limit read the layer: \
         the wrong pin and the size limit were refused from the manifest"
    );
}

#[tokio::test]
async fn tampered_storage_is_detected() {
    let registry = start(Settings::default());
    let wasm = provider();
    let reference = registry.reference("tampered:v1");
    let manifest_digest = push(&wasm, &reference, &registry.options()).await.expect("push");

    // Same length, one byte changed, behind the registry's back.
    let mut evil = wasm.clone();
    let middle = evil.len() / 2;
    evil[middle] ^= 0xff;
    std::fs::write(registry.blob_path(&sha256_digest(&wasm)), &evil).unwrap();
    let err = pull(&reference, &registry.options(), &Verification::none()).await.unwrap_err();
    assert!(
        matches!(&err, DistributionError::DigestMismatch { expected, actual, .. }
            if *expected == sha256_digest(&wasm) && *actual == sha256_digest(&evil)),
        "{err}"
    );

    let manifest_path = registry.blob_path(&manifest_digest);
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    // Still valid JSON, still the same manifest, other bytes.
    std::fs::write(&manifest_path, manifest.replacen('{', "{ ", 1)).unwrap();
    let err = pull(&reference, &registry.options(), &Verification::none()).await.unwrap_err();
    assert!(
        matches!(&err, DistributionError::DigestMismatch { expected, .. } if *expected == manifest_digest),
        "{err}"
    );
}

#[tokio::test]
async fn cosign_signatures_of_the_manifest_digest() {
    let registry = start(Settings::default());
    let wasm = provider();
    let key = SigningKey::generate().unwrap();
    let signed = registry.reference("signed:v1");
    let digest = push(&wasm, &signed, &registry.options()).await.expect("push");
    assert_eq!(sign(&signed, &key, &registry.options()).await.expect("sign"), digest);
    assert_eq!(sign(&signed, &key, &registry.options()).await.expect("sign again"), digest);

    let pulled = pull(&signed, &registry.options(), &with_key(&key)).await.expect("a valid signature");
    assert!(pulled.wasm == wasm);
    let pem = key.public_key_pem().unwrap();
    let from_pem = Verification {
        pin: None,
        public_key: Some(PublicKey::from_pem(pem.as_bytes()).unwrap()),
        ..Verification::none()
    };
    assert!(pull(&signed, &registry.options(), &from_pem).await.is_ok());

    // Stored the way cosign stores it: one payload layer however often it is signed.
    let signatures = registry.reference(&format!("signed:{}", signature_tag(&digest)));
    let stored = resolve(&signatures, &registry.options()).await.expect("the signature tag");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(registry.blob_path(&stored)).unwrap()).unwrap();
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    assert_eq!(layers[0]["mediaType"], SIMPLE_SIGNING_MEDIA_TYPE);
    let payload: serde_json::Value =
        serde_json::from_slice(&std::fs::read(registry.blob_path(layers[0]["digest"].as_str().unwrap())).unwrap())
            .unwrap();
    assert_eq!(payload["critical"]["image"]["docker-manifest-digest"], digest);
    assert_eq!(payload["critical"]["type"], "cosign container image signature");

    let other = SigningKey::generate().unwrap();
    let err = pull(&signed, &registry.options(), &with_key(&other)).await.unwrap_err();
    assert_eq!(err.to_string(), "signature does not verify with the configured key");

    // A second signer is added beside the first; both keys then verify.
    sign(&signed, &other, &registry.options()).await.expect("a second signature");
    assert!(pull(&signed, &registry.options(), &with_key(&other)).await.is_ok());
    assert!(pull(&signed, &registry.options(), &with_key(&key)).await.is_ok());

    // The same bytes in another repository: the same manifest digest, no signature there.
    let unsigned = registry.reference("unsigned:v1");
    push(&wasm, &unsigned, &registry.options()).await.expect("push");
    let err = pull(&unsigned, &registry.options(), &with_key(&key)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no signature for {}, and the configured public key requires one",
            unsigned.with_digest(&digest).unwrap()
        )
    );
}

/// Puts a hand-made signature manifest with one payload layer beside
/// `repository@digest`.
async fn store_signature(registry: &Registry, repository: &str, digest: &str, payload: &[u8], signature: &str) {
    let annotations = serde_json::json!({ SIGNATURE_ANNOTATION: signature });
    registry
        .push_by_hand(
            &format!("{repository}:{}", signature_tag(digest)),
            ("application/vnd.oci.image.config.v1+json", b"{}"),
            &[(SIMPLE_SIGNING_MEDIA_TYPE, payload, Some(annotations))],
        )
        .await
        .expect("a signature manifest");
}

fn payload(registry: &Registry, repository: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": format!("{}/{repository}", registry.host())},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": null,
    }))
    .unwrap()
}

#[tokio::test]
async fn tampered_and_misdirected_signatures_fail() {
    let registry = start(Settings::default());
    let wasm = provider();
    let key = SigningKey::generate().unwrap();
    let reference = registry.reference("forged:v1");
    let digest = push(&wasm, &reference, &registry.options()).await.expect("push");

    // A valid signature whose base64 was altered.
    let good = payload(&registry, "forged", &digest);
    let mut signature = base64_decode(&sign_bytes(&good, &key).unwrap());
    let last = signature.len() - 1;
    signature[last] ^= 1;
    store_signature(&registry, "forged", &digest, &good, &base64_encode(&signature)).await;
    let err = pull(&reference, &registry.options(), &with_key(&key)).await.unwrap_err();
    assert!(matches!(err, DistributionError::BadSignature), "{err}");

    // A genuine signature over a payload whose digest was changed after signing.
    let other_digest = sha256_digest(b"some other manifest");
    let signature = sign_bytes(&payload(&registry, "forged", &other_digest), &key).unwrap();
    store_signature(&registry, "forged", &digest, &good, &signature).await;
    let err = pull(&reference, &registry.options(), &with_key(&key)).await.unwrap_err();
    assert!(matches!(err, DistributionError::BadSignature), "{err}");

    // A genuine signature of another manifest, copied under this digest's tag.
    let misdirected = payload(&registry, "forged", &other_digest);
    store_signature(&registry, "forged", &digest, &misdirected, &signature).await;
    let err = pull(&reference, &registry.options(), &with_key(&key)).await.unwrap_err();
    assert_eq!(err.to_string(), format!("the signature verifies but signs {other_digest}, not {digest}"));
}

#[tokio::test]
async fn a_tag_moved_after_resolving_cannot_swap_the_bytes() {
    let registry = start(Settings::default());
    let key = SigningKey::generate().unwrap();
    let verified = provider();
    let reference = registry.reference("moving:stable");
    push(&verified, &reference, &registry.options()).await.expect("push");
    sign(&reference, &key, &registry.options()).await.expect("sign");

    let resolved = resolve(&reference, &registry.options()).await.unwrap();
    // The tag now points at other, unsigned bytes.
    let other = guest("guest-other-world").to_vec();
    push(&other, &reference, &registry.options()).await.expect("push over the tag");
    assert_ne!(resolve(&reference, &registry.options()).await.unwrap(), resolved);
    let pushed = registry.served().len();

    let pulled = pull(&reference.with_digest(&resolved).unwrap(), &registry.options(), &with_key(&key))
        .await
        .expect("the digest resolved earlier");
    assert!(pulled.wasm == verified, "the bytes of the digest that was resolved and verified");
    assert_eq!(pulled.digest, sha256_digest(&verified));
    let during_pull = registry.served()[pushed..].to_vec();
    assert!(!during_pull.is_empty());
    for served in repository_requests(&during_pull, "moving") {
        assert!(!served.path.ends_with("/manifests/stable"), "the tag was not read again: {served:?}");
    }

    // Pulling by the tag now gets the new manifest, which is not signed.
    let err = pull(&reference, &registry.options(), &with_key(&key)).await.unwrap_err();
    assert!(matches!(err, DistributionError::MissingSignature(_)), "{err}");

    // A pull by tag reads the tag once, with HEAD, then goes by digest only.
    let start = registry.served().len();
    let unverified = pull(&reference, &registry.options(), &Verification::none()).await.unwrap();
    let requests = repository_requests(&registry.served()[start..], "moving");
    let by_tag: Vec<_> = requests.iter().filter(|served| served.path.ends_with("/manifests/stable")).collect();
    assert_eq!(by_tag.len(), 1, "{requests:?}");
    assert_eq!(by_tag[0].method, "HEAD");
    let by_digest = format!("/v2/moving/manifests/{}", unverified.manifest_digest);
    assert!(requests.iter().any(|served| served.method == "GET" && served.path == by_digest), "{requests:?}");
    assert!(unverified.wasm == other);
}

#[tokio::test]
async fn basic_auth_from_a_docker_config() {
    let registry = start(Settings { basic_auth: Some(("alice".into(), "s3cret".into())), ..Settings::default() });
    let wasm = provider();
    let reference = registry.reference("private/acme:v1");
    let json = docker_config(&registry.host(), "alice", "s3cret");
    let auth = Auth::from_docker_config(&json, &registry.host()).unwrap();
    assert_eq!(auth, Auth::Basic { username: "alice".into(), password: "s3cret".into() });
    let options = RegistryOptions { auth, ..registry.options() };
    let digest = push(&wasm, &reference, &options).await.expect("push with credentials");
    let pulled = pull(&reference, &options, &Verification::none()).await.expect("pull with credentials");
    assert!(pulled.wasm == wasm);
    assert_eq!(pulled.manifest_digest, digest);

    let wrong = docker_config(&registry.host(), "alice", "guess");
    let wrong =
        RegistryOptions { auth: Auth::from_docker_config(&wrong, &registry.host()).unwrap(), ..options.clone() };
    let err = pull(&reference, &wrong, &Verification::none()).await.unwrap_err();
    assert!(matches!(err, DistributionError::Unauthorized { .. }), "{err}");
    assert!(
        err.to_string().starts_with(&format!("registry {} refused access to private/acme: ", registry.host())),
        "{err}"
    );

    let anonymous = RegistryOptions { auth: Auth::Anonymous, ..options.clone() };
    let err = resolve(&reference, &anonymous).await.unwrap_err();
    assert!(matches!(err, DistributionError::Unauthorized { .. }), "{err}");
    let err = push(&wasm, &registry.reference("private/other:v1"), &anonymous).await.unwrap_err();
    assert!(matches!(err, DistributionError::Unauthorized { .. }), "{err}");

    // A config for another registry gives no credentials.
    let elsewhere = docker_config("registry.example:5000", "alice", "s3cret");
    assert_eq!(Auth::from_docker_config(&elsewhere, &registry.host()).unwrap(), Auth::Anonymous);
}

#[tokio::test]
async fn tls_with_an_extra_ca_and_plain_http_only_when_asked() {
    let secure = start(Settings { tls: true, ..Settings::default() });
    let wasm = provider();
    let reference = secure.reference("tls/acme:v1");
    assert!(secure.options().extra_ca_pem.is_some() && secure.options().plain_http_registries.is_empty());
    let digest = push(&wasm, &reference, &secure.options()).await.expect("push over TLS");
    let pulled = pull(&reference, &secure.options(), &Verification::none()).await.expect("pull over TLS");
    assert!(pulled.wasm == wasm);
    assert_eq!(pulled.manifest_digest, digest);

    let untrusted = RegistryOptions { extra_ca_pem: None, ..secure.options() };
    let err = pull(&reference, &untrusted, &Verification::none()).await.unwrap_err();
    assert!(matches!(err, DistributionError::Registry { .. }), "{err}");
    let chain = error_chain(&err);
    assert!(chain.contains("certificate") || chain.contains("UnknownIssuer"), "{chain}");

    let plain = start(Settings::default());
    let reference = plain.reference("plain/acme:v1");
    push(&wasm, &reference, &plain.options()).await.expect("push over plain HTTP to a listed registry");
    let tls_only = RegistryOptions { plain_http_registries: Vec::new(), ..plain.options() };
    let err = pull(&reference, &tls_only, &Verification::none()).await.unwrap_err();
    assert!(matches!(err, DistributionError::Registry { .. }), "{err}");
    let listed = pull(&reference, &plain.options(), &Verification::none()).await.expect("listed registry");
    assert!(listed.wasm == wasm);
    let everywhere = RegistryOptions { plain_http: true, ..tls_only };
    assert!(pull(&reference, &everywhere, &Verification::none()).await.expect("plain HTTP for this pull").wasm == wasm);
    let manifest_reads = plain
        .served()
        .into_iter()
        .filter(|served| served.path.contains("/manifests/") && served.method == "GET" && served.status == 200)
        .count();
    assert_eq!(manifest_reads, 2, "only the two pulls that asked for plain HTTP were served");
}

#[test]
fn inspect_lists_the_fake_providers_world() {
    let wasm = provider();
    let inspection = inspect(&wasm).expect("inspect");
    assert!(inspection.component);
    assert_eq!(inspection.size, wasm.len());
    assert_eq!(inspection.digest, sha256_digest(&wasm));
    let expected: Vec<String> = [
        "clusters",
        "instances",
        "instances-batch",
        "instances-v2",
        "load-balancer",
        "metadata-batch",
        "provider",
        "routes",
        "zones",
    ]
    .iter()
    .map(|name| format!("wasm-ccm:provider/{name}@0.2.2"))
    .collect();
    assert_eq!(inspection.exports, expected);
    // A component imports what it uses: both providers make HTTP calls (the
    // host signs the AWS provider's requests, so it never reads its
    // credentials); only the AWS provider writes log lines.
    let imports = &inspection.imports;
    let aws = inspect(&guest("provider-aws")).expect("inspect the AWS provider");
    for (name, provider, imported) in [
        ("wasm-ccm:provider/http@0.2.2", imports, true),
        ("wasm-ccm:provider/log@0.2.2", imports, false),
        ("wasm-ccm:provider/credentials@0.2.2", imports, false),
        ("wasm-ccm:provider/http@0.2.2", &aws.imports, true),
        ("wasm-ccm:provider/log@0.2.2", &aws.imports, true),
    ] {
        assert_eq!(provider.iter().any(|import| import == name), imported, "{name} in {provider:?}");
    }
    assert!(
        imports.iter().all(|name| name.starts_with("wasi:") || name.starts_with("wasm-ccm:provider/")),
        "{imports:?}"
    );
    assert_eq!(aws.exports, inspection.exports, "both providers export the whole world");
    let text = inspection.to_string();
    assert!(text.contains("exports  wasm-ccm:provider/clusters@0.2.2\n"), "{text}");
    let json = serde_json::to_value(&inspection).unwrap();
    assert_eq!(json["component"], true);
    assert_eq!(json["exports"].as_array().unwrap().len(), 9);
}

#[test]
fn blob_signatures_interoperate_with_openssl() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let openssl = |args: &[&str]| {
        let output = Command::new("openssl").args(args).current_dir(dir.path()).output().expect("openssl runs");
        assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    let wasm = provider();
    std::fs::write(path("provider.wasm"), &wasm).unwrap();
    openssl(&["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.pem"]);
    openssl(&["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"]);

    // openssl signs the way `cosign sign-blob` does; the library verifies.
    openssl(&["dgst", "-sha256", "-sign", "key.pem", "-out", "provider.sig.der", "provider.wasm"]);
    let signature = base64_encode(&std::fs::read(path("provider.sig.der")).unwrap());
    let public_key = PublicKey::from_pem(&std::fs::read(path("pub.pem")).unwrap()).unwrap();
    let verification =
        Verification { pin: Some(sha256_digest(&wasm)), public_key: Some(public_key), ..Verification::none() };
    assert_eq!(verify_bytes(&wasm, Some(signature.as_bytes()), &verification).unwrap(), sha256_digest(&wasm));
    let mut changed = wasm.clone();
    changed.push(0);
    let unpinned = Verification { pin: None, ..verification.clone() };
    let err = verify_bytes(&changed, Some(signature.as_bytes()), &unpinned).unwrap_err();
    assert!(matches!(err, DistributionError::BadSignature), "{err}");

    // The library signs with openssl's key; openssl verifies.
    let key = SigningKey::from_pem(&std::fs::read(path("key.pem")).unwrap(), None).unwrap();
    std::fs::write(path("ours.sig.der"), base64_decode(&sign_bytes(&wasm, &key).unwrap())).unwrap();
    openssl(&["dgst", "-sha256", "-verify", "pub.pem", "-signature", "ours.sig.der", "provider.wasm"]);
}

#[tokio::test]
async fn cosign_payloads_signed_by_openssl_verify() {
    let registry = start(Settings::default());
    let wasm = provider();
    let reference = registry.reference("openssl:v1");
    let digest = push(&wasm, &reference, &registry.options()).await.expect("push");
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = Command::new("openssl").args(args).current_dir(dir.path()).output().expect("openssl runs");
        assert!(output.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    run(&["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.pem"]);
    run(&["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"]);
    let payload = payload(&registry, "openssl", &digest);
    std::fs::write(dir.path().join("payload.json"), &payload).unwrap();
    run(&["dgst", "-sha256", "-sign", "key.pem", "-out", "payload.sig", "payload.json"]);
    let signature = base64_encode(&std::fs::read(dir.path().join("payload.sig")).unwrap());
    store_signature(&registry, "openssl", &digest, &payload, &signature).await;

    let public_key = PublicKey::from_pem(&std::fs::read(dir.path().join("pub.pem")).unwrap()).unwrap();
    let verification = Verification { pin: None, public_key: Some(public_key), ..Verification::none() };
    let pulled = pull(&reference, &registry.options(), &verification).await.expect("openssl's signature verifies");
    assert!(pulled.wasm == wasm);
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}
