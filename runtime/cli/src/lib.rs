//! The `wasm-ccm` command: the cloud-controller-manager and the tools around
//! its providers.

mod args;
mod logging;
mod provider_args;
mod provider_call;
mod run;
mod signals;

pub use args::{Args, Command, ProviderCommand};
pub use provider_args::ProviderArgs;
pub use run::RunArgs;

/// Runs a parsed command line.
///
/// # Errors
/// What the command failed with.
pub fn run(args: Args) -> anyhow::Result<()> {
    logging::init(&args.logging)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("wasm-ccm").build()?;
    runtime.block_on(async move {
        match args.command {
            Command::Run(args) => run::run(*args).await,
            Command::Provider(ProviderCommand::Call(call)) => provider_call::call(call).await,
        }
    })
}
