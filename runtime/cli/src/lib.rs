//! The `wasm-ccm` command: the cloud-controller-manager and the tools around
//! its providers.

mod args;
mod compile_worker;
mod completions;
#[cfg(test)]
mod flags_reference;
#[cfg(feature = "local")]
mod local;
mod logging;
mod man;
mod options;
mod provider;
mod run;

pub use args::{Args, Command, ProviderCommand};
pub use options::provider::ProviderArgs;
pub use run::RunArgs;

/// Runs a parsed command line.
///
/// # Errors
/// What the command failed with.
pub fn run(args: Args) -> anyhow::Result<()> {
    // The local demo prints its own progress; logs would drown it.
    #[cfg(feature = "local")]
    let quiet = matches!(args.command, Command::Local(_));
    #[cfg(not(feature = "local"))]
    let quiet = false;
    logging::init(&args.logging, if quiet { "warn" } else { "info" })?;
    // The HTTP clients and the admin server share one TLS crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("wasm-ccm").build()?;
    runtime.block_on(async move {
        match args.command {
            Command::Run(args) => run::run(*args).await,
            #[cfg(feature = "local")]
            Command::Local(args) => local::local(args).await,
            Command::Provider(command) => match *command {
                ProviderCommand::Call(call) => provider::call::call(call).await,
                ProviderCommand::Push(args) => provider::push::push(args).await,
                ProviderCommand::Inspect(args) => provider::inspect::inspect(args).await,
                ProviderCommand::Verify(args) => provider::verify::verify(args).await,
                ProviderCommand::Conformance(args) => provider::conformance::conformance(*args).await,
                ProviderCommand::New(args) => provider::new::new(args),
                ProviderCommand::Status(args) => provider::status::status(args).await,
            },
            Command::Completions(args) => completions::completions(&args),
            Command::Man(args) => man::man(&args),
            Command::CompileWorker => anyhow::bail!("{}", compile_worker::RUN_BY_MAIN),
        }
    })
}
