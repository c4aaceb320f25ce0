//! Which compiler a component's code comes from, and the configuration
//! that decides how it compiles.

pub use wasmtime::OptLevel;
use wasmtime::{Config, Strategy};

/// Which compiler a component's code comes from.
///
/// Winch, a baseline compiler, compiles in a fifth of Cranelift's CPU time
/// (docs/bench-log) code that runs slower. It compiles what runs once, the
/// instrumented component whose instance runs `initialize` for the
/// snapshot, and the snapshot's code that calls run while Cranelift
/// compiles the snapshot again in the background (see
/// [`LoadedProvider::code`](crate::LoadedProvider::code)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Winch: fast to compile, slower to run. A component it refuses (it
    /// lacks some proposals, such as tail calls) is compiled by Cranelift.
    Baseline,
    /// Cranelift at the engine's [`OptLevel`].
    Optimizing,
}

impl Tier {
    /// A short, stable name for the compiler process's header, logs and
    /// status.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Baseline => "baseline",
            Tier::Optimizing => "optimizing",
        }
    }
}

/// What decides how components compile: the same for an engine and for
/// the compiler process that compiles for it, so that its code loads.
/// The baseline compiler has no optimisation level.
pub(crate) fn compiler_config(tier: Tier, opt_level: OptLevel) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    match tier {
        Tier::Baseline => config.strategy(Strategy::Winch),
        Tier::Optimizing => config.strategy(Strategy::Cranelift).cranelift_opt_level(opt_level),
    };
    config
}
