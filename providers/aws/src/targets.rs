//! A target group's targets made to match the Nodes: each Node's running
//! instance, on the target group's port.

use std::collections::BTreeSet;

use wasm_ccm_sdk::{Error, NodeSet, log};

use crate::ec2::Ec2;
use crate::elbv2::{Elb, Target, TargetGroup, TargetHealthDescription};
use crate::provider_id;

/// The IDs of the running instances behind `nodes`: by provider ID, or by
/// private DNS name (the Node's name) for Nodes without one. Nodes whose
/// instance is not running, or not found, have none.
pub fn running_instances(ec2: &Ec2<'_>, nodes: &NodeSet<'_>) -> Result<BTreeSet<String>, Error> {
    let mut ids = Vec::new();
    let mut names = Vec::new();
    for (name, id) in nodes.names().iter().zip(nodes.provider_ids().iter()) {
        match id {
            "" => names.push(name),
            id => match provider_id::instance_id(id) {
                Ok(instance_id) => ids.push(instance_id),
                Err(err) => log::warn(&format!("node {name} is left out of load balancers: {err:?}")),
            },
        }
    }
    let running = ["running"];
    let mut instances = ec2.instances_where("instance-id", &ids, &running)?;
    instances.extend(ec2.instances_where("private-dns-name", &names, &running)?);
    Ok(instances.into_iter().map(|instance| instance.instance_id).collect())
}

/// The targets to register and to deregister so that exactly `wanted` are
/// registered. Targets being deregistered (`draining`) count as gone.
pub fn diff(wanted: &BTreeSet<Target>, registered: &[TargetHealthDescription]) -> (Vec<Target>, Vec<Target>) {
    let current: BTreeSet<Target> = registered
        .iter()
        .filter(|description| description.target_health.as_ref().is_none_or(|health| health.state != "draining"))
        .map(|description| description.target.clone())
        .collect();
    (wanted.difference(&current).cloned().collect(), current.difference(wanted).cloned().collect())
}

/// Registers and deregisters targets of `group` so that exactly `instances`
/// are registered on its port.
pub fn sync(elb: &Elb<'_>, group: &TargetGroup, instances: &BTreeSet<String>) -> Result<(), Error> {
    let wanted: BTreeSet<Target> = instances.iter().map(|id| Target { id: id.clone(), port: group.port }).collect();
    let (register, deregister) = diff(&wanted, &elb.targets(&group.target_group_arn)?);
    if !register.is_empty() {
        elb.set_registered(&group.target_group_arn, &register, true)?;
    }
    if !deregister.is_empty() {
        elb.set_registered(&group.target_group_arn, &deregister, false)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elbv2::TargetHealth;

    fn target(id: &str, port: u16) -> Target {
        Target { id: id.into(), port }
    }

    fn registered(id: &str, port: u16, state: &str) -> TargetHealthDescription {
        TargetHealthDescription { target: target(id, port), target_health: Some(TargetHealth { state: state.into() }) }
    }

    #[test]
    fn registers_the_missing_and_deregisters_the_rest() {
        let wanted = BTreeSet::from([target("i-1", 30080), target("i-2", 30080)]);
        let current = [registered("i-2", 30080, "healthy"), registered("i-3", 30080, "unhealthy")];
        assert_eq!(diff(&wanted, &current), (vec![target("i-1", 30080)], vec![target("i-3", 30080)]));
    }

    #[test]
    fn nothing_to_do_when_they_match() {
        let wanted = BTreeSet::from([target("i-1", 30080)]);
        assert_eq!(diff(&wanted, &[registered("i-1", 30080, "initial")]), (vec![], vec![]));
        assert_eq!(diff(&BTreeSet::new(), &[]), (vec![], vec![]));
    }

    #[test]
    fn draining_targets_are_gone_and_other_ports_are_other_targets() {
        let wanted = BTreeSet::from([target("i-1", 30080)]);
        let current = [registered("i-1", 30080, "draining"), registered("i-1", 30081, "healthy")];
        assert_eq!(diff(&wanted, &current), (vec![target("i-1", 30080)], vec![target("i-1", 30081)]));
        let no_health = TargetHealthDescription { target: target("i-1", 30080), target_health: None };
        assert_eq!(diff(&wanted, &[no_health]), (vec![], vec![]));
    }
}
