//! The command line.

use clap::{Parser, Subcommand};

use crate::local::LocalArgs;
use crate::logging::LogArgs;
use crate::provider_call::CallArgs;
use crate::provider_inspect::InspectArgs;
use crate::provider_push::PushArgs;
use crate::provider_verify::VerifyArgs;
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
    /// Push a component to a registry as a CNCF WebAssembly artifact,
    /// optionally signing it as `cosign sign --key` does.
    Push(PushArgs),
    /// Describe a component, from a file or a registry: its world's imports
    /// and exports, digest and size, and whether this host can load it.
    Inspect(InspectArgs),
    /// Check a component's sha256 pin and signature, from a file or a
    /// registry; fails when it does not verify.
    Verify(VerifyArgs),
}
