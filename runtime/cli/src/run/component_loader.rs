//! How the fleet's providers load in the controller manager: as
//! WebAssembly components, each kept up to date with its source by its
//! own reloader.

use tokio_util::sync::CancellationToken;
use wasm_ccm_config::ProviderLoad;
use wasm_ccm_fleet::{BoxError, Loader};
use wasm_ccm_host::{Engine, ProviderHandle};
use wasm_ccm_reload::{
    Candidate, Location, Observers, Reloader, Reporter, Source, SourceSettings, config_map_reference, own_pod_reference,
};

/// Loads components on one engine, reporting through one set of observers.
#[derive(Clone)]
pub(crate) struct ComponentLoader {
    pub(crate) engine: Engine,
    pub(crate) client: kube::Client,
    pub(crate) observers: Observers,
}

impl Loader for ComponentLoader {
    type Spec = ProviderLoad;
    type Cloud = ProviderHandle;

    async fn load(
        &self,
        name: &str,
        load: ProviderLoad,
        serving: Option<ProviderHandle>,
        stop: CancellationToken,
    ) -> Result<ProviderHandle, BoxError> {
        self.start(name, load, serving, stop).await.map_err(Into::into)
    }
}

impl ComponentLoader {
    /// Loads the provider (into `serving`, when it re-configures one) and
    /// runs its reloader until `stop`.
    async fn start(
        &self,
        name: &str,
        mut load: ProviderLoad,
        serving: Option<ProviderHandle>,
        stop: CancellationToken,
    ) -> anyhow::Result<ProviderHandle> {
        if let Some(settings) = &mut load.source {
            self.raise_to_recorded(name, settings).await?;
        }
        let (source, regarding, poll_interval) = match &load.source {
            Some(settings) => {
                let regarding = match &settings.location {
                    Location::ConfigMap { namespace, name, .. } => Some(config_map_reference(namespace, name)),
                    _ => own_pod_reference(),
                };
                (settings.build(Some(self.client.clone()))?, regarding, settings.poll_interval)
            }
            None => {
                let candidate = Candidate {
                    digest: wasm_ccm_distribution::sha256_digest(&load.template.wasm),
                    wasm: load.template.wasm.clone(),
                    origin: "built-in".to_owned(),
                    version: None,
                };
                (Source::Fixed(Some(candidate)), own_pod_reference(), wasm_ccm_reload::DEFAULT_POLL_INTERVAL)
            }
        };
        let observers = Observers {
            reporter: regarding.map(|regarding| Reporter::new(self.client.clone(), regarding)),
            versions: self.observers.versions.clone().filter(|_| load.records_versions),
            ..self.observers.clone()
        };
        let (template, inputs) = (load.template, load.inputs);
        let reloader = match serving {
            None => Reloader::start(&self.engine, template, source, inputs, poll_interval, observers).await?,
            Some(handle) => {
                Reloader::start_into(handle, &self.engine, template, source, inputs, poll_interval, observers).await?
            }
        };
        let handle = reloader.handle();
        tokio::spawn(reloader.run(stop));
        Ok(handle)
    }

    /// Raises the minimum version of a provider under roll-back protection
    /// to the highest version of it accepted before, as the cluster
    /// recorded it.
    async fn raise_to_recorded(&self, name: &str, settings: &mut SourceSettings) -> anyhow::Result<()> {
        let (Some(minimum), Some(record)) = (&settings.minimum_version, &self.observers.versions) else {
            return Ok(());
        };
        if let Some(recorded) = record.highest(name).await?
            && recorded > *minimum
        {
            tracing::info!(provider = name, %recorded, "the provider's minimum version is the highest one accepted before");
            settings.minimum_version = Some(recorded);
        }
        Ok(())
    }
}
