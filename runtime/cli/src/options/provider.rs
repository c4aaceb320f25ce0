//! The flag that says which provider to run, beside those that sandbox it.

use anyhow::Context;
use wasm_ccm_config::SettingsArgs;
use wasm_ccm_host::ProviderSpec;
use wasm_ccm_reload::{InputFiles, Location};

/// Which provider, its configuration, credentials and limits.
#[derive(Debug, Clone, clap::Args)]
pub struct ProviderArgs {
    /// The provider component: a `.wasm` file, an OCI artifact
    /// `oci://registry/repository:tag` (or `@sha256:<digest>`), or the
    /// `binaryData` key of a ConfigMap, `configmap:NAMESPACE/NAME/KEY`.
    /// `run` watches it and swaps in each new version that passes its checks.
    #[arg(long = "provider", value_name = "FILE|oci://REF|configmap:NS/NAME/KEY", env = "WASM_CCM_PROVIDER")]
    pub provider: String,
    /// Its configuration, credentials, allow-list and limits.
    #[command(flatten)]
    pub settings: SettingsArgs,
}

impl ProviderArgs {
    /// Where the provider is.
    ///
    /// # Errors
    /// When `--provider` is not a valid location.
    pub fn location(&self) -> anyhow::Result<Location> {
        self.provider.parse().context("--provider")
    }

    /// The configuration file and credentials directory, to watch.
    pub fn input_files(&self) -> InputFiles {
        self.settings.input_files()
    }

    /// Reads the component, configuration and credentials into a spec; the
    /// provider must be a file.
    ///
    /// # Errors
    /// When a file cannot be read or a flag is invalid.
    pub fn spec(&self, name: &str, cluster_name: &str) -> anyhow::Result<ProviderSpec> {
        let Location::File(path) = self.location()? else {
            anyhow::bail!("--provider must be a file here, not {}", self.provider);
        };
        let wasm = wasm_ccm_host::files::read(&path, wasm_ccm_distribution::DEFAULT_MAX_SIZE)
            .with_context(|| format!("cannot read the provider {}", path.display()))?;
        Ok(ProviderSpec { wasm: wasm.into(), ..self.template(name, cluster_name)? })
    }

    /// A spec without the component: see [`SettingsArgs::template`].
    ///
    /// # Errors
    /// When a file cannot be read or a flag is invalid.
    pub fn template(&self, name: &str, cluster_name: &str) -> anyhow::Result<ProviderSpec> {
        Ok(self.settings.template(name, cluster_name)?)
    }
}
