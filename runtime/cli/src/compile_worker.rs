//! Providers compiled in a child process of this executable, run with the
//! hidden subcommand `compile-worker` under CPU-time and memory limits (see
//! [`wasm_ccm_host::compile::compiler`]).

use anyhow::Context as _;
use wasm_ccm_host::{ChildCompiler, Compiler};

/// The hidden subcommand the child runs.
const SUBCOMMAND: &str = "compile-worker";

/// What [`crate::run`] says when asked to run the child's subcommand, which
/// `main` serves before anything else starts.
pub(crate) const RUN_BY_MAIN: &str = "compile-worker is served by the wasm-ccm binary's main";

/// The compiler of `run`, `local` and the provider commands: this
/// executable, in a child process.
///
/// # Errors
/// When this executable's path cannot be found.
pub(crate) fn compiler() -> anyhow::Result<Compiler> {
    let program = std::env::current_exe().context("cannot find this executable to compile providers in")?;
    Ok(Compiler::Child(ChildCompiler::new(program, [SUBCOMMAND])))
}
