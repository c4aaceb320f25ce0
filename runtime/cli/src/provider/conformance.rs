//! `wasm-ccm provider conformance`: runs the conformance kit
//! (`wasm-ccm-conformance`) on a provider component, with nodes and
//! Services from a fixture file.

use std::path::PathBuf;

use clap::ValueEnum;
use wasm_ccm_config::{RegistryArgs, SettingsArgs};
use wasm_ccm_conformance::Fixture;
use wasm_ccm_distribution::{Verification, pull};
use wasm_ccm_host::{Allocation, Engine, EngineSettings, LoadedProvider, ProviderHandle, ProviderSpec};

use crate::options::target::{Target, read, refuse_registry_flags};

/// How `provider conformance` prints its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// A table of checks, results and times.
    Table,
    /// JUnit XML, for CI.
    Junit,
}

/// `provider conformance` flags.
#[derive(Debug, clap::Args)]
pub struct ConformanceArgs {
    /// The provider: a component file, or `oci://registry[:port]/repository[:tag|@sha256:<hex>]`.
    pub target: Target,
    /// The nodes the cloud has and the Services to give load balancers, as
    /// Kubernetes objects in YAML or JSON: `{nodes: [Node], services:
    /// [Service], unknownNode: NAME}`.
    #[arg(long, value_name = "FILE")]
    pub fixture: PathBuf,
    /// The cluster name passed to the provider.
    #[arg(long, default_value = wasm_ccm_cloud::DEFAULT_CLUSTER_NAME)]
    pub cluster_name: String,
    /// How to print the report.
    #[arg(long, short, value_enum, default_value = "table")]
    pub output: Output,
    /// The provider's configuration, credentials, allow-list and limits.
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// How to reach the registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Runs the suite and prints its report.
///
/// # Errors
/// When the provider or the fixture cannot be loaded, or a check fails.
pub async fn conformance(args: ConformanceArgs) -> anyhow::Result<()> {
    let fixture = Fixture::read(&args.fixture)?;
    let (source, wasm) = match &args.target {
        Target::File(path) => {
            refuse_registry_flags(&args.registry, &args.target)?;
            (path.display().to_string(), read(path)?)
        }
        Target::Oci(reference) => {
            let pulled = pull(reference, &args.registry.options(reference)?, &Verification::none()).await?;
            (pulled.reference.to_string(), pulled.wasm.to_vec())
        }
    };
    let spec = ProviderSpec { wasm: wasm.into(), ..args.settings.template("conformance", &args.cluster_name)? };
    let deadline = spec.limits.deadline;
    let engine = Engine::new(EngineSettings {
        allocation: Allocation::OnDemand,
        compiler: crate::compile_worker::compiler()?,
        max_memory: spec.limits.memory,
        ..Default::default()
    })?;
    let first = ProviderHandle::new(LoadedProvider::load(&engine, spec.clone()).await?);
    let reloaded = ProviderHandle::new(LoadedProvider::load(&engine, spec).await?);
    let report = wasm_ccm_conformance::check(first, reloaded, &fixture, deadline, source).await;
    match args.output {
        Output::Table => print!("{}", report.table()),
        Output::Junit => println!("{}", report.junit()?),
    }
    match report.failed() {
        0 => Ok(()),
        failed => anyhow::bail!("{failed} of {} conformance checks failed", report.checks.len()),
    }
}
