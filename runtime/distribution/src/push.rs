//! Pushing providers in the CNCF WebAssembly OCI artifact format.

use tracing::debug;

use crate::artifact::{self, ComponentConfig};
use crate::transfer::{push_manifest, upload};
use crate::{DistributionError, Reference, RegistryOptions, inspect};

/// Pushes the provider `wasm` to `reference`'s tag and returns the manifest
/// digest.
///
/// The artifact is in the CNCF WebAssembly format: one `application/wasm`
/// layer, titled [`LAYER_TITLE`](crate::LAYER_TITLE) (the file `oras pull`
/// writes), and an `application/vnd.wasm.config.v0+json` config with
/// `architecture: wasm`, `os: wasip2`, the layer's digest and, for a
/// component, its world's imports and exports. The config's `created` is the
/// Unix epoch, so pushing the same bytes again gives the same manifest
/// digest and keeps its signatures valid.
///
/// # Errors
/// When `reference` has a digest rather than a tag, `wasm` is not
/// WebAssembly, or the registry cannot be reached or written to.
pub async fn push(wasm: &[u8], reference: &Reference, options: &RegistryOptions) -> Result<String, DistributionError> {
    push_version(wasm, reference, None, options).await
}

/// [`push`] with the provider's `version` in the manifest's
/// [`VERSION_ANNOTATION`](crate::VERSION_ANNOTATION), which roll-back
/// protection compares (and a signature of the manifest signs).
///
/// # Errors
/// As [`push`].
pub async fn push_version(
    wasm: &[u8],
    reference: &Reference,
    version: Option<&semver::Version>,
    options: &RegistryOptions,
) -> Result<String, DistributionError> {
    if reference.digest().is_some() {
        return Err(DistributionError::InvalidReference {
            reference: reference.to_string(),
            reason: "a provider is pushed to a tag, not to a digest".to_owned(),
        });
    }
    let inspection = inspect(wasm)?;
    let component = inspection
        .component
        .then(|| ComponentConfig { imports: inspection.imports.clone(), exports: inspection.exports.clone() });
    let (config, manifest) = artifact::provider_manifest(wasm, component, version);
    let client = options.client(reference).await?;
    upload(&client, reference, wasm).await?;
    upload(&client, reference, &config).await?;
    let digest = push_manifest(&client, reference, manifest).await?;
    debug!(%reference, %digest, size = wasm.len(), "pushed");
    Ok(digest)
}
