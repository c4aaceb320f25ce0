//! The provider artifact: which manifests are providers, and the manifest
//! and config [`push`](crate::push) writes in the CNCF WebAssembly format.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::json::to_json;
use crate::{DistributionError, Reference, VERSION_ANNOTATION, digest};

/// The config media type of the CNCF WebAssembly OCI artifact format.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of the CNCF WebAssembly OCI artifact format.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The annotation naming a layer's file, which `oras pull` writes it to.
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";
/// The title of the layer [`push`](crate::push) writes: the same for every
/// push, so that the same bytes always give the same manifest digest.
pub const LAYER_TITLE: &str = "provider.wasm";
/// Older layer media types still found in registries: `wasm-to-oci` and
/// Kubewarden, and WebAssembly images for containerd shims.
pub const LEGACY_LAYER_MEDIA_TYPES: [&str; 2] =
    ["application/vnd.wasm.content.layer.v1+wasm", "application/vnd.module.wasm.content.layer.v1+wasm"];
/// The empty config of an OCI 1.1 artifact that states its type instead.
const EMPTY_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// Config media types accepted beside an older layer media type.
const LEGACY_CONFIG_MEDIA_TYPES: [&str; 5] = [
    WASM_CONFIG_MEDIA_TYPE,
    "application/vnd.wasm.config.v1+json",
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.unknown.config.v1+json",
    "application/vnd.oci.empty.v1+json",
];

/// An OCI image manifest.
pub(crate) const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// A Docker image manifest, schema 2, as older tools push.
pub(crate) const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Indexes: asked for so that they can be named when refused.
const INDEXES: [&str; 2] =
    ["application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"];
/// What pulls ask registries for.
pub(crate) const ACCEPTED_MANIFESTS: [&str; 4] = [OCI_MANIFEST, DOCKER_MANIFEST, INDEXES[0], INDEXES[1]];

/// A content descriptor, as manifests list their config and layers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    /// The artifact type of a referrer, in a referrers index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<std::collections::BTreeMap<String, String>>,
}

impl Descriptor {
    pub(crate) fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.to_owned(),
            digest: digest::sha256_digest(bytes),
            size: bytes.len() as u64,
            artifact_type: None,
            annotations: None,
        }
    }
}

/// An image manifest, or whatever else a registry returned, read leniently
/// so that what is wrong can be named.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Descriptor>,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    /// Only indexes have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifests: Option<Vec<serde_json::Value>>,
    /// The artifact type of an OCI 1.1 artifact, such as a referrer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// The manifest a referrer refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// The provider layer of the manifest `raw`, after checking that the
/// manifest is a provider artifact whose layer is at most `max_size` bytes.
///
/// Accepted: an image manifest (OCI, or Docker schema 2) with exactly one
/// layer, either `application/wasm` with the config
/// `application/vnd.wasm.config.v0+json` (or the empty config and that
/// artifact type, as `oras push --artifact-type` writes), or one of
/// [`LEGACY_LAYER_MEDIA_TYPES`] with a WebAssembly, image, ORAS or empty
/// config. Everything else is refused, naming what was found.
pub(crate) fn provider_layer(
    reference: &Reference,
    raw: &[u8],
    max_size: u64,
) -> Result<Descriptor, DistributionError> {
    let refuse = |reason: String| DistributionError::NotAProvider { reference: reference.to_string(), reason };
    let manifest: Manifest =
        serde_json::from_slice(raw).map_err(|err| refuse(format!("the manifest is not an image manifest: {err}")))?;
    if let Some(index) = manifest.media_type.as_deref().filter(|media_type| INDEXES.contains(media_type)) {
        return Err(refuse(format!("it is an index ({index}); a provider artifact is a single manifest")));
    }
    if manifest.manifests.is_some() {
        return Err(refuse("it is an index; a provider artifact is a single manifest".to_owned()));
    }
    if let Some(media_type) = manifest.media_type.as_deref().filter(|t| ![OCI_MANIFEST, DOCKER_MANIFEST].contains(t)) {
        return Err(refuse(format!("manifest media type {media_type} is not an image manifest")));
    }
    if manifest.schema_version != 2 {
        return Err(refuse(format!("manifest schema version {} is not 2", manifest.schema_version)));
    }
    let config = manifest.config.ok_or_else(|| refuse("the manifest has no config".to_owned()))?;
    let [mut layer] = <[Descriptor; 1]>::try_from(manifest.layers).map_err(|layers| {
        refuse(format!(
            "artifact has {} layer{}; a provider artifact has exactly one{}",
            layers.len(),
            if layers.len() == 1 { "" } else { "s" },
            describe_media_types(&layers)
        ))
    })?;
    // An OCI 1.1 artifact may state its type beside an empty config, as
    // `oras push --artifact-type` writes it.
    let typed_artifact = config.media_type == EMPTY_CONFIG_MEDIA_TYPE
        && manifest.artifact_type.as_deref() == Some(WASM_CONFIG_MEDIA_TYPE);
    if layer.media_type == WASM_LAYER_MEDIA_TYPE {
        if config.media_type != WASM_CONFIG_MEDIA_TYPE && !typed_artifact {
            return Err(refuse(format!(
                "config media type {} is not {WASM_CONFIG_MEDIA_TYPE}, which an {WASM_LAYER_MEDIA_TYPE} layer comes with",
                config.media_type
            )));
        }
    } else if LEGACY_LAYER_MEDIA_TYPES.contains(&layer.media_type.as_str()) {
        if !LEGACY_CONFIG_MEDIA_TYPES.contains(&config.media_type.as_str()) {
            return Err(refuse(format!(
                "config media type {} is not one a WebAssembly artifact uses ({})",
                config.media_type,
                LEGACY_CONFIG_MEDIA_TYPES.join(", ")
            )));
        }
    } else {
        return Err(refuse(format!(
            "layer media type {} is not WebAssembly ({WASM_LAYER_MEDIA_TYPE}, {})",
            layer.media_type,
            LEGACY_LAYER_MEDIA_TYPES.join(", ")
        )));
    }
    layer.digest = digest::parse(&layer.digest)
        .map_err(|_| refuse(format!("layer digest {:?} is not a sha256 digest", layer.digest)))?;
    if layer.size > max_size {
        return Err(DistributionError::TooLarge { what: "the provider layer", size: layer.size, limit: max_size });
    }
    Ok(layer)
}

/// `" (a, b)"`: the layers' media types, for an error.
fn describe_media_types(layers: &[Descriptor]) -> String {
    let mut text = String::new();
    for (i, layer) in layers.iter().enumerate() {
        let _ = write!(text, "{}{}", if i == 0 { " (" } else { ", " }, layer.media_type);
    }
    if !layers.is_empty() {
        text.push(')');
    }
    text
}

/// The config of the CNCF WebAssembly OCI artifact format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WasmConfig {
    /// Fixed at the Unix epoch, so that pushing the same bytes twice gives
    /// the same manifest digest and signatures stay valid.
    pub created: String,
    pub architecture: String,
    pub os: String,
    pub layer_digests: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentConfig>,
}

/// The world of a component, in a [`WasmConfig`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ComponentConfig {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// The config blob and manifest [`push`](crate::push) writes for `wasm`:
/// `(config, manifest)`, serialised.
pub(crate) fn provider_manifest(
    wasm: &[u8],
    component: Option<ComponentConfig>,
    version: Option<&semver::Version>,
) -> (Vec<u8>, Vec<u8>) {
    let mut layer = Descriptor::of(WASM_LAYER_MEDIA_TYPE, wasm);
    layer.annotations = Some([(TITLE_ANNOTATION.to_owned(), LAYER_TITLE.to_owned())].into());
    let config = WasmConfig {
        created: "1970-01-01T00:00:00Z".to_owned(),
        architecture: "wasm".to_owned(),
        os: "wasip2".to_owned(),
        layer_digests: vec![layer.digest.clone()],
        component,
    };
    let config = to_json(&config);
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.to_owned()),
        config: Some(Descriptor::of(WASM_CONFIG_MEDIA_TYPE, &config)),
        layers: vec![layer],
        manifests: None,
        artifact_type: None,
        subject: None,
        annotations: version.map(|version| [(VERSION_ANNOTATION.to_owned(), version.to_string())].into()),
    };
    let manifest = to_json(&manifest);
    (config, manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Reference {
        "oci://registry.example/acme:v1".parse().unwrap()
    }

    fn manifest(config: &str, layers: &[&str]) -> Vec<u8> {
        let layers: Vec<_> = layers
            .iter()
            .map(|media_type| {
                serde_json::json!({"mediaType": media_type, "digest": digest::sha256_digest(b"wasm"), "size": 4})
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": config, "digest": digest::sha256_digest(b"{}"), "size": 2},
            "layers": layers,
        }))
        .unwrap()
    }

    fn refusal(raw: &[u8]) -> String {
        provider_layer(&reference(), raw, 1 << 20).unwrap_err().to_string()
    }

    #[test]
    fn the_cncf_format_and_older_layer_types_are_accepted() {
        let layer =
            provider_layer(&reference(), &manifest(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE]), 4).unwrap();
        assert_eq!(layer.digest, digest::sha256_digest(b"wasm"));
        assert_eq!(layer.size, 4);
        for legacy in LEGACY_LAYER_MEDIA_TYPES {
            for config in ["application/vnd.wasm.config.v1+json", "application/vnd.oci.image.config.v1+json"] {
                assert_eq!(provider_layer(&reference(), &manifest(config, &[legacy]), 4).unwrap().media_type, legacy);
            }
        }
    }

    #[test]
    fn everything_else_is_refused_by_name() {
        let image =
            manifest("application/vnd.oci.image.config.v1+json", &["application/vnd.oci.image.layer.v1.tar+gzip"]);
        assert_eq!(
            refusal(&image),
            "oci://registry.example/acme:v1 is not a provider artifact: layer media type \
             application/vnd.oci.image.layer.v1.tar+gzip is not WebAssembly (application/wasm, \
             application/vnd.wasm.content.layer.v1+wasm, application/vnd.module.wasm.content.layer.v1+wasm)"
        );
        let two = manifest(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE]);
        assert!(
            refusal(&two).ends_with(
                "artifact has 2 layers; a provider artifact has exactly one (application/wasm, application/wasm)"
            ),
            "{}",
            refusal(&two)
        );
        assert!(
            refusal(&manifest(WASM_CONFIG_MEDIA_TYPE, &[]))
                .ends_with("artifact has 0 layers; a provider artifact has exactly one")
        );
        assert!(refusal(&manifest("application/vnd.oci.image.config.v1+json", &[WASM_LAYER_MEDIA_TYPE])).contains(
            "config media type application/vnd.oci.image.config.v1+json is not application/vnd.wasm.config.v0+json"
        ));
        assert!(
            refusal(&manifest("application/vnd.docker.container.image.v1+json", &[LEGACY_LAYER_MEDIA_TYPES[0]]))
                .contains("config media type application/vnd.docker.container.image.v1+json is not one")
        );
        let index = serde_json::json!({"schemaVersion": 2, "mediaType": INDEXES[0], "manifests": []});
        assert!(
            refusal(&serde_json::to_vec(&index).unwrap())
                .contains("it is an index (application/vnd.oci.image.index.v1+json)")
        );
        let helm =
            serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.cncf.helm.chart", "layers": []});
        assert!(
            refusal(&serde_json::to_vec(&helm).unwrap())
                .contains("media type application/vnd.cncf.helm.chart is not an image manifest")
        );
        assert!(refusal(b"<html>").contains("the manifest is not an image manifest"));
    }

    #[test]
    fn the_size_limit_applies_to_the_stated_size() {
        let err =
            provider_layer(&reference(), &manifest(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE]), 3).unwrap_err();
        assert_eq!(err.to_string(), "the provider layer is 4 bytes, more than the limit of 3 bytes");
    }

    #[test]
    fn pushed_manifests_are_accepted_and_name_their_layer() {
        let component = ComponentConfig { imports: vec!["a:b/c@1.0.0".into()], exports: vec!["d:e/f".into()] };
        let (config, raw) = provider_manifest(b"\0asm", Some(component), None);
        let layer = provider_layer(&reference(), &raw, 4).unwrap();
        let titled = Descriptor {
            annotations: Some([(TITLE_ANNOTATION.to_owned(), LAYER_TITLE.to_owned())].into()),
            ..Descriptor::of(WASM_LAYER_MEDIA_TYPE, b"\0asm")
        };
        assert_eq!(layer, titled, "the layer carries its title, for oras pull");
        let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(
            config,
            serde_json::json!({
                "created": "1970-01-01T00:00:00Z",
                "architecture": "wasm",
                "os": "wasip2",
                "layerDigests": [digest::sha256_digest(b"\0asm")],
                "component": {"imports": ["a:b/c@1.0.0"], "exports": ["d:e/f"]},
            })
        );
        let manifest: serde_json::Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
        assert_eq!(manifest["mediaType"], OCI_MANIFEST);
    }
}
