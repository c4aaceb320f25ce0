//! `wasm-ccm provider conformance`: checks that a provider behaves as the
//! controllers and upstream's `k8s.io/cloud-provider` expect, over every
//! part it says it supports, with nodes and Services from a fixture file.

mod calls;
mod fixture;
mod instances;
mod load_balancer;
mod report;
mod routes;
mod validate;

use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;
use wasm_ccm_cloud::{Cloud, Function, ProviderError, ProviderInfo};
use wasm_ccm_distribution::{Verification, pull};
use wasm_ccm_host::{Allocation, Engine, EngineSettings, LoadedProvider, ProviderHandle, ProviderSpec};

use self::calls::Calls;
use self::fixture::Fixture;
use self::report::Report;
use crate::SandboxArgs;
use crate::registry_args::{RegistryArgs, Target, read};

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
    pub sandbox: SandboxArgs,
    /// How to reach the registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// What the checks share.
struct Suite<'a> {
    /// The provider.
    calls: Calls,
    /// The same component loaded again, as after a restart or reload.
    reloaded: Calls,
    fixture: &'a Fixture,
    info: ProviderInfo,
    deadline: Duration,
    report: Report,
}

/// Runs the suite and prints its report.
///
/// # Errors
/// When the provider or the fixture cannot be loaded, or a check fails.
pub async fn conformance(args: ConformanceArgs) -> anyhow::Result<()> {
    let fixture = Fixture::read(&args.fixture)?;
    let (source, wasm) = match &args.target {
        Target::File(path) => {
            args.registry.refuse_for(&args.target)?;
            (path.display().to_string(), read(path)?)
        }
        Target::Oci(reference) => {
            let pulled = pull(reference, &args.registry.options(reference)?, &Verification::none()).await?;
            (pulled.reference.to_string(), pulled.wasm.to_vec())
        }
    };
    let spec = ProviderSpec { wasm: wasm.into(), ..args.sandbox.template("conformance", &args.cluster_name)? };
    let deadline = spec.limits.deadline;
    let engine = Engine::new(EngineSettings {
        allocation: Allocation::OnDemand,
        compiler: crate::compile_worker::compiler()?,
        ..Default::default()
    })?;
    let first = ProviderHandle::new(LoadedProvider::load(&engine, spec.clone()).await?);
    let reloaded = ProviderHandle::new(LoadedProvider::load(&engine, spec).await?);
    let info = first.info();
    let calls = Calls::new(first);
    let mut suite = Suite {
        reloaded: calls.sharing_log(reloaded),
        calls,
        fixture: &fixture,
        report: Report::new(info.name.clone(), source),
        info,
        deadline,
    };
    run(&mut suite).await;
    let report = suite.report;
    match args.output {
        Output::Table => print!("{}", report.table()),
        Output::Junit => println!("{}", report.junit()?),
    }
    match report.failed() {
        0 => Ok(()),
        failed => anyhow::bail!("{failed} of {} conformance checks failed", report.checks.len()),
    }
}

async fn run(suite: &mut Suite<'_>) {
    let name = suite.info.name.clone();
    suite.report.check("provider/name", async { validate::scheme(&name) }).await;
    let parts = suite.info.parts;
    if !(parts.load_balancer || parts.instances || parts.instances_v2 || parts.zones || parts.routes) {
        suite.report.skip("provider/parts", "the provider supports no part");
    }
    if parts.load_balancer {
        load_balancer::checks(suite).await;
    }
    if parts.instances_v2 {
        instances::v2_checks(suite).await;
    }
    if parts.instances {
        instances::v1_checks(suite).await;
    }
    if parts.zones {
        instances::zone_checks(suite).await;
    }
    if parts.clusters {
        let calls = suite.calls.clone();
        suite
            .report
            .check("clusters/list", async {
                calls
                    .run(Function::ListClusters, async |p| p.list_clusters().await)
                    .await
                    .map(drop)
                    .map_err(|err| format!("list-clusters failed: {err}"))
            })
            .await;
    }
    if parts.routes {
        routes::checks(suite).await;
    }
    call_checks(suite).await;
}

/// Checks over every call the suite made: deadlines, and what each error
/// carried.
async fn call_checks(suite: &mut Suite<'_>) {
    let log = suite.calls.log();
    let deadline = suite.deadline;
    suite
        .report
        .check("calls/deadline", async {
            let late: Vec<String> = log
                .iter()
                .filter(|call| {
                    call.time > deadline || matches!(call.error, Some(ProviderError::DeadlineExceeded { .. }))
                })
                .map(|call| format!("{} ({}ms)", call.function, call.time.as_millis()))
                .collect();
            if late.is_empty() {
                Ok(())
            } else {
                Err(format!("{} ran past the deadline of {deadline:?}", late.join(", ")))
            }
        })
        .await;
    suite
        .report
        .check("calls/errors", async {
            let wrong: Vec<String> = log
                .iter()
                .filter_map(|call| Some((call.function, wrong_error(call.error.as_ref()?)?)))
                .map(|(function, wrong)| format!("{function}: {wrong}"))
                .collect();
            if wrong.is_empty() { Ok(()) } else { Err(wrong.join("; ")) }
        })
        .await;
}

/// What is wrong with an error a provider answered, if anything: every
/// failure is a sentinel or carries a message, a `retry` carries its delay,
/// and a call never traps.
fn wrong_error(error: &ProviderError) -> Option<String> {
    match error {
        ProviderError::Cloud(message) if message.trim().is_empty() => Some("an error without a message".to_owned()),
        ProviderError::Retry { delay, .. } if delay.is_zero() => Some("a retry without a delay".to_owned()),
        ProviderError::Panic { .. }
        | ProviderError::Trap { .. }
        | ProviderError::MemoryLimit { .. }
        | ProviderError::InvalidResult(_) => Some(error.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_must_say_something() {
        assert_eq!(wrong_error(&ProviderError::Cloud(" ".into())).as_deref(), Some("an error without a message"));
        let retry = |delay| ProviderError::Retry { delay, message: "busy".into() };
        assert_eq!(wrong_error(&retry(Duration::ZERO)).as_deref(), Some("a retry without a delay"));
        assert_eq!(wrong_error(&retry(Duration::from_secs(1))), None);
        assert_eq!(wrong_error(&ProviderError::InstanceNotFound), None);
        assert_eq!(wrong_error(&ProviderError::Cloud("quota exceeded".into())), None);
        let panic = ProviderError::Panic { message: "boom".into() };
        assert_eq!(wrong_error(&panic).as_deref(), Some("the provider panicked: boom"));
    }
}
