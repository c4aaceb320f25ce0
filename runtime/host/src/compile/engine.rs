//! The wasmtime engine every provider runs on, with the epoch ticker that
//! enforces call deadlines.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::component::Component;
use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::call::epoch::{EpochTicker, Running};
use crate::compile::cache::CompileCache;
use crate::compile::compiler::{self, Compiler};
use crate::compile::failures::CompileFailures;
use crate::compile::tier::{OptLevel, Tier, compiler_config};
use crate::error::LoadError;
use crate::limits::{MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLE_ELEMENTS, MAX_TABLES};
use crate::metrics::ProviderMetrics;

/// How instances get their memories, tables and stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Slots reserved once at start-up and reused, with copy-on-write
    /// memory images: the fastest instantiation.
    Pooling {
        /// Component instances alive at once, across all providers.
        instances: u32,
    },
    /// Memory mapped and unmapped per instance.
    OnDemand,
}

/// Engine-wide settings, shared by every provider.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// How instances are allocated.
    pub allocation: Allocation,
    /// The largest memory limit any provider may be given, in bytes.
    pub max_memory: u64,
    /// How hard Cranelift optimises providers' code: `Speed` (the default)
    /// runs fastest; `None` takes less CPU to compile and runs slower.
    /// Compiled code is cached per level.
    pub opt_level: OptLevel,
    /// A directory to keep compiled providers in, so that loading a
    /// component compiled before skips compiling it; see
    /// [`CompileCache`] for what is loaded from it.
    pub compile_cache: Option<PathBuf>,
    /// How many bytes of compiled code the compile cache keeps; the least
    /// recently used entries go beyond it.
    pub compile_cache_max_bytes: u64,
    /// The largest component compiled, in bytes: 64 MiB by default, above
    /// the 54 MB of a Go provider built on the real k8s.io/cloud-provider.
    pub max_component_size: usize,
    /// How long compiling one component may take once it has its turn. A
    /// compile past it is given up and reported as failed (see [`Compiler`]
    /// for what becomes of it).
    pub compile_timeout: Duration,
    /// Where components are compiled.
    pub compiler: Compiler,
    /// Components compiled at once, all providers together; more wait.
    pub compile_parallelism: usize,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            allocation: Allocation::Pooling { instances: 1000 },
            max_memory: 1 << 30,
            opt_level: OptLevel::Speed,
            compile_cache: None,
            compile_cache_max_bytes: crate::compile::cache::DEFAULT_MAX_BYTES,
            max_component_size: 64 << 20,
            compile_timeout: Duration::from_secs(60),
            compiler: Compiler::InProcess,
            compile_parallelism: 2,
        }
    }
}

/// How much of a pool slot's memory stays resident when its instance ends,
/// reset in place rather than handed back to the kernel: with Linux's
/// `PAGEMAP_SCAN` only the pages the instance wrote are reset. Each call
/// starts a fresh instance, so handing its pages back meant taking them
/// again in the next call, page fault by page fault, with the TLB
/// shootdowns of both: an `update` lending 5000 nodes took 3.7 times as
/// long. At most `max_unused_warm_slots` (100) idle slots of each pool keep
/// this much.
const MEMORY_KEPT_RESIDENT: usize = 512 << 10;

/// As [`MEMORY_KEPT_RESIDENT`], for a slot's tables.
const TABLE_KEPT_RESIDENT: usize = 32 << 10;

/// `config` allocating its instances as `settings` say: from a pool sized
/// for their number, or on demand.
fn allocating(mut config: Config, settings: &EngineSettings) -> Config {
    if let Allocation::Pooling { instances } = settings.allocation {
        let mut pool = PoolingAllocationConfig::default();
        // A Rust component built for wasm32-wasip2 has a handful of core
        // instances (the program, the WASI adapter, shims), one memory and
        // a couple of tables.
        pool.total_component_instances(instances)
            .total_core_instances(instances.saturating_mul(8))
            .total_memories(instances.saturating_mul(2))
            .total_tables(instances.saturating_mul(4))
            .total_stacks(instances)
            .max_core_instances_per_component(per_component(MAX_CORE_INSTANCES))
            .max_memories_per_component(per_component(MAX_MEMORIES))
            .max_tables_per_component(per_component(MAX_TABLES))
            .table_elements(MAX_TABLE_ELEMENTS)
            .max_memory_size(usize::try_from(settings.max_memory).unwrap_or(usize::MAX))
            .linear_memory_keep_resident(MEMORY_KEPT_RESIDENT)
            .table_keep_resident(TABLE_KEPT_RESIDENT)
            .pagemap_scan(wasmtime::Enabled::Auto);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

/// One compiler's wasmtime engine, and the compile cache of its code.
#[derive(Clone)]
pub(crate) struct Backend {
    pub(crate) tier: Tier,
    pub(crate) engine: wasmtime::Engine,
    pub(crate) cache: Option<CompileCache>,
}

/// A per-component bound of `limits.rs`, as the pool takes it.
fn per_component(bound: usize) -> u32 {
    u32::try_from(bound).unwrap_or(u32::MAX)
}

/// The engine and its epoch ticker; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    /// Cranelift's: the code calls run.
    optimizing: Backend,
    /// Winch's, where this machine has it: code that runs once, and the
    /// calls until Cranelift's code is ready.
    baseline: Option<Backend>,
    /// Turns to compile, so that compiles cannot pile up.
    compiling: Arc<tokio::sync::Semaphore>,
    /// Digests that failed to compile, not compiled again.
    failures: CompileFailures,
    settings: EngineSettings,
    metrics: ProviderMetrics,
    ticker: EpochTicker,
}

impl Engine {
    /// Builds the engine and starts its epoch ticker.
    ///
    /// # Errors
    /// When wasmtime rejects the configuration, for example when the pool
    /// cannot reserve its address space, or when the compile cache is
    /// refused (see [`CompileCache::open`]).
    pub fn new(settings: EngineSettings) -> Result<Self, LoadError> {
        if settings.compile_parallelism == 0 {
            return Err(LoadError::Engine("the compile parallelism must be at least 1".to_owned()));
        }
        let config = allocating(compiler_config(Tier::Optimizing, settings.opt_level), &settings);
        let engine = wasmtime::Engine::new(&config).map_err(LoadError::engine)?;
        let cache = match &settings.compile_cache {
            Some(dir) => Some(CompileCache::open(dir, &engine, settings.compile_cache_max_bytes)?),
            None => None,
        };
        // Its instances run `initialize` once per load, and the calls until
        // Cranelift's code is ready, from a pool of their own. Its code is
        // cached beside Cranelift's.
        let baseline =
            match wasmtime::Engine::new(&allocating(compiler_config(Tier::Baseline, settings.opt_level), &settings)) {
                Ok(engine) => {
                    let cache = cache.as_ref().map(|cache| cache.for_engine(&engine));
                    Some(Backend { tier: Tier::Baseline, engine, cache })
                }
                Err(err) => {
                    tracing::info!("no baseline compiler on this machine; Cranelift compiles every component: {err:#}");
                    None
                }
            };
        let optimizing = Backend { tier: Tier::Optimizing, engine, cache };
        let engines = [Some(&optimizing), baseline.as_ref()].into_iter().flatten();
        let ticker = EpochTicker::start(engines.map(|backend| backend.engine.clone()).collect())
            .map_err(|err| LoadError::Engine(format!("cannot start the epoch ticker: {err}")))?;
        let metrics = ProviderMetrics::default();
        let compiling = Arc::new(tokio::sync::Semaphore::new(settings.compile_parallelism));
        let failures = CompileFailures::default();
        let inner = Inner { optimizing, baseline, compiling, failures, settings, metrics, ticker };
        Ok(Engine { inner: Arc::new(inner) })
    }

    /// Keeps the epochs advancing, and so the deadlines running, until the
    /// guard is dropped: every call holds one while it runs.
    pub(crate) fn running(&self) -> Running {
        self.inner.ticker.running()
    }

    /// The wasmtime engine of the code calls run.
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.optimizing.engine
    }

    /// The backends that compile code of `tier`, in the order tried: the
    /// baseline compiler falls back on Cranelift.
    pub(crate) fn backends(&self, tier: Tier) -> Vec<&Backend> {
        let baseline = self.inner.baseline.as_ref().filter(|_| tier == Tier::Baseline);
        baseline.into_iter().chain([&self.inner.optimizing]).collect()
    }

    /// The metrics of every provider on this engine.
    pub fn metrics(&self) -> &ProviderMetrics {
        &self.inner.metrics
    }

    /// The seed of a snapshot's randomness for `inputs`, when a compile
    /// cache can keep the snapshots it makes the same (see
    /// [`CompileCache::snapshot_seed`]); `None`: randomness from the system.
    pub(crate) fn snapshot_seed(&self, inputs: &[&[u8]]) -> Option<[u8; 32]> {
        self.compile_cache().map(|cache| cache.snapshot_seed(inputs))
    }

    /// The components that failed to compile, not compiled again.
    pub(crate) fn failures(&self) -> &CompileFailures {
        &self.inner.failures
    }

    /// The compile cache of Cranelift's code, when the settings name one.
    /// The baseline compiler's code is kept in the same directory, under
    /// its own engine's names.
    pub fn compile_cache(&self) -> Option<&CompileCache> {
        self.inner.optimizing.cache.as_ref()
    }

    /// Compiles `wasm` with the engine's compiler once it has a turn,
    /// within the compile timeout: with the first of `backends` that takes
    /// it, and says which did. Only a component a backend refuses goes to
    /// the next; the timeout covers them all.
    pub(crate) async fn compile_fresh(
        &self,
        wasm: Arc<[u8]>,
        backends: &[&Backend],
    ) -> Result<(Component, Tier), LoadError> {
        let turn = self
            .inner
            .compiling
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| LoadError::Engine("the engine is shutting down".to_owned()))?;
        let turn = Arc::new(turn);
        let limit = self.inner.settings.compile_timeout;
        let compiling = async move {
            let mut refused = None;
            for backend in backends {
                if let Some(reason) = refused.take() {
                    tracing::debug!(
                        compiler = backend.tier.as_str(),
                        "compiling a component the previous compiler refused: {reason}"
                    );
                }
                match self.compile_with(backend, wasm.clone(), turn.clone()).await {
                    Ok(component) => return Ok((component, backend.tier)),
                    Err(LoadError::Invalid(reason)) => refused = Some(reason),
                    Err(err) => return Err(err),
                }
            }
            Err(LoadError::Invalid(refused.unwrap_or_default()))
        };
        tokio::time::timeout(limit, compiling).await.unwrap_or(Err(LoadError::CompileTimeout { limit }))
    }

    /// Compiles `wasm` with `backend`'s compiler, holding `turn`.
    async fn compile_with(
        &self,
        backend: &Backend,
        wasm: Arc<[u8]>,
        turn: Arc<OwnedSemaphorePermit>,
    ) -> Result<Component, LoadError> {
        match &self.inner.settings.compiler {
            Compiler::InProcess => {
                let engine = backend.engine.clone();
                // Given up on, the thread runs on and keeps the turn.
                tokio::task::spawn_blocking(move || {
                    let _turn = turn;
                    compiler::build(&engine, &wasm)
                })
                .await
                .map_err(|err| LoadError::Engine(format!("compilation stopped: {err}")))?
            }
            Compiler::Child(child) => {
                // Given up on, this future drops: the child is killed and
                // the turn given back.
                let _turn = turn;
                child.compile(&backend.engine, backend.tier, self.inner.settings.opt_level, &wasm).await
            }
        }
    }

    /// The settings the engine was built with.
    pub fn settings(&self) -> &EngineSettings {
        &self.inner.settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles the component text `wat` with the backends of `tier`.
    async fn compiled_by(engine: &Engine, tier: Tier, wat: &str) -> (Component, Tier) {
        engine.compile_fresh(Arc::from(wat.as_bytes()), &engine.backends(tier)).await.unwrap()
    }

    #[test]
    fn both_compilers_instances_come_from_pools_unless_allocated_on_demand() {
        let pooled = |settings: EngineSettings| {
            let engine = Engine::new(settings).unwrap();
            let backends = [Tier::Baseline, Tier::Optimizing].map(|tier| engine.backends(tier)[0].clone());
            backends.map(|backend| (backend.tier, backend.engine.pooling_allocator_metrics().is_some()))
        };
        let expected = [(Tier::Baseline, true), (Tier::Optimizing, true)];
        assert_eq!(pooled(EngineSettings::default()), expected, "Winch's calls as cheap to start as Cranelift's");
        let on_demand = EngineSettings { allocation: Allocation::OnDemand, ..EngineSettings::default() };
        assert_eq!(pooled(on_demand), [(Tier::Baseline, false), (Tier::Optimizing, false)]);
    }

    #[tokio::test]
    async fn code_that_runs_once_is_compiled_by_the_baseline_compiler_unless_it_refuses() {
        let engine =
            Engine::new(EngineSettings { allocation: Allocation::OnDemand, ..EngineSettings::default() }).unwrap();
        let plain = "(component (core module (func (export \"f\"))))";
        let (component, tier) = compiled_by(&engine, Tier::Baseline, plain).await;
        assert_eq!(tier, Tier::Baseline);
        assert!(!wasmtime::Engine::same(component.engine(), engine.wasmtime()), "Winch's engine, not the calls'");
        let (component, tier) = compiled_by(&engine, Tier::Optimizing, plain).await;
        assert_eq!(tier, Tier::Optimizing);
        assert!(wasmtime::Engine::same(component.engine(), engine.wasmtime()));

        // Winch lacks the tail-call proposal; Cranelift has it.
        let tail_call = "(component (core module (func $f (export \"f\") return_call $f)))";
        let (component, tier) = compiled_by(&engine, Tier::Baseline, tail_call).await;
        assert_eq!(tier, Tier::Optimizing);
        assert!(wasmtime::Engine::same(component.engine(), engine.wasmtime()));

        let invalid = "(component (core module (func (result i32))))";
        let err = engine.compile_fresh(Arc::from(invalid.as_bytes()), &engine.backends(Tier::Baseline)).await;
        assert!(matches!(&err, Err(LoadError::Invalid(reason)) if reason.contains("type mismatch")), "{:?}", err.err());
    }
}
