//! Route checks: a route to each fixture node with `spec.podCIDR` created
//! with the node's UID as the name hint, listed, deleted, and gone.

use k8s_openapi::api::core::v1::Node;

use wasm_ccm_cloud::{Cloud, Function, Route};

use super::{ASKED_AFRESH, Calls, Suite};

/// Runs the checks.
pub async fn checks<C: Cloud>(suite: &mut Suite<'_, C>) {
    let Suite { calls, reloaded, fixture, report, .. } = suite;
    let targets: Vec<(&Node, Route)> = fixture.nodes.iter().filter_map(|node| Some((node, route(node)?))).collect();
    if targets.is_empty() {
        report.skip("routes", "no fixture node has spec.podCIDR");
        return;
    }
    let mut created = Vec::new();
    for (node, route) in &targets {
        let uid = node.metadata.uid.clone().unwrap_or_default();
        let done = report
            .check(format!("routes/{}/create", route.target_node), async {
                calls
                    .run(Function::CreateRoute, async |p| p.create_route(&uid, route).await)
                    .await
                    .map_err(|err| format!("create-route failed: {err}"))
            })
            .await;
        if done.is_some() {
            created.push(route);
        }
    }
    let listed = report
        .check("routes/list", async {
            let listed = list(reloaded).await?;
            let mut found = Vec::new();
            for route in &created {
                match listed.iter().find(|listed| same(listed, route)) {
                    Some(listed) if listed.name.is_empty() => {
                        return Err(format!("the route to {} has no name", route.target_node));
                    }
                    Some(listed) => found.push(listed.clone()),
                    None => {
                        return Err(format!(
                            "list-routes does not have the route of {} to {}; it has {}; {ASKED_AFRESH}",
                            route.destination_cidr,
                            route.target_node,
                            describe(&listed)
                        ));
                    }
                }
            }
            Ok(found)
        })
        .await;
    // Delete what was created, as listed when the list passed.
    let to_delete: Vec<Route> = listed.unwrap_or_else(|| created.iter().map(|route| (*route).clone()).collect());
    for route in &to_delete {
        report
            .check(format!("routes/{}/delete", route.target_node), async {
                calls
                    .run(Function::DeleteRoute, async |p| p.delete_route(route).await)
                    .await
                    .map_err(|err| format!("delete-route failed: {err}"))
            })
            .await;
    }
    report
        .check("routes/gone", async {
            let listed = list(calls).await?;
            match to_delete.iter().find(|route| listed.iter().any(|listed| same(listed, route))) {
                Some(route) => {
                    Err(format!("list-routes still has the route to {} after delete-route", route.target_node))
                }
                None => Ok(()),
            }
        })
        .await;
}

fn route(node: &Node) -> Option<Route> {
    let spec = node.spec.as_ref()?;
    let cidr = spec.pod_cidr.clone().or_else(|| spec.pod_cidrs.as_ref()?.first().cloned())?;
    Some(Route { target_node: node.metadata.name.clone()?, destination_cidr: cidr, ..Route::default() })
}

async fn list<C: Cloud>(calls: &Calls<C>) -> Result<Vec<Route>, String> {
    calls
        .run(Function::ListRoutes, async |p| p.list_routes().await)
        .await
        .map_err(|err| format!("list-routes failed: {err}"))
}

fn same(listed: &Route, route: &Route) -> bool {
    listed.target_node == route.target_node && listed.destination_cidr == route.destination_cidr
}

fn describe(routes: &[Route]) -> String {
    if routes.is_empty() {
        return "none".to_owned();
    }
    routes
        .iter()
        .map(|route| format!("{} to {}", route.destination_cidr, route.target_node))
        .collect::<Vec<_>>()
        .join(", ")
}
