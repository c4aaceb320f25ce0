//! A provider's configuration file and credentials directory, polled for
//! changes that call for a re-initialisation.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasm_ccm_distribution::sha256_digest;
use wasm_ccm_host::{Confinement, Credentials, MAX_INPUT_FILE, Seal};

/// What a provider is initialised with besides its component.
#[derive(Clone, PartialEq, Eq)]
pub struct Inputs {
    /// The configuration file, passed to `initialize` verbatim.
    pub config: Arc<[u8]>,
    /// The credentials bound to it.
    pub credentials: Credentials,
}

impl Inputs {
    /// `sha256:<hex>` of the configuration.
    pub fn config_digest(&self) -> String {
        sha256_digest(&self.config)
    }
}

impl std::fmt::Debug for Inputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs").field("config", &self.config_digest()).field("credentials", &self.credentials).finish()
    }
}

/// Where the inputs are read from; either may be absent, and then the
/// value given at start (often none) stays.
#[derive(Debug, Clone, Default)]
pub struct InputFiles {
    /// The configuration file (`--cloud-config`).
    pub config: Option<PathBuf>,
    /// The credentials directory (`--provider-credentials`).
    pub credentials: Option<PathBuf>,
    /// The credentials only the host may read
    /// (`--provider-sealed-credentials`), sealed again on every read.
    pub sealed: Vec<Seal>,
    /// Which paths the configuration may be read from: anywhere for the
    /// operator's flags, beneath its roots for a providers file's.
    pub confinement: Confinement,
    /// Which paths the credentials directory may be read from.
    pub credentials_confinement: Confinement,
}

impl InputFiles {
    /// Reads both, each capped; what has no file comes from `defaults`.
    ///
    /// # Errors
    /// What could not be read, naming the file.
    pub async fn read(&self, defaults: &Inputs) -> Result<Inputs, String> {
        let config = match &self.config {
            Some(path) => {
                let (path, confinement) = (path.clone(), self.confinement.clone());
                tokio::task::spawn_blocking(move || {
                    confinement
                        .read(&path, MAX_INPUT_FILE)
                        .map_err(|err| format!("cannot read the configuration {}: {err}", path.display()))
                })
                .await
                .map_err(|err| format!("cannot read the configuration: {err}"))??
                .into()
            }
            None => defaults.config.clone(),
        };
        let credentials = match &self.credentials {
            Some(dir) => {
                let (dir, confinement) = (dir.clone(), self.credentials_confinement.clone());
                let sealed = self.sealed.clone();
                tokio::task::spawn_blocking(move || Credentials::from_dir(&dir, &confinement)?.seal(sealed))
                    .await
                    .map_err(|err| format!("cannot read the credentials: {err}"))?
                    .map_err(|err| err.to_string())?
            }
            None => defaults.credentials.clone(),
        };
        Ok(Inputs { config, credentials })
    }

    /// Whether there is anything to watch.
    pub fn is_empty(&self) -> bool {
        self.config.is_none() && self.credentials.is_none()
    }

    /// Polls every `interval` and returns the inputs when they differ from
    /// `current`. A read that fails (a file being replaced) is logged and
    /// tried again at the next poll.
    pub async fn changed(&self, current: &Inputs, interval: Duration) -> Inputs {
        let defaults = current.clone();
        if self.is_empty() {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(interval).await;
            match self.read(&defaults).await {
                Ok(inputs) if inputs != *current => return inputs,
                Ok(_) => {}
                Err(err) => tracing::warn!("{err}; trying again"),
            }
        }
    }
}
