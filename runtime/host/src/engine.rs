//! The wasmtime engine every provider runs on, and the epoch ticker that
//! enforces call deadlines.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

pub use wasmtime::OptLevel;
use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::cache::{CacheOutcome, CompileCache};
use crate::error::LoadError;
use crate::metrics::ProviderMetrics;

/// How often the engine's epoch advances: the granularity of deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

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
    /// The largest component compiled, in bytes.
    pub max_component_size: usize,
    /// How long compiling one component may take. A compile past it is
    /// reported as failed; it cannot be interrupted, so it runs to its end
    /// on its thread, and the next compile waits for it.
    pub compile_timeout: Duration,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            allocation: Allocation::Pooling { instances: 1000 },
            max_memory: 1 << 30,
            opt_level: OptLevel::Speed,
            compile_cache: None,
            compile_cache_max_bytes: crate::cache::DEFAULT_MAX_BYTES,
            max_component_size: 32 << 20,
            compile_timeout: Duration::from_secs(60),
        }
    }
}

/// The engine and its epoch ticker; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: wasmtime::Engine,
    /// One compile at a time, so that compiles given up on cannot pile up.
    compiling: Arc<tokio::sync::Semaphore>,
    settings: EngineSettings,
    cache: Option<CompileCache>,
    metrics: ProviderMetrics,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}

impl Engine {
    /// Builds the engine and starts its epoch ticker.
    ///
    /// # Errors
    /// When wasmtime rejects the configuration, for example when the pool
    /// cannot reserve its address space, or when the compile cache is
    /// refused (see [`CompileCache::open`]).
    pub fn new(settings: EngineSettings) -> Result<Self, LoadError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.cranelift_opt_level(settings.opt_level);
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
                .max_core_instances_per_component(16)
                .max_memories_per_component(u32::try_from(crate::limits::MAX_MEMORIES).unwrap_or(u32::MAX))
                .max_tables_per_component(8)
                .max_memory_size(usize::try_from(settings.max_memory).unwrap_or(usize::MAX));
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = wasmtime::Engine::new(&config).map_err(LoadError::engine)?;
        let cache = match &settings.compile_cache {
            Some(dir) => Some(CompileCache::open(dir, &engine, settings.compile_cache_max_bytes)?),
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let engine = engine.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("wasm-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })
                .map_err(|err| LoadError::Engine(format!("cannot start the epoch ticker: {err}")))?
        };
        let metrics = ProviderMetrics::default();
        let compiling = Arc::new(tokio::sync::Semaphore::new(1));
        let inner = Inner { engine, compiling, settings, cache, metrics, stop, ticker: Some(ticker) };
        Ok(Engine { inner: Arc::new(inner) })
    }

    /// The wasmtime engine.
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.engine
    }

    /// The metrics of every provider on this engine.
    pub fn metrics(&self) -> &ProviderMetrics {
        &self.inner.metrics
    }

    /// The compile cache, when the settings name one.
    pub fn compile_cache(&self) -> Option<&CompileCache> {
        self.inner.cache.as_ref()
    }

    /// Compiles `wasm` (or, when `cached`, loads it from the compile cache)
    /// on a blocking thread, one compile at a time, within the compile
    /// timeout. What is compiled once per load, such as a snapshot, is not
    /// cached: the cache would only grow.
    ///
    /// # Errors
    /// When the component is too large, does not compile, or its compile
    /// does not end in time.
    pub(crate) async fn compile(
        &self,
        wasm: Arc<[u8]>,
        cached: bool,
    ) -> Result<(wasmtime::component::Component, CacheOutcome), LoadError> {
        let limit = self.inner.settings.max_component_size;
        if wasm.len() > limit {
            return Err(LoadError::TooLarge { size: wasm.len(), limit });
        }
        let timeout = self.inner.settings.compile_timeout;
        let compiling = async {
            let turn = self
                .inner
                .compiling
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| LoadError::CompileTimeout { limit: timeout })?;
            let engine = self.clone();
            tokio::task::spawn_blocking(move || {
                let _turn = turn;
                if cached {
                    crate::component::compile_cached(&engine, &wasm)
                } else {
                    crate::component::compile_uncached(&engine, &wasm)
                        .map(|compiled| (compiled, CacheOutcome::Disabled))
                }
            })
            .await
            .map_err(|err| LoadError::Engine(format!("compilation stopped: {err}")))?
        };
        tokio::time::timeout(timeout, compiling).await.map_err(|_| LoadError::CompileTimeout { limit: timeout })?
    }

    /// The settings the engine was built with.
    pub fn settings(&self) -> &EngineSettings {
        &self.inner.settings
    }
}
