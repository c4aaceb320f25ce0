//! Pod CIDR routes in the cluster's VPC route table, each to the instance of
//! its Node.

use std::collections::BTreeMap;

use wasm_ccm_sdk::types::Route;
use wasm_ccm_sdk::{Error, Routes, log};

use crate::Aws;
use crate::api::absent_on;
use crate::ec2::{ALIVE_STATES, Ec2, Instance, RouteTable};
use crate::naming;

impl Aws {
    /// The configured route table, or the one tagged for the cluster.
    fn route_table(&self) -> Result<RouteTable, Error> {
        let ec2 = Ec2(&self.client);
        let tag = naming::cluster_tag(&self.cluster_name);
        let mut tables = match &self.config.route_table_id {
            Some(id) => ec2.route_tables(id)?,
            None => ec2.route_tables_tagged(&tag)?,
        };
        match (tables.len(), &self.config.route_table_id) {
            (1, _) => Ok(tables.remove(0)),
            (0, Some(id)) => Err(Error::other(format_args!("route table {id} does not exist"))),
            (0, None) => Err(Error::other(format_args!(
                "no route table is tagged {tag} (owned or shared); tag one or configure routeTableId"
            ))),
            (count, _) => Err(Error::other(format_args!(
                "{count} route tables are tagged {tag}; configure routeTableId to choose one"
            ))),
        }
    }
}

fn ipv4_only(route: &Route) -> Result<(), Error> {
    if route.destination_cidr.contains(':') {
        return Err(Error::other(format_args!(
            "IPv6 pod CIDR {} cannot be routed by this provider",
            route.destination_cidr
        )));
    }
    Ok(())
}

/// The routes of `table` that send traffic to instances, as the route
/// controller sees them: a route is a blackhole when AWS says so or when
/// its instance is terminated or gone.
fn cluster_routes(cluster_name: &str, table: &RouteTable, instances: &BTreeMap<String, Instance>) -> Vec<Route> {
    let mut routes = Vec::new();
    for route in &table.route_set.items {
        let Some(cidr) = route.destination_cidr_block.as_deref() else { continue };
        let instance =
            route.instance_id.as_deref().map(|id| instances.get(id).filter(|instance| !instance.is("terminated")));
        let (target_node, blackhole) = match (instance, route.state == "blackhole") {
            (None, false) => continue,
            (None, true) => (String::new(), true),
            (Some(None), _) => (String::new(), true),
            (Some(Some(instance)), blackhole) => match instance.node_name() {
                Some(name) => (name.to_owned(), blackhole),
                None => {
                    log::warn(&format!("route to {cidr}: instance {} has no private DNS name", instance.instance_id));
                    continue;
                }
            },
        };
        routes.push(Route {
            name: format!("{cluster_name}-{cidr}"),
            target_node,
            enable_node_addresses: false,
            target_node_addresses: Vec::new(),
            destination_cidr: cidr.to_owned(),
            blackhole,
        });
    }
    routes
}

impl Routes for Aws {
    fn list_routes(&self, cluster_name: &str) -> Result<Vec<Route>, Error> {
        let table = self.route_table()?;
        let mut ids: Vec<&str> =
            table.route_set.items.iter().filter_map(|route| route.instance_id.as_deref()).collect();
        ids.sort_unstable();
        ids.dedup();
        let every_state: Vec<&str> = ALIVE_STATES.iter().copied().chain(["terminated"]).collect();
        let instances = Ec2(&self.client)
            .instances_where("instance-id", &ids, &every_state)?
            .into_iter()
            .map(|instance| (instance.instance_id.clone(), instance))
            .collect();
        Ok(cluster_routes(cluster_name, &table, &instances))
    }

    fn create_route(&self, _cluster_name: &str, _name_hint: &str, route: &Route) -> Result<(), Error> {
        ipv4_only(route)?;
        let instance = self.instance_by_node_name(&route.target_node)?;
        let ec2 = Ec2(&self.client);
        // The instance forwards the pods' traffic, which is not addressed to it.
        ec2.disable_source_dest_check(&instance.instance_id)?;
        let table = self.route_table()?;
        let existing = table
            .route_set
            .items
            .iter()
            .find(|existing| existing.destination_cidr_block.as_deref() == Some(route.destination_cidr.as_str()));
        match existing {
            Some(existing)
                if existing.instance_id.as_deref() == Some(instance.instance_id.as_str())
                    && existing.state != "blackhole" =>
            {
                Ok(())
            }
            Some(_) => ec2.put_route(&table.route_table_id, &route.destination_cidr, &instance.instance_id, true),
            None => ec2.put_route(&table.route_table_id, &route.destination_cidr, &instance.instance_id, false),
        }
    }

    fn delete_route(&self, _cluster_name: &str, route: &Route) -> Result<(), Error> {
        ipv4_only(route)?;
        let table = self.route_table()?;
        absent_on(
            Ec2(&self.client).delete_route(&table.route_table_id, &route.destination_cidr),
            "InvalidRoute.NotFound",
        )
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ec2::{InstanceState, Placement, Route as Ec2Route};
    use crate::xml::Items;

    fn instance(id: &str, state: &str, name: &str) -> (String, Instance) {
        let instance = Instance {
            instance_id: id.into(),
            instance_type: "m5.large".into(),
            instance_state: InstanceState { name: state.into() },
            placement: Placement::default(),
            private_dns_name: Some(name.into()),
            dns_name: None,
            private_ip_address: None,
            ip_address: None,
            network_interface_set: Items::default(),
        };
        (id.to_owned(), instance)
    }

    fn route(cidr: &str, instance_id: Option<&str>, state: &str) -> Ec2Route {
        Ec2Route {
            destination_cidr_block: Some(cidr.into()),
            instance_id: instance_id.map(Into::into),
            state: state.into(),
        }
    }

    #[test]
    fn reports_instance_routes_and_blackholes() {
        let table = RouteTable {
            route_table_id: "rtb-1".into(),
            route_set: Items {
                items: vec![
                    route("10.0.0.0/16", None, "active"),
                    route("100.64.1.0/24", Some("i-1"), "active"),
                    route("100.64.2.0/24", Some("i-2"), "active"),
                    route("100.64.3.0/24", Some("i-3"), "active"),
                    route("100.64.4.0/24", Some("i-1"), "blackhole"),
                    route("100.64.5.0/24", None, "blackhole"),
                ],
            },
        };
        let instances = BTreeMap::from([instance("i-1", "running", "node-1"), instance("i-2", "terminated", "node-2")]);
        let routes = cluster_routes("prod", &table, &instances);
        let summary: Vec<(&str, &str, &str, bool)> = routes
            .iter()
            .map(|route| {
                (route.name.as_str(), route.destination_cidr.as_str(), route.target_node.as_str(), route.blackhole)
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("prod-100.64.1.0/24", "100.64.1.0/24", "node-1", false),
                ("prod-100.64.2.0/24", "100.64.2.0/24", "", true),
                ("prod-100.64.3.0/24", "100.64.3.0/24", "", true),
                ("prod-100.64.4.0/24", "100.64.4.0/24", "node-1", true),
                ("prod-100.64.5.0/24", "100.64.5.0/24", "", true),
            ]
        );
    }

    #[test]
    fn refuses_ipv6() {
        let route = Route {
            name: String::new(),
            target_node: "node-1".into(),
            enable_node_addresses: false,
            target_node_addresses: Vec::new(),
            destination_cidr: "fd00::/64".into(),
            blackhole: false,
        };
        assert!(ipv4_only(&route).is_err());
    }
}
