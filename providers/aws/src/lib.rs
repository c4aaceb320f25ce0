//! The AWS provider: EC2 instances for Nodes, network load balancers for
//! Services, and VPC routes for pod CIDRs.
//!
//! It speaks the EC2 and Elastic Load Balancing v2 Query APIs through the
//! host's HTTP import, and the host signs every request with Signature
//! Version 4 from credentials the provider only names, so the secret key
//! never enters the provider. Names, tags and annotations follow
//! `kubernetes/cloud-provider-aws`.

mod api;
mod batch;
mod config;
mod ec2;
mod elbv2;
mod error_body;
mod instances;
mod load_balancer;
mod naming;
mod plan;
mod provider_id;
mod query;
mod routes;
mod subnets;
mod targets;
#[cfg(test)]
mod testing;
mod xml;

use wasm_ccm_sdk::{Error, Instances, InstancesV2, LoadBalancer, Provider, Routes, Zones};

use crate::api::Client;
use crate::config::Config;

/// The AWS provider, as built for one call.
pub struct Aws {
    config: Config,
    cluster_name: String,
    client: Client,
}

impl Provider for Aws {
    const NAME: &'static str = "aws";

    fn new(config: &[u8], cluster_name: &str) -> Result<Self, Error> {
        let config = Config::parse(config)?;
        let client = Client::new(&config);
        Ok(Aws { config, cluster_name: cluster_name.to_owned(), client })
    }

    fn has_cluster_id(&self) -> bool {
        !self.cluster_name.is_empty()
    }

    fn load_balancer(&self) -> Option<&dyn LoadBalancer> {
        Some(self)
    }

    fn instances(&self) -> Option<&dyn Instances> {
        Some(self)
    }

    fn instances_v2(&self) -> Option<&dyn InstancesV2> {
        Some(self)
    }

    fn zones(&self) -> Option<&dyn Zones> {
        Some(self)
    }

    fn routes(&self) -> Option<&dyn Routes> {
        Some(self)
    }
}

wasm_ccm_sdk::export_provider!(Aws);
