//! Network load balancers for Services: one per Service, a listener and a
//! target group per port, the Nodes' instances as targets.

use std::collections::{BTreeMap, BTreeSet};

use wasm_ccm_sdk::types::{LoadBalancerIngress, LoadBalancerStatus, Service};
use wasm_ccm_sdk::{Error, LoadBalancer, NodeSet, default_load_balancer_name, log};

use crate::Aws;
use crate::ec2::Ec2;
use crate::elbv2::{self, Elb, Listener, TargetGroup};
use crate::naming;
use crate::plan::{self, Plan};
use crate::targets;

fn status(load_balancer: &elbv2::LoadBalancer) -> LoadBalancerStatus {
    LoadBalancerStatus {
        ingress: vec![LoadBalancerIngress {
            ip: None,
            hostname: Some(load_balancer.dns_name.clone()),
            ip_mode: None,
            ports: Vec::new(),
        }],
    }
}

impl Aws {
    fn elb(&self) -> Elb<'_> {
        Elb(&self.client)
    }

    /// The listeners of a load balancer and the target groups they forward
    /// to, by ARN.
    fn listeners_and_groups(
        &self,
        load_balancer: &elbv2::LoadBalancer,
    ) -> Result<(Vec<Listener>, BTreeMap<String, TargetGroup>), Error> {
        let listeners = self.elb().listeners(&load_balancer.load_balancer_arn)?;
        let arns: BTreeSet<&str> = listeners.iter().filter_map(Listener::target_group_arn).collect();
        let groups = self.elb().target_groups(&arns.into_iter().collect::<Vec<_>>())?;
        Ok((listeners, groups.into_iter().map(|group| (group.target_group_arn.clone(), group)).collect()))
    }

    /// Deletes a load balancer, its listeners and their target groups.
    fn delete_load_balancer(&self, load_balancer: &elbv2::LoadBalancer) -> Result<(), Error> {
        let (listeners, groups) = self.listeners_and_groups(load_balancer)?;
        for listener in &listeners {
            self.elb().delete_listener(&listener.listener_arn)?;
        }
        self.elb().delete_load_balancer(&load_balancer.load_balancer_arn)?;
        for arn in groups.keys() {
            self.elb().delete_target_group(arn)?;
        }
        Ok(())
    }

    /// Deletes the Service's target groups that no load balancer uses any
    /// more, such as those left when a load balancer was deleted by hand:
    /// the groups with the Service's name prefix and tags.
    fn delete_leftover_target_groups(&self, service: &Service) -> Result<(), Error> {
        let prefix = naming::target_group_prefix(&service.namespace, &service.name);
        let groups = self.elb().all_target_groups()?;
        let candidates: Vec<&str> = groups
            .iter()
            .filter(|group| group.target_group_name.starts_with(&prefix))
            .map(|group| group.target_group_arn.as_str())
            .collect();
        if candidates.is_empty() {
            return Ok(());
        }
        let wanted = naming::tags(&self.cluster_name, service);
        for (arn, tags) in self.elb().tags(&candidates)? {
            if wanted.iter().all(|(key, value)| tags.get(key) == Some(value)) {
                self.elb().delete_target_group(&arn)?;
            }
        }
        Ok(())
    }

    /// The load balancer `name` with the plan's scheme: the existing one,
    /// or a new one (replacing one of the other scheme, which AWS cannot
    /// change).
    fn ensure_load_balancer_itself(
        &self,
        name: &str,
        service: &Service,
        plan: &Plan,
    ) -> Result<elbv2::LoadBalancer, Error> {
        match self.elb().load_balancer(name)? {
            Some(existing) if existing.scheme == plan.scheme => return Ok(existing),
            Some(existing) => {
                log::info(&format!(
                    "replacing the {} load balancer {name} of {} with an {} one",
                    existing.scheme,
                    naming::service_name(service),
                    plan.scheme
                ));
                self.delete_load_balancer(&existing)?;
            }
            None => {}
        }
        let subnets = self.load_balancer_subnets(plan.scheme == "internal")?;
        let tags = naming::tags(&self.cluster_name, service);
        self.elb().create_load_balancer(name, plan.scheme, &subnets, &tags)
    }
}

impl LoadBalancer for Aws {
    fn get_load_balancer(&self, _cluster_name: &str, service: &Service) -> Result<Option<LoadBalancerStatus>, Error> {
        if plan::is_external(service) {
            return Ok(None);
        }
        let found = self.elb().load_balancer(&default_load_balancer_name(service))?;
        Ok(found.as_ref().map(status))
    }

    fn ensure_load_balancer(
        &self,
        _cluster_name: &str,
        service: &Service,
        nodes: &NodeSet<'_>,
    ) -> Result<LoadBalancerStatus, Error> {
        if plan::is_external(service) {
            return Err(Error::ImplementedElsewhere);
        }
        let plan = Plan::new(&self.cluster_name, service)?;
        let name = default_load_balancer_name(service);
        let load_balancer = self.ensure_load_balancer_itself(&name, service, &plan)?;
        let vpc_id = Some(load_balancer.vpc_id.as_str())
            .filter(|vpc| !vpc.is_empty())
            .or(self.config.vpc_id.as_deref())
            .ok_or_else(|| Error::other(format_args!("load balancer {name} has no VPC; configure vpcId")))?;
        let instances = targets::running_instances(&Ec2(&self.client), nodes)?;
        let tags = naming::tags(&self.cluster_name, service);
        let (listeners, groups) = self.listeners_and_groups(&load_balancer)?;

        // Listeners of ports the Service no longer has go first: a new
        // listener may need their port.
        let (kept, stale): (Vec<&Listener>, Vec<&Listener>) = listeners.iter().partition(|listener| {
            plan.ports.iter().any(|port| port.port == listener.port && port.protocol == listener.protocol)
        });
        for listener in stale {
            self.elb().delete_listener(&listener.listener_arn)?;
        }
        let mut used = BTreeSet::new();
        for port in &plan.ports {
            let listener =
                kept.iter().find(|listener| listener.port == port.port && listener.protocol == port.protocol);
            let current = listener.and_then(|listener| listener.target_group_arn()).and_then(|arn| groups.get(arn));
            let group = match current.filter(|group| group.target_group_name == port.target_group_name) {
                Some(group) => group.clone(),
                None => self.elb().create_target_group(&port.target_group(vpc_id), &tags)?,
            };
            targets::sync(&self.elb(), &group, &instances)?;
            match listener {
                Some(listener) if listener.target_group_arn() == Some(group.target_group_arn.as_str()) => {}
                Some(listener) => self.elb().forward_listener(&listener.listener_arn, &group.target_group_arn)?,
                None => self.elb().create_listener(
                    &load_balancer.load_balancer_arn,
                    port.protocol,
                    port.port,
                    &group.target_group_arn,
                    &tags,
                )?,
            }
            used.insert(group.target_group_arn);
        }
        for arn in groups.keys().filter(|arn| !used.contains(*arn)) {
            self.elb().delete_target_group(arn)?;
        }
        Ok(status(&load_balancer))
    }

    fn update_load_balancer(&self, _cluster_name: &str, service: &Service, nodes: &NodeSet<'_>) -> Result<(), Error> {
        if plan::is_external(service) {
            return Err(Error::ImplementedElsewhere);
        }
        let name = default_load_balancer_name(service);
        let Some(load_balancer) = self.elb().load_balancer(&name)? else {
            return Err(Error::other(format_args!(
                "load balancer {name} of {} does not exist",
                naming::service_name(service)
            )));
        };
        let instances = targets::running_instances(&Ec2(&self.client), nodes)?;
        let (_listeners, groups) = self.listeners_and_groups(&load_balancer)?;
        for group in groups.values() {
            targets::sync(&self.elb(), group, &instances)?;
        }
        Ok(())
    }

    fn ensure_load_balancer_deleted(&self, _cluster_name: &str, service: &Service) -> Result<(), Error> {
        if plan::is_external(service) {
            return Err(Error::ImplementedElsewhere);
        }
        if let Some(load_balancer) = self.elb().load_balancer(&default_load_balancer_name(service))? {
            self.delete_load_balancer(&load_balancer)?;
        }
        self.delete_leftover_target_groups(service)
    }
}
