//! Validate-then-swap: every version a source offers, and every change of
//! the configuration or credentials, is compiled, checked against the world
//! and smoke-tested before it replaces the provider serving; anything that
//! fails is rejected and the provider serving keeps serving.

use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, warn};
use wasm_ccm_cloud::{Cloud, ProviderInfo};
use wasm_ccm_host::{Credentials, Engine, LoadError, LoadedProvider, ProviderHandle, ProviderSpec};

use crate::status::{ProviderStatus, Rejection, StatusBoard};
use crate::{Candidate, InputFiles, Inputs, ReloadMetrics, Reporter, Source, SourceError, StartError, VersionRecord};

/// Who is told about loads, swaps and rejections.
#[derive(Clone, Default)]
pub struct Observers {
    /// Counts reloads and records the version serving.
    pub metrics: ReloadMetrics,
    /// Holds what `/providers` shows.
    pub status: StatusBoard,
    /// Writes events, when there is an object to attach them to.
    pub reporter: Option<Reporter>,
    /// Keeps the highest version accepted under roll-back protection
    /// across restarts, when there is a cluster to keep it in.
    pub versions: Option<VersionRecord>,
}

/// What a provider is loaded from: the component and its inputs.
#[derive(Clone, PartialEq, Eq)]
struct Key {
    digest: String,
    config: String,
    credentials: Credentials,
}

/// A change to try.
enum Update {
    Candidate(Result<Candidate, SourceError>),
    Inputs(Inputs),
}

/// Why a version was rejected, and at which stage.
struct Refusal {
    stage: &'static str,
    reason: String,
}

/// Keeps one provider up to date with its source and inputs.
///
/// Build it with [`Reloader::start`], which loads the first version; give
/// the controllers [`Reloader::handle`]; then [`Reloader::run`] it.
///
/// # Guarantees
/// - A version replaces the one serving only once it compiled, exports the
///   provider world, started (`name`, `initialize` with the current
///   configuration and credentials, `supported-parts`), kept the provider's
///   name, and supports at least the parts the serving one does (the
///   controllers were planned for them).
/// - The swap is atomic: calls in flight finish on the old version, new
///   calls go to the new one, no call fails because of a swap.
/// - The same component with the same inputs is never loaded twice in a
///   row, whether it was swapped in or rejected.
pub struct Reloader {
    engine: Engine,
    template: ProviderSpec,
    source: Source,
    inputs: InputFiles,
    poll_interval: Duration,
    handle: ProviderHandle,
    serving: Key,
    serving_wasm: Candidate,
    latest_inputs: Inputs,
    last_tried: Option<Key>,
    observers: Observers,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloader")
            .field("provider", &self.template.name)
            .field("source", &self.source.origin())
            .field("serving", &self.serving.digest)
            .finish_non_exhaustive()
    }
}

impl Reloader {
    /// Loads the first version from `source` with `inputs`, into a handle.
    ///
    /// `template` names the provider and sets its cluster name, allow-list
    /// and limits; its component is replaced by what `source` offers, its
    /// configuration and credentials by the files of `inputs` that are
    /// set. `poll_interval` is how
    /// often `inputs` are read for changes.
    ///
    /// # Errors
    /// When the source has nothing to offer, the inputs cannot be read, or
    /// the provider does not load: the first version failing is fatal.
    pub async fn start(
        engine: &Engine,
        template: ProviderSpec,
        source: Source,
        inputs: InputFiles,
        poll_interval: Duration,
        observers: Observers,
    ) -> Result<Self, StartError> {
        Self::begin(engine, template, source, inputs, poll_interval, observers, None).await
    }

    /// Starts as [`Reloader::start`] does, but into `handle`, whose provider
    /// keeps serving until the first version loaded and passed the checks
    /// any new version passes (the same name, at least the same parts):
    /// how a provider is re-configured (source, sandbox, limits) while the
    /// controllers keep calling the same handle. The reloader that served
    /// `handle` before must be stopped.
    ///
    /// # Errors
    /// As [`Reloader::start`], and when the version cannot replace the
    /// provider serving.
    pub async fn start_into(
        handle: ProviderHandle,
        engine: &Engine,
        template: ProviderSpec,
        source: Source,
        inputs: InputFiles,
        poll_interval: Duration,
        observers: Observers,
    ) -> Result<Self, StartError> {
        Self::begin(engine, template, source, inputs, poll_interval, observers, Some(handle)).await
    }

    async fn begin(
        engine: &Engine,
        template: ProviderSpec,
        mut source: Source,
        inputs: InputFiles,
        poll_interval: Duration,
        observers: Observers,
        into: Option<ProviderHandle>,
    ) -> Result<Self, StartError> {
        let candidate = source.next().await?;
        let defaults = Inputs { config: template.config.clone(), credentials: template.credentials.clone() };
        let latest_inputs = inputs.read(&defaults).await.map_err(StartError::Inputs)?;
        let started = Instant::now();
        let spec = spec(&template, &candidate, &latest_inputs);
        let handle = match into {
            None => ProviderHandle::new(
                LoadedProvider::load(engine, spec)
                    .await
                    .map_err(|source| StartError::Load { origin: candidate.origin.clone(), source })?,
            ),
            Some(handle) => {
                let provider = validate(engine, spec, handle.info()).await.map_err(|refusal| StartError::Unfit {
                    origin: candidate.origin.clone(),
                    reason: format!("{}: {}", refusal.stage, refusal.reason),
                })?;
                handle.swap(provider);
                handle
            }
        };
        info!(
            provider = %template.name, digest = %candidate.digest, source = %candidate.origin,
            seconds = started.elapsed().as_secs_f64(), "loaded the provider"
        );
        let serving = key(&candidate, &latest_inputs);
        let reloader = Reloader {
            engine: engine.clone(),
            source,
            inputs,
            poll_interval,
            serving: serving.clone(),
            serving_wasm: candidate,
            last_tried: Some(serving),
            observers,
            handle,
            latest_inputs,
            template,
        };
        reloader.record_loaded(0);
        Ok(reloader)
    }

    /// The handle the controllers call the provider through.
    pub fn handle(&self) -> ProviderHandle {
        self.handle.clone()
    }

    /// What `/providers` shows.
    pub fn status(&self) -> StatusBoard {
        self.observers.status.clone()
    }

    /// Watches the source and the inputs until `stop`, trying every change.
    pub async fn run(mut self, stop: CancellationToken) {
        let (sender, mut updates) = mpsc::channel(16);
        let span = tracing::info_span!("provider.reload", provider = %self.template.name);
        let watch_source = {
            let sender = sender.clone();
            let mut source = std::mem::replace(&mut self.source, Source::Fixed(None));
            tokio::spawn(
                async move {
                    loop {
                        let next = source.next().await;
                        if sender.send(Update::Candidate(next)).await.is_err() {
                            return;
                        }
                    }
                }
                .instrument(tracing::info_span!("provider.source", provider = %self.template.name)),
            )
        };
        let watch_inputs = {
            let (files, interval, mut seen) = (self.inputs.clone(), self.poll_interval, self.latest_inputs.clone());
            tokio::spawn(
                async move {
                    loop {
                        seen = files.changed(&seen, interval).await;
                        if sender.send(Update::Inputs(seen.clone())).await.is_err() {
                            return;
                        }
                    }
                }
                .instrument(tracing::info_span!("provider.inputs", provider = %self.template.name)),
            )
        };
        loop {
            let update = tokio::select! {
                () = stop.cancelled() => break,
                update = updates.recv() => match update {
                    Some(update) => update,
                    None => break,
                },
            };
            self.apply(update).instrument(span.clone()).await;
        }
        watch_source.abort();
        watch_inputs.abort();
    }

    async fn apply(&mut self, update: Update) {
        let arrived = Instant::now();
        let (candidate, inputs) = match update {
            Update::Candidate(Ok(candidate)) => (candidate, self.latest_inputs.clone()),
            Update::Candidate(Err(SourceError::Verification { origin, digest, source })) => {
                self.reject(&origin, digest.as_deref(), &Refusal { stage: "verify", reason: source.to_string() });
                return;
            }
            Update::Candidate(Err(err)) => {
                warn!(provider = %self.template.name, "{err}; the loaded version keeps serving");
                self.observers.metrics.unavailable(&self.template.name);
                return;
            }
            Update::Inputs(inputs) => {
                info!(provider = %self.template.name, config = %inputs.config_digest(), "the configuration or credentials changed");
                self.latest_inputs = inputs.clone();
                (self.serving_wasm.clone(), inputs)
            }
        };
        let key = key(&candidate, &inputs);
        if key == self.serving {
            // Back to what serves: a later change is new again.
            self.last_tried = Some(key);
            return;
        }
        if self.last_tried.as_ref() == Some(&key) {
            tracing::debug!(provider = %self.template.name, digest = %candidate.digest, "already tried; skipping");
            return;
        }
        self.last_tried = Some(key.clone());
        if let (Some(offered), Some(serving)) = (&candidate.version, &self.serving_wasm.version)
            && offered < serving
        {
            let reason =
                format!("version {offered} is older than {serving}, the version serving: a roll-back is refused");
            self.reject(&candidate.origin, Some(&candidate.digest), &Refusal { stage: "verify", reason });
            return;
        }
        let spec = spec(&self.template, &candidate, &inputs);
        match validate(&self.engine, spec, self.handle.info()).await {
            Ok(provider) => {
                self.handle.swap(provider);
                let seconds = arrived.elapsed().as_secs_f64();
                let note = format!(
                    "{} now runs {} from {} (configuration {}), replacing {}; checked and swapped in {:.0} ms",
                    self.template.name,
                    candidate.digest,
                    candidate.origin,
                    inputs.config_digest(),
                    self.serving.digest,
                    seconds * 1000.0
                );
                info!(provider = %self.template.name, digest = %candidate.digest, source = %candidate.origin, seconds, "swapped in a new provider version");
                self.serving = key;
                self.serving_wasm = candidate;
                self.observers.metrics.reloaded(&self.template.name, seconds);
                self.record_loaded(1);
                if let Some(reporter) = &self.observers.reporter {
                    reporter.reloaded(note);
                }
            }
            Err(refusal) => self.reject(&candidate.origin, Some(&candidate.digest), &refusal),
        }
    }

    fn reject(&self, origin: &str, digest: Option<&str>, refusal: &Refusal) {
        let name = &self.template.name;
        let what = digest.unwrap_or("a new version");
        warn!(
            provider = %name, source = origin, digest = digest.unwrap_or("-"), stage = refusal.stage,
            reason = %refusal.reason, serving = %self.serving.digest,
            "rejected a provider version; the loaded version keeps serving"
        );
        self.observers.metrics.rejected(name, refusal.stage);
        let rejection = Rejection {
            at: Timestamp::now().to_string(),
            source: origin.to_owned(),
            digest: digest.map(str::to_owned),
            stage: refusal.stage.to_owned(),
            reason: refusal.reason.clone(),
        };
        self.observers.status.update(name, |status| {
            if let Some(status) = status {
                status.rejections += 1;
                status.last_rejection = Some(rejection);
            }
            None
        });
        if let Some(reporter) = &self.observers.reporter {
            reporter.rejected(format!(
                "{name} rejected {what} from {origin} at {}: {}; {} keeps serving",
                refusal.stage, refusal.reason, self.serving.digest
            ));
        }
    }

    /// Records the version serving in the metrics and the status board;
    /// `reloads` is added to the count of swaps.
    fn record_loaded(&self, reloads: u64) {
        let name = &self.template.name;
        let now = Timestamp::now();
        let (digest, origin, config) = (&self.serving.digest, &self.serving_wasm.origin, &self.serving.config);
        if let (Some(record), Some(version)) = (&self.observers.versions, &self.serving_wasm.version) {
            let (record, version, name) = (record.clone(), version.clone(), name.clone());
            tokio::spawn(async move {
                if let Err(err) = record.raise(&name, &version).await {
                    warn!(provider = %name, %version, "{err}; the version is recorded with the next one accepted");
                }
            });
        }
        self.observers.metrics.loaded(name, digest, origin, config, now.as_second());
        let provider_name = self.handle.info().name;
        self.observers.status.update(name, |status| {
            let (count, rejections, last_rejection) = match status {
                Some(status) => (status.reloads + reloads, status.rejections, status.last_rejection.take()),
                None => (0, 0, None),
            };
            Some(ProviderStatus {
                name: name.clone(),
                provider_name,
                digest: digest.clone(),
                source: origin.clone(),
                config_digest: config.clone(),
                loaded_at: now.to_string(),
                reloads: count,
                rejections,
                last_rejection,
            })
        });
    }
}

/// Loads `spec` and checks it can replace the provider serving, which
/// describes itself as `serving`.
async fn validate(engine: &Engine, spec: ProviderSpec, serving: ProviderInfo) -> Result<LoadedProvider, Refusal> {
    let provider = LoadedProvider::load(engine, spec)
        .await
        .map_err(|err| Refusal { stage: stage(&err), reason: err.to_string() })?;
    let info = provider.info();
    if info.name != serving.name {
        return Err(Refusal {
            stage: "smoke",
            reason: format!(
                "the provider calls itself {:?}, not {:?}: a provider keeps its name, which node provider IDs carry",
                info.name, serving.name
            ),
        });
    }
    let lost: Vec<&str> = [
        ("load-balancer", serving.parts.load_balancer, info.parts.load_balancer),
        ("instances", serving.parts.instances, info.parts.instances),
        ("instances-v2", serving.parts.instances_v2, info.parts.instances_v2),
        ("zones", serving.parts.zones, info.parts.zones),
        ("clusters", serving.parts.clusters, info.parts.clusters),
        ("routes", serving.parts.routes, info.parts.routes),
    ]
    .into_iter()
    .filter(|(_, had, has)| *had && !*has)
    .map(|(part, _, _)| part)
    .collect();
    if !lost.is_empty() {
        return Err(Refusal {
            stage: "smoke",
            reason: format!("the provider no longer supports {}, which the running controllers use", lost.join(", ")),
        });
    }
    Ok(provider)
}

fn key(candidate: &Candidate, inputs: &Inputs) -> Key {
    Key { digest: candidate.digest.clone(), config: inputs.config_digest(), credentials: inputs.credentials.clone() }
}

fn spec(template: &ProviderSpec, candidate: &Candidate, inputs: &Inputs) -> ProviderSpec {
    ProviderSpec {
        wasm: candidate.wasm.clone(),
        config: inputs.config.clone(),
        credentials: inputs.credentials.clone(),
        ..template.clone()
    }
}

/// The stage a load failed at.
fn stage(err: &LoadError) -> &'static str {
    match err {
        LoadError::NotWasm(_)
        | LoadError::CoreModule
        | LoadError::Invalid(_)
        | LoadError::TooLarge { .. }
        | LoadError::CompileTimeout { .. }
        | LoadError::CompileLimit(_) => "compile",
        LoadError::WrongWorld { .. } | LoadError::UnsupportedImports(_) => "world",
        LoadError::Startup(_) => "initialize",
        _ => "host",
    }
}
