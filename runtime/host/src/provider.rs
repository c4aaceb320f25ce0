//! A loaded provider: its compiled component, its settings, and how one call
//! runs: a fresh instance in a fresh store (or one kept from an earlier call,
//! when its limits keep some), a deadline that covers host calls, a memory
//! limit, an HTTP request rate shared by its calls, and every failure turned
//! into a [`ProviderError`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tracing::Instrument;
use wasm_ccm_cloud::{Function, NodeSet, ProviderError, ProviderInfo};
use wasmtime::component::{Component, HasSelf, Instance, Linker, Resource, ResourceTable};
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::bindings::{self, CloudProvider, CloudProviderPre, LentNodes};
use crate::call::compute::ComputeShare;
use crate::call::convert;
use crate::call::epoch::EPOCH_TICK;
use crate::call::throttle::Throttle;
use crate::compile::cache::CacheOutcome;
use crate::compile::component::Caching;
use crate::compile::engine::Engine;
use crate::compile::tier::Tier;
use crate::compile::{component, snapshot};
use crate::error::LoadError;
use crate::imports::credentials::{Credentials, CredentialsImport};
use crate::imports::http::allowlist::AllowList;
use crate::imports::http::{BodyLimits, HttpImport, Outbound, Scrubber};
use crate::imports::log::{GuestOutput, LogImport, Origin, Stdio};
use crate::imports::nodes::{NodesImport, NodesView};
use crate::imports::wasi;
use crate::kept::{KeptInstance, KeptInstances};
use crate::limits::{Limits, MAX_RESOURCES, MemoryLimiter};
use crate::metrics::ProviderMetrics;

/// Everything needed to load a provider.
#[derive(Clone)]
pub struct ProviderSpec {
    /// The name this provider runs under, in logs and metrics.
    pub name: String,
    /// The component.
    pub wasm: Arc<[u8]>,
    /// Its configuration file, passed to `initialize` verbatim.
    pub config: Arc<[u8]>,
    /// The cluster's name, passed to `initialize`.
    pub cluster_name: String,
    /// The credentials bound to it.
    pub credentials: Credentials,
    /// Where it may send HTTP requests.
    pub allow_list: AllowList,
    /// Certificate authorities (PEM) its HTTPS connections trust beyond the
    /// system's and the web's, for a cloud API with a private CA.
    pub trusted_certificates: Option<Arc<[u8]>>,
    /// What it may use.
    pub limits: Limits,
}

/// Call IDs, unique in the process, to tie a call's log lines together.
static CALLS: AtomicU64 = AtomicU64::new(1);

/// The deadline callback's error, to tell a deadline from other traps.
#[derive(Debug, thiserror::Error)]
#[error("deadline exceeded")]
struct DeadlineReached;

/// What a call's store holds.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The node sets lent to the call, by their handle's index.
    lent: Vec<u32>,
    limiter: MemoryLimiter,
    http: HttpImport,
    credentials: CredentialsImport,
    log: LogImport,
    stdout: GuestOutput,
    stderr: GuestOutput,
}

impl CallState {
    /// Makes the state the next call's, on an instance kept from the last:
    /// its logs are `origin`'s, its HTTP requests end at `deadline`.
    fn begin(&mut self, origin: Origin, deadline: Instant) {
        self.stdout.begin(origin.clone());
        self.stderr.begin(origin.clone());
        self.http.origin = origin.clone();
        self.http.deadline = deadline;
        self.credentials.origin = origin.clone();
        self.log.origin = origin;
        self.limiter.clear_hit();
    }

    /// Takes back what the host lent the call that ended; says whether the
    /// instance holds no other host resource, and so may serve another.
    pub(crate) fn end_call(&mut self) -> bool {
        for rep in self.lent.drain(..) {
            let _ = self.table.delete(Resource::<LentNodes>::new_own(rep));
        }
        self.table.is_empty()
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl bindings::types::Host for CallState {}

/// What an instance of a provider exports: the `cloud-provider` world, and
/// `instances-batch` and `metadata-batch` when the provider has them.
pub(crate) struct Exports {
    pub(crate) world: CloudProvider,
    pub(crate) batch: Option<bindings::batch::Guest>,
    pub(crate) metadata_batch: Option<bindings::metadata_batch::Guest>,
}

impl Exports {
    /// The `instances-batch` export; only asked for of a provider that said
    /// it answers in batches, which it can only say through this export.
    pub(crate) fn batch(&self) -> wasmtime::Result<&bindings::batch::Guest> {
        self.batch.as_ref().ok_or_else(|| wasmtime::format_err!("the provider does not export instances-batch"))
    }
}

/// A function of the provider, run on an instance in its store.
pub(crate) type Operation<R> = Box<
    dyn for<'a> FnOnce(
            &'a Instance,
            &'a Exports,
            &'a mut Store<CallState>,
        ) -> BoxFuture<'a, wasmtime::Result<Result<R, bindings::types::CloudError>>>
        + Send,
>;

/// Boxes a closure calling the provider's exports as an [`Operation`],
/// giving it the higher-ranked signature closures cannot infer on their
/// own.
pub(crate) fn operation<R, F>(operation: F) -> Operation<R>
where
    F: for<'a> FnOnce(
            &'a Exports,
            &'a mut Store<CallState>,
        ) -> BoxFuture<'a, wasmtime::Result<Result<R, bindings::types::CloudError>>>
        + Send
        + 'static,
{
    Box::new(move |_, bindings, store| operation(bindings, store))
}

/// How a provider's calls start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// From a snapshot of an instance taken after `initialize`: set-up is
    /// paid once per version and configuration.
    FromSnapshot,
    /// With `initialize`, in every call: the provider could not be
    /// snapshotted.
    Initializing,
}

/// The instance a call runs on.
enum CallOn<'a> {
    /// A new one, `initialize`d first when asked, its randomness drawn from
    /// `seed` when given.
    Fresh { initialize: bool, seed: Option<[u8; 32]> },
    /// One of those the provider keeps, started when none is free.
    Kept(&'a KeptInstances),
}

/// Where the optional exports are in a component, when it has them.
#[derive(Clone)]
struct OptionalExports {
    batch: Option<bindings::batch::GuestIndices>,
    metadata_batch: Option<bindings::metadata_batch::GuestIndices>,
}

impl OptionalExports {
    fn of(pre: &CloudProviderPre<CallState>) -> Self {
        OptionalExports {
            batch: bindings::batch::GuestIndices::new(pre.instance_pre()).ok(),
            metadata_batch: bindings::metadata_batch::GuestIndices::new(pre.instance_pre()).ok(),
        }
    }

    /// The exports of `instance`, the world's and these.
    fn load(self, store: &mut Store<CallState>, instance: &Instance) -> wasmtime::Result<Exports> {
        let world = CloudProvider::new(&mut *store, instance)?;
        let batch = self.batch.map(|batch| batch.load(&mut *store, instance)).transpose()?;
        let metadata_batch = self.metadata_batch.map(|batch| batch.load(&mut *store, instance)).transpose()?;
        Ok(Exports { world, batch, metadata_batch })
    }
}

/// The code a provider's calls run.
struct CallCode {
    pre: CloudProviderPre<CallState>,
    optional: OptionalExports,
    tier: Tier,
    /// Cranelift is compiling the code that replaces this.
    replacing: bool,
}

impl CallCode {
    /// Code linked from `pre`, of the compiler whose engine it belongs to.
    fn new(engine: &Engine, pre: CloudProviderPre<CallState>) -> Self {
        let optimized = wasmtime::Engine::same(pre.instance_pre().engine(), engine.wasmtime());
        let optional = OptionalExports::of(&pre);
        CallCode { pre, optional, tier: if optimized { Tier::Optimizing } else { Tier::Baseline }, replacing: false }
    }
}

/// Cranelift compiling the code that replaces Winch's for a provider's
/// calls; stopped when the provider is dropped, so that a provider replaced
/// before its code is ready stops taking a compile turn.
struct TierUp(AbortHandle);

impl Drop for TierUp {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A compiled, checked and started provider.
///
/// Its calls share one bucket of [`Limits::http_requests`]. A provider
/// swapped in for it by [`ProviderHandle::swap`](crate::ProviderHandle::swap)
/// takes the bucket over when its rate is the same, and otherwise starts
/// with a full bucket of its own.
pub struct LoadedProvider {
    name: Arc<str>,
    engine: Engine,
    /// The code its calls run: a call takes what is there when it starts.
    code: Arc<watch::Sender<CallCode>>,
    tier_up: Option<TierUp>,
    config: Arc<[u8]>,
    cluster_name: String,
    credentials: Arc<Credentials>,
    outbound: Arc<Outbound>,
    http_rate: Option<Arc<Throttle>>,
    memory_in_use: Arc<AtomicU64>,
    limits: Limits,
    info: ProviderInfo,
    compiled: CacheOutcome,
    start: Start,
    /// The monotonic clock of all its instances.
    clock: wasi::SinceLoad,
    /// Its guest code's share of the CPU, all calls together.
    compute: Arc<ComputeShare>,
    /// The instances it keeps between calls, if it keeps any.
    kept: Option<KeptInstances>,
}

impl LoadedProvider {
    /// Compiles, checks and starts a provider: its component must export the
    /// whole world, and `initialize` with its configuration must succeed.
    ///
    /// # Errors
    /// When any step fails; the error says which and why.
    pub async fn load(engine: &Engine, spec: ProviderSpec) -> Result<Self, LoadError> {
        if spec.limits.memory > engine.settings().max_memory {
            return Err(LoadError::Engine(format!(
                "the memory limit of {} bytes is above the engine's maximum of {} bytes",
                spec.limits.memory,
                engine.settings().max_memory
            )));
        }
        // The instrumented component runs once, `initialize` for the
        // snapshot: the baseline compiler's code is enough.
        let (instrumented, wasm, tier) = match snapshot::instrument(spec.wasm.clone()) {
            Ok((instrumented, wasm)) => (Some(Arc::new(instrumented)), Arc::from(wasm), Tier::Baseline),
            Err(err) => {
                tracing::info!(provider = %spec.name, "the provider cannot be snapshotted; it is initialised in every call: {err:#}");
                (None, spec.wasm.clone(), Tier::Optimizing)
            }
        };
        let (pre, cache_outcome) = prepare(engine, wasm, Caching::Use, tier).await?;
        let outbound = Outbound::new(
            spec.allow_list,
            BodyLimits { request: spec.limits.http_request_body, response: spec.limits.http_response_body },
            spec.trusted_certificates.as_deref(),
            Scrubber::new(spec.credentials.sealed_values()),
        )?;
        let http_rate = spec
            .limits
            .http_requests
            .map(|rate| Arc::new(Throttle::new(rate, engine.metrics().http_waits(&spec.name))));
        let mut provider = LoadedProvider {
            name: spec.name.into(),
            engine: engine.clone(),
            code: Arc::new(watch::Sender::new(CallCode::new(engine, pre))),
            tier_up: None,
            config: spec.config,
            cluster_name: spec.cluster_name,
            credentials: Arc::new(spec.credentials),
            outbound: Arc::new(outbound),
            http_rate,
            memory_in_use: Arc::default(),
            compute: Arc::new(ComputeShare::new(spec.limits.cpu_millicores)),
            kept: KeptInstances::new(spec.limits.kept_instances),
            limits: spec.limits,
            info: ProviderInfo { name: String::new(), has_cluster_id: false, parts: Default::default(), max_batch: 0 },
            compiled: cache_outcome,
            start: Start::Initializing,
            clock: wasi::SinceLoad::start(),
        };
        let seed = instrumented.as_ref().and_then(|_| {
            engine.snapshot_seed(&[
                provider.name.as_bytes(),
                &spec.wasm,
                &provider.config,
                provider.cluster_name.as_bytes(),
            ])
        });
        let (info, snapshot) = provider.start(instrumented, seed).await.map_err(LoadError::Startup)?;
        provider.info = info;
        if let Some(snapshot) = snapshot {
            // A seeded snapshot is the same for the same provider and
            // configuration: the compile cache keeps it for the next load.
            let caching = if seed.is_some() { Caching::Use } else { Caching::Bypass };
            match provider.serve_snapshot(snapshot.into(), caching).await {
                Ok(outcome) => {
                    provider.start = Start::FromSnapshot;
                    provider.compiled = provider.compiled.and(outcome);
                }
                Err(err) => tracing::warn!(
                    provider = %provider.name,
                    "the provider's snapshot does not load; it is initialised in every call: {err}"
                ),
            }
        }
        if provider.start == Start::Initializing && provider.code() == Tier::Baseline {
            // Its calls would run the code compiled to run once.
            let (pre, outcome) = prepare(engine, spec.wasm, Caching::Use, Tier::Optimizing).await?;
            provider.code.send_replace(CallCode::new(engine, pre));
            provider.compiled = provider.compiled.and(outcome);
        }
        engine.metrics().compile(&provider.name, provider.compiled.as_str());
        Ok(provider)
    }

    /// How its calls start.
    pub fn start_kind(&self) -> Start {
        self.start
    }

    /// Which compiler's code its calls run now. A load that does not find
    /// Cranelift's code of the snapshot in the compile cache serves at once
    /// with Winch's, which compiles in a fraction of the time and runs
    /// slower, while Cranelift compiles the snapshot in the background
    /// (within the engine's compile turns and timeout); calls that start
    /// after that run Cranelift's. A provider dropped first stops the
    /// compile.
    pub fn code(&self) -> Tier {
        self.code.borrow().tier
    }

    /// Waits until no compile is replacing the code its calls run, and says
    /// whose code they run: Cranelift's, or Winch's for good when
    /// Cranelift's compile failed (a warning says why).
    pub async fn settled_code(&self) -> Tier {
        let mut code = self.code.subscribe();
        let settled = code.wait_for(|code| !code.replacing).await.map(|code| code.tier);
        // The sender lives as long as `self`.
        settled.unwrap_or_else(|_| self.code())
    }

    /// What the provider said about itself when it started.
    pub fn info(&self) -> &ProviderInfo {
        &self.info
    }

    /// Whether its code was compiled or loaded from the compile cache: a
    /// load that needs two components (the one instrumented for the
    /// snapshot, and the snapshot) says what the one that missed found.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.compiled
    }

    /// The name it runs under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Makes its calls run the code of its snapshot: Cranelift's from the
    /// compile cache when `caching` finds it there; otherwise, when its
    /// set-up ran on Winch's code, Winch's at once, with Cranelift's
    /// compiled in the background to replace it ([`Self::code`]).
    async fn serve_snapshot(&mut self, snapshot: Arc<[u8]>, caching: Caching) -> Result<CacheOutcome, LoadError> {
        let engine = self.engine.clone();
        if self.code() == Tier::Optimizing {
            let (pre, outcome) = prepare(&engine, snapshot, caching, Tier::Optimizing).await?;
            self.code.send_replace(CallCode::new(&engine, pre));
            return Ok(outcome);
        }
        let outcome = match caching {
            Caching::Use => match component::cached(&engine, &snapshot, Tier::Optimizing).await? {
                (Some(compiled), outcome) => {
                    self.code.send_replace(CallCode::new(&engine, link_provider(&compiled)?));
                    return Ok(outcome);
                }
                (None, outcome) => outcome,
            },
            Caching::Store | Caching::Bypass => CacheOutcome::Disabled,
        };
        let (pre, _) = prepare(&engine, snapshot.clone(), Caching::Bypass, Tier::Baseline).await?;
        let code = CallCode::new(&engine, pre);
        let replace = code.tier == Tier::Baseline;
        self.code.send_replace(CallCode { replacing: replace, ..code });
        if replace {
            let caching = if caching == Caching::Use { Caching::Store } else { Caching::Bypass };
            let task = tokio::spawn(tier_up(engine, snapshot, caching, Arc::downgrade(&self.code), self.name.clone()));
            self.tier_up = Some(TierUp(task.abort_handle()));
        }
        Ok(outcome)
    }

    /// The metrics its calls are recorded in.
    pub(crate) fn metrics(&self) -> &ProviderMetrics {
        self.engine.metrics()
    }

    /// The cluster name it was initialised with.
    pub fn cluster_name(&self) -> &str {
        &self.cluster_name
    }

    /// Bytes of linear memory its live instances have, and those of the
    /// providers it took over from.
    pub(crate) fn memory_in_use(&self) -> u64 {
        self.memory_in_use.load(Ordering::Relaxed)
    }

    /// Takes over from `serving`, the provider it replaces, what outlives a
    /// version: the count of memory in use, and the HTTP request bucket
    /// when the rate is the same.
    pub(crate) fn take_over(&mut self, serving: &LoadedProvider) {
        self.memory_in_use = serving.memory_in_use.clone();
        if self.limits.http_requests == serving.limits.http_requests {
            self.http_rate = serving.http_rate.clone();
        }
    }

    /// Asks the provider who it is, in one instance: its name, then
    /// `initialize`, then what it supports; and, when it runs the
    /// `instrumented` component, snapshots that instance for every call to
    /// start from (`None` when it holds host resources). Its randomness is
    /// drawn from `seed`, when given, so that the snapshot is the same for
    /// the same provider and configuration.
    async fn start(
        &self,
        instrumented: Option<Arc<snapshot::Instrumented>>,
        seed: Option<[u8; 32]>,
    ) -> Result<(ProviderInfo, Option<Vec<u8>>), ProviderError> {
        let config = self.config.clone();
        let cluster_name = self.cluster_name.clone();
        let name = self.name.clone();
        self.run(
            "provider.start",
            CallOn::Fresh { initialize: false, seed },
            Box::new(move |instance, exports, store| {
                Box::pin(async move {
                    let provider = exports.world.wasm_ccm_provider_provider();
                    let name_said = provider.call_name(&mut *store).await?;
                    if let Err(err) = provider.call_initialize(&mut *store, &config, &cluster_name).await? {
                        return Ok(Err(err));
                    }
                    let has_cluster_id = provider.call_has_cluster_id(&mut *store).await?;
                    let parts = convert::parts(provider.call_supported_parts(&mut *store).await?);
                    let max_batch = match &exports.batch {
                        Some(batch) if parts.instances_v2 => batch.call_max_batch(&mut *store).await?,
                        _ => 0,
                    };
                    let info = ProviderInfo { name: name_said, has_cluster_id, parts, max_batch };
                    let Some(instrumented) = instrumented else { return Ok(Ok((info, None))) };
                    if !store.data().table.is_empty() {
                        tracing::info!(provider = %name, "the provider holds host resources after initialize; it is initialised in every call");
                        return Ok(Ok((info, None)));
                    }
                    let snapshot = snapshot::snapshot(&instrumented, store, *instance).await?;
                    Ok(Ok((info, Some(snapshot))))
                })
            }),
        )
        .await
    }

    /// Starts an instance and asks its name, without `initialize`: the
    /// cheapest proof that the provider can serve.
    pub(crate) async fn probe(&self) -> Result<(), ProviderError> {
        let name = self
            .run(
                Function::ProviderName.call_name(),
                CallOn::Fresh { initialize: false, seed: None },
                operation(|exports, store| {
                    Box::pin(
                        async move { exports.world.wasm_ccm_provider_provider().call_name(&mut *store).await.map(Ok) },
                    )
                }),
            )
            .await?;
        if name == self.info.name {
            Ok(())
        } else {
            Err(ProviderError::InvalidResult(format!(
                "the provider now calls itself {:?}, not {:?}",
                convert::quoted(&name),
                convert::quoted(&self.info.name)
            )))
        }
    }

    /// Runs `operation` on an initialised instance: one the provider keeps,
    /// or a fresh one.
    pub(crate) async fn call<R: Send>(&self, function: Function, operation: Operation<R>) -> Result<R, ProviderError> {
        let on = match &self.kept {
            Some(kept) => CallOn::Kept(kept),
            None => CallOn::Fresh { initialize: self.start == Start::Initializing, seed: None },
        };
        self.run(function.call_name(), on, operation).await
    }

    async fn run<R: Send>(
        &self,
        function: &'static str,
        on: CallOn<'_>,
        operation: Operation<R>,
    ) -> Result<R, ProviderError> {
        let origin = Origin::new(self.name.clone(), CALLS.fetch_add(1, Ordering::Relaxed));
        let span = tracing::debug_span!("provider.call", provider = &*self.name, function, call = origin.call);
        let (initialize, seed, mut place) = match on {
            CallOn::Fresh { initialize, seed } => (initialize, seed, None),
            // A kept instance starts as a fresh one does, initialised unless
            // it starts from the snapshot.
            CallOn::Kept(kept) => (self.start == Start::Initializing, None, Some(kept.place().await)),
        };
        let started = Instant::now();
        let deadline = started + self.limits.deadline;
        let (pre, optional) = {
            let code = self.code.borrow();
            (code.pre.clone(), code.optional.clone())
        };
        // A kept instance runs the code it started with.
        let (mut store, reused) = match place.as_mut().and_then(|place| place.instance.take()) {
            Some(KeptInstance { mut store, instance, exports }) => {
                store.data_mut().begin(origin, deadline);
                self.arm(&mut store, deadline);
                (store, Some((instance, exports)))
            }
            None => (self.store(pre.instance_pre().engine(), origin, deadline, seed), None),
        };
        // The epochs advance, and the deadline with them, while this is held.
        let running = self.engine.running();
        let execution = async {
            let (instance, exports) = match reused {
                Some(reused) => reused,
                None => {
                    let instance = pre.instance_pre().instantiate_async(&mut store).await?;
                    let exports = optional.load(&mut store, &instance)?;
                    if initialize {
                        let provider = exports.world.wasm_ccm_provider_provider();
                        if let Err(err) = provider.call_initialize(&mut store, &self.config, &self.cluster_name).await?
                        {
                            return Ok((Err(err), None));
                        }
                    }
                    (instance, exports)
                }
            };
            let answer = operation(&instance, &exports, &mut store).await?;
            Ok((answer, Some((instance, exports))))
        };
        // The epoch callback stops guest code at the deadline; this stops
        // host calls, such as a guest's sleep, that outlast it.
        let outcome = tokio::time::timeout_at(deadline + EPOCH_TICK, execution).instrument(span.clone()).await;
        drop(running);
        let result = match outcome {
            Err(_) => Err(ProviderError::DeadlineExceeded { deadline: self.limits.deadline }),
            Ok(Err(trap)) => Err(self.classify(&trap, store.data())),
            Ok(Ok((answer, live))) => {
                if let (Some(place), Some((instance, exports))) = (place, live) {
                    place.keep(KeptInstance { store, instance, exports }, &self.name);
                }
                answer.map_err(convert::cloud_error)
            }
        };
        let metrics = self.engine.metrics();
        metrics.call(&self.name, function, started.elapsed().as_secs_f64(), result.as_ref().map(drop));
        if let Err(err) = &result {
            if err.is_sandbox_failure() {
                tracing::warn!(parent: &span, provider = &*self.name, function, error = %err, "provider call stopped by the sandbox");
            } else {
                tracing::debug!(parent: &span, error = %err, "provider call failed");
            }
        }
        result
    }

    /// A store for a new instance, for a call ending at `deadline`.
    fn store(
        &self,
        engine: &wasmtime::Engine,
        origin: Origin,
        deadline: Instant,
        seed: Option<[u8; 32]>,
    ) -> Store<CallState> {
        let stdout = GuestOutput::new(origin.clone(), Stdio::Stdout);
        let stderr = GuestOutput::new(origin.clone(), Stdio::Stderr);
        let state = CallState {
            wasi: wasi::context(stdout.clone(), stderr.clone(), self.clock, seed),
            table: resource_table(),
            lent: Vec::new(),
            limiter: MemoryLimiter::new(self.limits.memory, self.memory_in_use.clone()),
            http: HttpImport {
                metrics: self.engine.metrics().clone(),
                outbound: self.outbound.clone(),
                rate: self.http_rate.clone(),
                credentials: self.credentials.clone(),
                deadline,
                origin: origin.clone(),
            },
            credentials: CredentialsImport { credentials: self.credentials.clone(), origin: origin.clone() },
            log: LogImport { origin },
            stdout,
            stderr,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|state| &mut state.limiter);
        self.arm(&mut store, deadline);
        store
    }

    /// Stops the guest code of `store` at `deadline`, and pauses it while it
    /// is past the provider's share of the CPU.
    fn arm(&self, store: &mut Store<CallState>, deadline: Instant) {
        let deadline = deadline.into_std();
        let (compute, mut computed) = (self.compute.clone(), 0);
        store.epoch_deadline_callback(move |_| {
            let now = std::time::Instant::now();
            if now >= deadline {
                return Err(wasmtime::Error::new(DeadlineReached));
            }
            if compute.tick(&mut computed) {
                return Ok(UpdateDeadline::Yield(1));
            }
            // Past its share of the CPU: on once it has a turn, or at its
            // deadline.
            let (compute, left) = (compute.clone(), deadline - now);
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(async move {
                    let _ = tokio::time::timeout(left, compute.turn()).await;
                }),
            ))
        });
        store.set_epoch_deadline(1);
    }

    /// What a trap means: a deadline, the memory limit, a panic, or another
    /// trap.
    fn classify(&self, trap: &wasmtime::Error, state: &CallState) -> ProviderError {
        if trap.downcast_ref::<DeadlineReached>().is_some() {
            return ProviderError::DeadlineExceeded { deadline: self.limits.deadline };
        }
        if trap.downcast_ref::<wasmtime::PoolConcurrencyLimitError>().is_some() {
            return ProviderError::Host(format!("{trap}"));
        }
        if state.limiter.hit() {
            return ProviderError::MemoryLimit { limit: self.limits.memory };
        }
        if let Some(message) = panic_message(&state.stderr.tail()) {
            return ProviderError::Panic { message };
        }
        ProviderError::Trap { message: convert::bounded(format!("{trap:?}")) }
    }
}

/// Compiles `wasm` with `tier`'s compiler (or takes it from the compile
/// cache, as `caching` says), checks it is a provider, and links it to what
/// the host provides.
async fn prepare(
    engine: &Engine,
    wasm: Arc<[u8]>,
    caching: Caching,
    tier: Tier,
) -> Result<(CloudProviderPre<CallState>, CacheOutcome), LoadError> {
    let (compiled, cache_outcome) = component::compile_cached(engine, wasm, caching, tier).await?;
    Ok((link_provider(&compiled)?, cache_outcome))
}

/// Links a compiled provider to what the host provides.
fn link_provider(compiled: &Component) -> Result<CloudProviderPre<CallState>, LoadError> {
    let mut linker = Linker::<CallState>::new(compiled.engine());
    link(&mut linker).map_err(LoadError::engine)?;
    let instance_pre =
        linker.instantiate_pre(compiled).map_err(|err| LoadError::UnsupportedImports(format!("{err:#}")))?;
    CloudProviderPre::new(instance_pre)
        .map_err(|err| LoadError::WrongWorld { expected: component::CONTRACT, missing: format!("{err:#}") })
}

/// Compiles `snapshot` with Cranelift and gives its code to the calls of
/// the provider `code` belongs to, if it is still there; on a failure its
/// calls keep Winch's code.
async fn tier_up(
    engine: Engine,
    snapshot: Arc<[u8]>,
    caching: Caching,
    code: Weak<watch::Sender<CallCode>>,
    provider: Arc<str>,
) {
    let started = Instant::now();
    let compiled = prepare(&engine, snapshot, caching, Tier::Optimizing).await;
    let Some(code) = code.upgrade() else { return };
    match compiled {
        Ok((pre, _)) => {
            code.send_replace(CallCode::new(&engine, pre));
            tracing::info!(
                provider = %provider,
                compile_ms = started.elapsed().as_millis(),
                "the provider's calls run Cranelift's code from now on"
            );
        }
        Err(err) => {
            code.send_modify(|code| code.replacing = false);
            tracing::warn!(provider = %provider, "Cranelift did not compile the provider's snapshot; its calls keep Winch's code: {err}");
        }
    }
}

/// Lends `nodes` to the call of `store`, until the call ends.
pub(crate) fn lend(store: &mut Store<CallState>, nodes: NodeSet) -> wasmtime::Result<Resource<LentNodes>> {
    let state = store.data_mut();
    let lent = state.table.push(LentNodes(nodes))?;
    state.lent.push(lent.rep());
    Ok(lent)
}

/// A call's resource table, capped so that a guest cannot fill the host's
/// memory with handles the memory limit does not see.
fn resource_table() -> ResourceTable {
    let mut table = ResourceTable::new();
    table.set_max_capacity(MAX_RESOURCES);
    table
}

/// Links what a provider may import.
fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    wasi::add_to_linker(linker)?;
    bindings::types::add_to_linker::<CallState, HasSelf<CallState>>(linker, |state| state)?;
    bindings::http::add_to_linker::<CallState, HasSelf<HttpImport>>(linker, |state| &mut state.http)?;
    bindings::credentials::add_to_linker::<CallState, HasSelf<CredentialsImport>>(linker, |state| {
        &mut state.credentials
    })?;
    bindings::log::add_to_linker::<CallState, HasSelf<LogImport>>(linker, |state| &mut state.log)?;
    bindings::nodes::add_to_linker::<CallState, NodesImport>(linker, |state| NodesView(&mut state.table))?;
    Ok(())
}

/// The message of a panic in a guest's stderr, with its location.
fn panic_message(stderr: &str) -> Option<String> {
    rust_panic(stderr).or_else(|| go_panic(stderr))
}

/// A Rust panic: `thread '<unnamed>' panicked at src/lib.rs:10:5:\nthe message`.
fn rust_panic(stderr: &str) -> Option<String> {
    let start = stderr.rfind("panicked at ")?;
    let report = &stderr[start + "panicked at ".len()..];
    let (location, message) = report.split_once(":\n")?;
    let message = message.split("\nnote: ").next().unwrap_or(message).trim();
    Some(format!("{message} (at {location})"))
}

/// A Go panic: `panic: the message\n\ngoroutine 1 [running]:\n`, then
/// frames of a function line and a `\tfile:line +0x..` line each; the
/// location is the first frame outside the runtime.
fn go_panic(stderr: &str) -> Option<String> {
    let start = if stderr.starts_with("panic: ") { 0 } else { stderr.rfind("\npanic: ")? + 1 };
    let (message, trace) = stderr[start + "panic: ".len()..].split_once("\n\ngoroutine ")?;
    let mut frames = trace.lines().skip(1);
    let location = loop {
        let (function, location) = (frames.next()?, frames.next()?);
        if !function.starts_with("panic(") && !function.starts_with("runtime.") {
            break location.trim().split(" +0x").next()?;
        }
    };
    Some(format!("{} (at {location})", message.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_panic_message() {
        let stderr = "\nthread '<unnamed>' panicked at src/lib.rs:62:24:\nboom: it broke\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(panic_message(stderr).as_deref(), Some("boom: it broke (at src/lib.rs:62:24)"));
        assert_eq!(panic_message("just some logging"), None);
    }

    #[test]
    fn finds_a_go_panic_message_and_the_first_frame_outside_the_runtime() {
        let stderr = "some logging\npanic: boom: it broke\n\ngoroutine 1 [running]:\npanic({0x1a2b0, 0x5c0f0})\n\truntime/panic.go:806 +0x2e\nmain.hostile.EnsureLoadBalancer({}, {0x0, 0x0}, {0x0, 0x0}, 0x3a8000, {0x0, 0x0, 0x0})\n\tgithub.com/acme/provider/main.go:83 +0x51\nmain.main()\n";
        assert_eq!(panic_message(stderr).as_deref(), Some("boom: it broke (at github.com/acme/provider/main.go:83)"));
        assert_eq!(panic_message("panic: no trace"), None);
    }
}
