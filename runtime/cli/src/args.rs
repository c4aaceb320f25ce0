//! The command line.

use clap::{Parser, Subcommand};

use crate::local::LocalArgs;
use crate::logging::LogArgs;
use crate::provider_call::CallArgs;
use crate::run::RunArgs;

/// A Kubernetes cloud-controller-manager whose cloud provider is a
/// WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "wasm-ccm", version, about, max_term_width = 100)]
pub struct Args {
    /// How to log.
    #[command(flatten)]
    pub logging: LogArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the cloud controllers against a cluster.
    Run(Box<RunArgs>),
    /// Run wasm-ccm on an embedded local cluster with the fake provider,
    /// with sample nodes and Services, until Ctrl-C.
    Local(LocalArgs),
    /// Work with provider components.
    #[command(subcommand)]
    Provider(ProviderCommand),
}

/// The `provider` commands.
#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// Load a provider and call one of its functions; prints the result as JSON.
    Call(CallArgs),
}
