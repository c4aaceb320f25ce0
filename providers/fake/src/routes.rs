//! Routes, kept in the fake cloud under `<cluster>-<name hint>`.

use serde::{Deserialize, Serialize};
use wasm_ccm_sdk::types::Route;
use wasm_ccm_sdk::{Error, Routes};

use crate::Fake;
use crate::cloud::{Precondition, Stored};

const ROUTES: &str = "routes";

/// A route as the fake cloud stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    cluster: String,
    target_node: String,
    destination_cidr: String,
}

impl Routes for Fake {
    fn list_routes(&self, cluster_name: &str) -> Result<Vec<Route>, Error> {
        self.config.inject("routes.list-routes")?;
        let stored: Vec<Stored<Record>> = self.cloud().list(ROUTES)?;
        Ok(stored
            .into_iter()
            .filter(|route| route.value.cluster == cluster_name)
            .map(|route| Route {
                blackhole: !self.is_running(&route.value.target_node),
                name: route.key,
                target_node: route.value.target_node,
                enable_node_addresses: false,
                target_node_addresses: Vec::new(),
                destination_cidr: route.value.destination_cidr,
            })
            .collect())
    }

    fn create_route(&self, cluster_name: &str, name_hint: &str, route: &Route) -> Result<(), Error> {
        self.config.inject("routes.create-route")?;
        if !self.is_running(&route.target_node) {
            return Err(Error::InstanceNotFound);
        }
        let record = Record {
            cluster: cluster_name.to_owned(),
            target_node: route.target_node.clone(),
            destination_cidr: route.destination_cidr.clone(),
        };
        self.cloud().put(ROUTES, &format!("{cluster_name}-{name_hint}"), &record, Precondition::None)?;
        Ok(())
    }

    fn delete_route(&self, _cluster_name: &str, route: &Route) -> Result<(), Error> {
        self.config.inject("routes.delete-route")?;
        self.cloud().delete(ROUTES, &route.name)?;
        Ok(())
    }
}
