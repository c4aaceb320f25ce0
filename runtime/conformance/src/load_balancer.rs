//! Load-balancer checks, per fixture Service: the whole life of one load
//! balancer, from absent to gone.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{LoadBalancerStatus, Node, Service};

use wasm_ccm_cloud::{Cloud, Function, NodeSet, NodeSnapshot, ProviderError};

use super::fixture::name;
use super::validate::{self, describe};
use super::{ASKED_AFRESH, Suite};

/// The longest load-balancer name: upstream's `GetLoadBalancerName` limit,
/// which the names of most clouds' load balancers share.
const LONGEST_NAME: usize = 32;

/// Checks after `ensure`, skipped when it fails.
const AFTER_ENSURE: [&str; 7] =
    ["ensure-idempotent", "get-after-ensure", "survives-reload", "update", "delete", "delete-again", "gone"];

/// Runs the checks for every fixture Service.
pub async fn checks<C: Cloud>(suite: &mut Suite<'_, C>) {
    let fixture = suite.fixture;
    for service in &fixture.services {
        service_checks(suite, service).await;
    }
}

fn failed(function: &'static str) -> impl Fn(ProviderError) -> String {
    move |err| format!("{function} failed: {err}")
}

async fn service_checks<C: Cloud>(suite: &mut Suite<'_, C>, service: &Service) {
    let Suite { calls, reloaded, fixture, report, .. } = suite;
    let key = format!("load-balancer/{}", name(service));
    let nodes = fixture.nodes.as_slice();

    report
        .check(format!("{key}/name"), async {
            let get_name = async |calls: &super::Calls<C>| {
                calls.run(Function::GetLoadBalancerName, async |p| p.get_load_balancer_name(service).await).await
            };
            let first = get_name(calls).await.map_err(failed("get-name"))?;
            let second = get_name(reloaded).await.map_err(failed("get-name"))?;
            if first.is_empty() {
                return Err("get-name answered an empty name".to_owned());
            }
            if first != second {
                return Err(format!("the name is not stable: {first:?}, then {second:?}"));
            }
            if first.len() > LONGEST_NAME {
                return Err(format!("{first:?} has {} characters; at most {LONGEST_NAME}", first.len()));
            }
            Ok(())
        })
        .await;

    report
        .check(format!("{key}/get-absent"), async {
            match get(calls, service).await? {
                None => Ok(()),
                Some(status) => Err(format!(
                    "get says a load balancer exists ({}) before ensure; a previous run may have left it",
                    describe(&status)
                )),
            }
        })
        .await;

    let ensured = report
        .check(format!("{key}/ensure"), async {
            let status = ensure(calls, service, nodes).await?;
            validate::status(&status)?;
            Ok(status)
        })
        .await;
    let Some(status) = ensured else {
        for check in AFTER_ENSURE {
            report.skip(format!("{key}/{check}"), "ensure failed");
        }
        // Whatever the failed ensure left behind.
        let _ = calls
            .run(Function::EnsureLoadBalancerDeleted, async |p| p.ensure_load_balancer_deleted(service).await)
            .await;
        return;
    };

    report
        .check(format!("{key}/ensure-idempotent"), async {
            let again = ensure(calls, service, nodes).await?;
            if again == status {
                Ok(())
            } else {
                Err(format!(
                    "not idempotent: the second ensure answered {}, the first {}",
                    describe(&again),
                    describe(&status)
                ))
            }
        })
        .await;

    report.check(format!("{key}/get-after-ensure"), same_as_ensured(calls, service, &status)).await;
    report
        .check(format!("{key}/survives-reload"), async {
            same_as_ensured(reloaded, service, &status).await.map_err(|err| format!("{err}; {ASKED_AFRESH}"))
        })
        .await;

    if nodes.is_empty() {
        report.skip(format!("{key}/update"), "the fixture has no nodes to change");
    } else {
        report
            .check(format!("{key}/update"), async {
                // As the controllers pass it: a change from the set the
                // load balancer was ensured with, one node removed.
                let snapshot =
                    |nodes: &[Node]| Arc::new(NodeSnapshot::new(nodes.iter().cloned().map(Arc::new).collect()));
                let fewer = NodeSet::new(snapshot(&nodes[..nodes.len() - 1]), Some(snapshot(nodes)));
                calls
                    .run(Function::UpdateLoadBalancer, async |p| p.update_load_balancer(service, &fewer).await)
                    .await
                    .map_err(failed("update"))?;
                match get(calls, service).await? {
                    Some(_) => Ok(()),
                    None => Err(format!("get says it is gone after an update to {} nodes", fewer.current().len())),
                }
            })
            .await;
    }

    report.check(format!("{key}/delete"), delete(calls, service)).await;
    report
        .check(format!("{key}/delete-again"), async {
            delete(calls, service).await.map_err(|err| format!("{err}; deleting what is already gone must succeed"))
        })
        .await;
    report
        .check(format!("{key}/gone"), async {
            match get(reloaded, service).await? {
                None => Ok(()),
                Some(status) => Err(format!("get still finds it ({}) after ensure-deleted", describe(&status))),
            }
        })
        .await;
}

async fn get<C: Cloud>(calls: &super::Calls<C>, service: &Service) -> Result<Option<LoadBalancerStatus>, String> {
    calls.run(Function::GetLoadBalancer, async |p| p.get_load_balancer(service).await).await.map_err(failed("get"))
}

async fn ensure<C: Cloud>(
    calls: &super::Calls<C>,
    service: &Service,
    nodes: &[Node],
) -> Result<LoadBalancerStatus, String> {
    let nodes = NodeSet::of(nodes.iter().cloned());
    calls
        .run(Function::EnsureLoadBalancer, async |p| p.ensure_load_balancer(service, &nodes).await)
        .await
        .map_err(failed("ensure"))
}

async fn delete<C: Cloud>(calls: &super::Calls<C>, service: &Service) -> Result<(), String> {
    calls
        .run(Function::EnsureLoadBalancerDeleted, async |p| p.ensure_load_balancer_deleted(service).await)
        .await
        .map_err(failed("ensure-deleted"))
}

async fn same_as_ensured<C: Cloud>(
    calls: &super::Calls<C>,
    service: &Service,
    ensured: &LoadBalancerStatus,
) -> Result<(), String> {
    match get(calls, service).await? {
        Some(status) if status == *ensured => Ok(()),
        Some(status) => Err(format!("get answers {}, ensure answered {}", describe(&status), describe(ensured))),
        None => Err("get says it does not exist after ensure".to_owned()),
    }
}
