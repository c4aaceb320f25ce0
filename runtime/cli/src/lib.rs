//! The `wasm-ccm` command: the cloud-controller-manager and the tools around
//! its providers.

mod admin;
mod args;
mod compile_worker;
mod component_loader;
mod conformance;
mod delegation;
mod leader;
#[cfg(feature = "local")]
mod local;
mod logging;
mod provider_args;
mod provider_call;
mod provider_inspect;
mod provider_new;
mod provider_push;
mod provider_source;
mod provider_status;
mod provider_verify;
mod providers_file;
mod providers_view;
mod registry_args;
mod run;
mod signals;
mod trust;
mod upstream_args;

pub use args::{Args, Command, ProviderCommand};
pub use provider_args::{ProviderArgs, SandboxArgs};
pub use provider_source::SourceArgs;
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
                ProviderCommand::Call(call) => provider_call::call(call).await,
                ProviderCommand::Push(args) => provider_push::push(args).await,
                ProviderCommand::Inspect(args) => provider_inspect::inspect(args).await,
                ProviderCommand::Verify(args) => provider_verify::verify(args).await,
                ProviderCommand::Conformance(args) => conformance::conformance(*args).await,
                ProviderCommand::New(args) => provider_new::new(args),
                ProviderCommand::Status(args) => provider_status::status(args).await,
            },
            Command::CompileWorker => anyhow::bail!("{}", compile_worker::RUN_BY_MAIN),
        }
    })
}
