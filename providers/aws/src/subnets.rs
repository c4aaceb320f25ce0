//! The subnets a load balancer goes in: the configured ones, or one per
//! availability zone among those tagged for the cluster.

use std::collections::BTreeMap;

use wasm_ccm_sdk::Error;

use crate::Aws;
use crate::ec2::{Ec2, Subnet};
use crate::naming;

/// Marks subnets preferred for internet-facing load balancers.
const ELB_ROLE_TAG: &str = "kubernetes.io/role/elb";
/// Marks subnets preferred for internal load balancers.
const INTERNAL_ELB_ROLE_TAG: &str = "kubernetes.io/role/internal-elb";

/// One subnet per availability zone, sorted by zone: in each zone the
/// subnet with the role tag of the scheme if any, then the first by ID.
pub fn one_per_zone(subnets: &[Subnet], internal: bool) -> Vec<&Subnet> {
    let role = if internal { INTERNAL_ELB_ROLE_TAG } else { ELB_ROLE_TAG };
    let has_role = |subnet: &Subnet| subnet.tag_set.items.iter().any(|tag| tag.key == role);
    let mut by_zone: BTreeMap<&str, &Subnet> = BTreeMap::new();
    for subnet in subnets {
        let better = |chosen: &&Subnet| {
            (!has_role(subnet), subnet.subnet_id.as_str()) < (!has_role(chosen), chosen.subnet_id.as_str())
        };
        match by_zone.get(subnet.availability_zone.as_str()) {
            Some(chosen) if !better(chosen) => {}
            _ => {
                by_zone.insert(&subnet.availability_zone, subnet);
            }
        }
    }
    by_zone.into_values().collect()
}

impl Aws {
    /// The subnet IDs for a new load balancer.
    ///
    /// # Errors
    /// When none are configured and none are tagged for the cluster.
    pub(crate) fn load_balancer_subnets(&self, internal: bool) -> Result<Vec<String>, Error> {
        if let Some(configured) = &self.config.subnets {
            return Ok(configured.clone());
        }
        let tag = naming::cluster_tag(&self.cluster_name);
        let tagged = Ec2(&self.client).subnets_tagged(&tag, self.config.vpc_id.as_deref())?;
        let chosen: Vec<String> =
            one_per_zone(&tagged, internal).into_iter().map(|subnet| subnet.subnet_id.clone()).collect();
        if chosen.is_empty() {
            let vpc = self.config.vpc_id.as_deref().map(|vpc| format!(" in {vpc}")).unwrap_or_default();
            return Err(Error::other(format_args!(
                "no subnets{vpc} are tagged {tag} (owned or shared); tag one per availability zone or configure subnets"
            )));
        }
        Ok(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ec2::Tag;
    use crate::xml::Items;

    fn subnet(id: &str, zone: &str, tags: &[&str]) -> Subnet {
        Subnet {
            subnet_id: id.into(),
            availability_zone: zone.into(),
            tag_set: Items { items: tags.iter().map(|key| Tag { key: (*key).into() }).collect() },
        }
    }

    fn ids(subnets: Vec<&Subnet>) -> Vec<&str> {
        subnets.into_iter().map(|subnet| subnet.subnet_id.as_str()).collect()
    }

    #[test]
    fn picks_one_per_zone_by_id() {
        let subnets = [
            subnet("subnet-b", "eu-west-1b", &[]),
            subnet("subnet-c", "eu-west-1a", &[]),
            subnet("subnet-a", "eu-west-1a", &[]),
        ];
        assert_eq!(ids(one_per_zone(&subnets, false)), ["subnet-a", "subnet-b"]);
        assert!(one_per_zone(&[], false).is_empty());
    }

    #[test]
    fn prefers_the_role_of_the_scheme() {
        let subnets = [
            subnet("subnet-a", "eu-west-1a", &[]),
            subnet("subnet-b", "eu-west-1a", &[ELB_ROLE_TAG]),
            subnet("subnet-c", "eu-west-1a", &[INTERNAL_ELB_ROLE_TAG]),
        ];
        assert_eq!(ids(one_per_zone(&subnets, false)), ["subnet-b"]);
        assert_eq!(ids(one_per_zone(&subnets, true)), ["subnet-c"]);
    }
}
