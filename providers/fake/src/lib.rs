//! A fake cloud provider for wasm-ccm's tests and local demo.
//!
//! Every part of `cloudprovider.Interface` is implemented: instances come from
//! the configuration; load balancers take addresses from a pool; load
//! balancers and routes live in the fake cloud, a small object store reached
//! over HTTP (each call runs in a fresh instance, so nothing survives in
//! memory), or, with `statelessLoadBalancers`, load balancers are derived from
//! the Service alone. Errors and latency can be injected per function.

#![allow(
    clippy::expect_used,
    reason = "the fake cloud's own invariants (its default pool, indexes within its pool): a broken one traps the call, which the host reports"
)]

mod cloud;
mod config;
mod instances;
mod load_balancer;
mod pool;
mod routes;

use std::collections::BTreeMap;

use wasm_ccm_sdk::{Clusters, Error, Instances, InstancesV2, LoadBalancer, Provider, Routes, Zones};

use crate::cloud::Cloud;
use crate::config::Config;

/// The fake provider, as built for one call.
pub struct Fake {
    config: Config,
    cluster_name: String,
    cloud: Option<Cloud>,
    /// The configured machines' indexes, by name and by ID: a lifecycle
    /// batch looks thousands up. Ordered maps draw no randomness, which would
    /// make the snapshot differ between hosts of different seeds.
    by_name: BTreeMap<String, usize>,
    by_id: BTreeMap<String, usize>,
}

impl Fake {
    fn enabled(&self, part: &str) -> bool {
        !self.config.disabled_parts.iter().any(|disabled| disabled == part)
    }

    /// The fake cloud, for the parts that keep state there.
    fn cloud(&self) -> &Cloud {
        self.cloud.as_ref().expect("parts needing the cloud are disabled without one")
    }
}

impl Provider for Fake {
    const NAME: &'static str = "fake";

    fn new(config: &[u8], cluster_name: &str) -> Result<Self, Error> {
        let config = Config::parse(config)?;
        config.inject("provider.initialize")?;
        let cloud = config.cloud.as_deref().map(Cloud::new);
        let index = |key: fn(&config::Instance) -> &String| {
            // The first machine of a name or ID wins, as a scan would find it.
            let mut index = BTreeMap::new();
            for (position, instance) in config.instances.iter().enumerate().rev() {
                index.insert(key(instance).clone(), position);
            }
            index
        };
        let (by_name, by_id) = (index(|instance| &instance.name), index(|instance| &instance.id));
        Ok(Fake { config, cluster_name: cluster_name.to_owned(), cloud, by_name, by_id })
    }

    fn has_cluster_id(&self) -> bool {
        self.config.has_cluster_id
    }

    fn load_balancer(&self) -> Option<&dyn LoadBalancer> {
        let stored = self.cloud.is_some() || self.config.stateless_load_balancers;
        (self.enabled("load-balancer") && stored).then_some(self as _)
    }

    fn instances(&self) -> Option<&dyn Instances> {
        self.enabled("instances").then_some(self as _)
    }

    fn instances_v2(&self) -> Option<&dyn InstancesV2> {
        self.enabled("instances-v2").then_some(self as _)
    }

    fn zones(&self) -> Option<&dyn Zones> {
        self.enabled("zones").then_some(self as _)
    }

    fn clusters(&self) -> Option<&dyn Clusters> {
        self.enabled("clusters").then_some(self as _)
    }

    fn routes(&self) -> Option<&dyn Routes> {
        (self.enabled("routes") && self.cloud.is_some()).then_some(self as _)
    }
}

impl Clusters for Fake {
    fn list_clusters(&self) -> Result<Vec<String>, Error> {
        self.config.inject("clusters.list-clusters")?;
        Ok(self.config.clusters.clone().unwrap_or_else(|| vec![self.cluster_name.clone()]))
    }

    fn master(&self, cluster_name: &str) -> Result<String, Error> {
        self.config.inject("clusters.master")?;
        self.config
            .master
            .clone()
            .ok_or_else(|| Error::other(format_args!("no master is configured for cluster {cluster_name}")))
    }
}

wasm_ccm_sdk::export_provider!(Fake);
