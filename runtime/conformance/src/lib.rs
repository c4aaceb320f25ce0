//! The conformance kit: checks that a provider behaves as the controllers
//! and upstream's `k8s.io/cloud-provider` expect, over every part it says
//! it supports, with nodes and Services from a [`Fixture`]. It works on any
//! [`Cloud`]: `wasm-ccm provider conformance` runs it on a loaded
//! component, its tests on the in-memory `TestCloud`.

mod calls;
mod fixture;
mod instances;
mod load_balancer;
mod report;
mod routes;
mod validate;

use std::time::Duration;

use wasm_ccm_cloud::{Cloud, Function, ProviderError, ProviderInfo};

use self::calls::Calls;

/// Said of a check asked of the provider loaded afresh that failed: what
/// one version kept in its memory, even on kept instances, is gone.
const ASKED_AFRESH: &str = "asked of the provider loaded afresh: keep what must last in the cloud";
pub use self::fixture::{Fixture, FixtureError};
pub use self::report::{Check, Outcome, Report};

/// Runs every check of the parts `provider` supports and reports them.
/// `reloaded` is the same provider loaded again, as after a restart or a
/// reload: what `provider` made must be found through it. `deadline` is
/// the provider's; `source` says where it came from, for the report.
pub async fn check<C: Cloud>(
    provider: C,
    reloaded: C,
    fixture: &Fixture,
    deadline: Duration,
    source: String,
) -> Report {
    let info = provider.info();
    let calls = Calls::new(provider);
    let mut suite = Suite {
        reloaded: calls.sharing_log(reloaded),
        calls,
        fixture,
        report: Report::new(info.name.clone(), source),
        info,
        deadline,
    };
    run(&mut suite).await;
    suite.report
}

/// What the checks share.
struct Suite<'a, C> {
    /// The provider.
    calls: Calls<C>,
    /// The same provider loaded again, as after a restart or reload.
    reloaded: Calls<C>,
    fixture: &'a Fixture,
    info: ProviderInfo,
    deadline: Duration,
    report: Report,
}

async fn run<C: Cloud>(suite: &mut Suite<'_, C>) {
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
        instances::batch_checks(suite).await;
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
async fn call_checks<C: Cloud>(suite: &mut Suite<'_, C>) {
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
    use k8s_openapi::api::core::v1::{Node, Service, ServicePort};
    use wasm_ccm_cloud::testing::TestCloud;
    use wasm_ccm_test_support::{NodeFixture, ServiceFixture, ServicePortFixture};

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

    fn fixture() -> Fixture {
        let fixture = Fixture {
            nodes: vec![
                Node::test("node-a").with_pod_cidrs(&["10.244.1.0/24"]),
                Node::test("node-b").with_pod_cidrs(&["10.244.2.0/24"]),
            ],
            services: vec![Service::test("web").with_ports([ServicePort::test("http", 80).with_node_port(30080)])],
            unknown_node: "absent".into(),
        };
        fixture.completed().expect("named objects")
    }

    fn cloud() -> TestCloud {
        TestCloud::default().with_instance("node-a", "a", "10.0.0.1").with_instance("node-b", "b", "10.0.0.2")
    }

    async fn checked(cloud: TestCloud) -> Report {
        check(cloud.clone(), cloud, &fixture(), Duration::from_secs(5), "memory".into()).await
    }

    fn outcome<'a>(report: &'a Report, name: &str) -> &'a Outcome {
        let check = report.checks.iter().find(|check| check.name == name);
        &check.unwrap_or_else(|| panic!("no check {name} in {:?}", report.checks)).outcome
    }

    #[tokio::test]
    async fn a_cloud_that_behaves_as_upstream_expects_passes_every_check_of_every_part() {
        let report = checked(cloud().with_max_batch(100)).await;
        let failed: Vec<&Check> = report.checks.iter().filter(|check| check.outcome != Outcome::Pass).collect();
        assert!(failed.is_empty(), "{failed:#?}");
        for part in
            ["provider/", "load-balancer/default/web/", "instances-v2/", "instances-batch/", "routes/", "calls/"]
        {
            assert!(report.checks.iter().any(|check| check.name.starts_with(part)), "no {part} check");
        }
    }

    #[tokio::test]
    async fn a_failing_ensure_fails_its_check_with_the_cloud_s_reason_and_skips_what_needs_it() {
        let cloud = cloud();
        cloud.fail(Function::EnsureLoadBalancer, ProviderError::Cloud("quota exceeded".into()));
        let report = checked(cloud).await;
        let Outcome::Fail(reason) = outcome(&report, "load-balancer/default/web/ensure") else { panic!("{report:#?}") };
        assert!(reason.contains("quota exceeded"), "{reason}");
        assert!(matches!(outcome(&report, "load-balancer/default/web/delete"), Outcome::Skip(_)), "{report:#?}");
        assert_eq!(outcome(&report, "instances-v2/node-a/exists"), &Outcome::Pass);
        assert_eq!(report.failed(), 1, "{report:#?}");
    }

    #[tokio::test]
    async fn an_error_without_a_message_fails_the_calls_check() {
        let cloud = cloud();
        cloud.fail(Function::ListRoutes, ProviderError::Cloud(String::new()));
        let report = checked(cloud).await;
        let Outcome::Fail(reason) = outcome(&report, "calls/errors") else { panic!("{report:#?}") };
        assert!(reason.contains("an error without a message"), "{reason}");
    }
}
