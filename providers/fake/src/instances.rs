//! Instances, both APIs, and zones, answered from the configured machines.

use wasm_ccm_sdk::types::{InstanceMetadata, InstanceState, KeyValue, Node, NodeAddress, NodeAddressType, Zone};
use wasm_ccm_sdk::{Error, Instances, InstancesV2, NodeSet, Zones};

use crate::Fake;
use crate::config::{Instance, MachineState};

const PROVIDER_ID_PREFIX: &str = "fake://";

impl Fake {
    fn by_name(&self, name: &str) -> Result<&Instance, Error> {
        self.by_name.get(name).map(|&index| &self.config.instances[index]).ok_or(Error::InstanceNotFound)
    }

    fn by_provider_id(&self, provider_id: &str) -> Result<&Instance, Error> {
        let id = provider_id
            .strip_prefix(PROVIDER_ID_PREFIX)
            .ok_or_else(|| Error::other(format_args!("provider ID {provider_id:?} is not of the form fake://<id>")))?;
        self.by_id.get(id).map(|&index| &self.config.instances[index]).ok_or(Error::InstanceNotFound)
    }

    /// The machine behind `node`: by provider ID once it has one, else by name.
    fn by_node(&self, node: &Node) -> Result<&Instance, Error> {
        match node.provider_id.as_deref() {
            Some(provider_id) if !provider_id.is_empty() => self.by_provider_id(provider_id),
            _ => self.by_name(&node.name),
        }
    }

    /// `answer` of the machine behind each node of `nodes`, in order, found
    /// as [`Fake::by_node`] finds it.
    fn each_node<T>(
        &self,
        nodes: &NodeSet<'_>,
        answer: impl Fn(Result<&Instance, Error>) -> Result<T, Error>,
    ) -> Vec<Result<T, Error>> {
        let (names, provider_ids) = (nodes.names(), nodes.provider_ids());
        names
            .iter()
            .zip(provider_ids.iter())
            .map(|(name, provider_id)| {
                answer(if provider_id.is_empty() { self.by_name(name) } else { self.by_provider_id(provider_id) })
            })
            .collect()
    }

    /// Whether a running machine serves the Node `name`.
    pub(crate) fn is_running(&self, name: &str) -> bool {
        self.by_name(name).is_ok_and(|instance| instance.state == MachineState::Running)
    }
}

/// What InstancesV2 says of `instance`.
fn metadata(instance: &Instance) -> Result<InstanceMetadata, Error> {
    Ok(InstanceMetadata {
        provider_id: format!("{PROVIDER_ID_PREFIX}{}", instance.id),
        instance_type: instance.instance_type.clone(),
        node_addresses: addresses(instance)?,
        zone: instance.zone.clone(),
        region: instance.region.clone(),
        additional_labels: instance
            .labels
            .iter()
            .map(|(key, value)| KeyValue { key: key.clone(), value: value.clone() })
            .collect(),
    })
}

fn addresses(instance: &Instance) -> Result<Vec<NodeAddress>, Error> {
    instance
        .addresses
        .iter()
        .map(|address| {
            let address_type = match address.address_type.as_str() {
                "Hostname" => NodeAddressType::Hostname,
                "InternalIP" => NodeAddressType::InternalIp,
                "ExternalIP" => NodeAddressType::ExternalIp,
                "InternalDNS" => NodeAddressType::InternalDns,
                "ExternalDNS" => NodeAddressType::ExternalDns,
                other => {
                    return Err(Error::other(format_args!(
                        "instance {}: unknown address type {other:?}",
                        instance.name
                    )));
                }
            };
            Ok(NodeAddress { address_type, address: address.address.clone() })
        })
        .collect()
}

/// `InstanceExists` of a machine: a terminated or unknown one is gone.
fn exists(instance: Result<&Instance, Error>) -> Result<bool, Error> {
    match instance {
        Ok(instance) => Ok(instance.state != MachineState::Terminated),
        Err(Error::InstanceNotFound) => Ok(false),
        Err(err) => Err(err),
    }
}

/// `InstanceShutdown` of a machine.
fn shut_down(instance: Result<&Instance, Error>) -> Result<bool, Error> {
    Ok(instance?.state == MachineState::Stopped)
}

fn zone(instance: &Instance) -> Zone {
    Zone { failure_domain: instance.zone.clone(), region: instance.region.clone() }
}

impl InstancesV2 for Fake {
    fn instance_exists(&self, node: &Node) -> Result<bool, Error> {
        self.config.inject("instances-v2.exists")?;
        exists(self.by_node(node))
    }

    fn instance_shutdown(&self, node: &Node) -> Result<bool, Error> {
        self.config.inject("instances-v2.shutdown")?;
        shut_down(self.by_node(node))
    }

    fn max_batch(&self) -> u32 {
        self.config.max_batch
    }

    fn instance_states(&self, nodes: &NodeSet<'_>) -> Result<Vec<Result<InstanceState, Error>>, Error> {
        self.config.inject("instances-batch.states")?;
        Ok(self.each_node(nodes, |instance| match instance {
            Ok(instance) => {
                let exists = exists(Ok(instance))?;
                Ok(InstanceState { exists, shut_down: exists && shut_down(Ok(instance))? })
            }
            Err(Error::InstanceNotFound) => Ok(InstanceState { exists: false, shut_down: false }),
            Err(err) => Err(err),
        }))
    }

    fn instance_metadata(&self, node: &Node) -> Result<InstanceMetadata, Error> {
        self.config.inject("instances-v2.metadata")?;
        metadata(self.by_node(node)?)
    }

    fn batch_metadata(&self, nodes: &NodeSet<'_>) -> Result<Vec<Result<InstanceMetadata, Error>>, Error> {
        self.config.inject("metadata-batch.metadata")?;
        Ok(self.each_node(nodes, |instance| metadata(instance?)))
    }
}

impl Instances for Fake {
    fn node_addresses(&self, node_name: &str) -> Result<Vec<NodeAddress>, Error> {
        self.config.inject("instances.node-addresses")?;
        addresses(self.by_name(node_name)?)
    }

    fn node_addresses_by_provider_id(&self, provider_id: &str) -> Result<Vec<NodeAddress>, Error> {
        self.config.inject("instances.node-addresses-by-provider-id")?;
        addresses(self.by_provider_id(provider_id)?)
    }

    fn instance_id(&self, node_name: &str) -> Result<String, Error> {
        self.config.inject("instances.instance-id")?;
        Ok(self.by_name(node_name)?.id.clone())
    }

    fn instance_type(&self, node_name: &str) -> Result<String, Error> {
        self.config.inject("instances.instance-type")?;
        Ok(self.by_name(node_name)?.instance_type.clone())
    }

    fn instance_type_by_provider_id(&self, provider_id: &str) -> Result<String, Error> {
        self.config.inject("instances.instance-type-by-provider-id")?;
        Ok(self.by_provider_id(provider_id)?.instance_type.clone())
    }

    fn current_node_name(&self, hostname: &str) -> Result<String, Error> {
        self.config.inject("instances.current-node-name")?;
        Ok(hostname.to_owned())
    }

    fn instance_exists_by_provider_id(&self, provider_id: &str) -> Result<bool, Error> {
        self.config.inject("instances.instance-exists-by-provider-id")?;
        match self.by_provider_id(provider_id) {
            Ok(instance) => Ok(instance.state != MachineState::Terminated),
            Err(Error::InstanceNotFound) => Ok(false),
            Err(err) => Err(err),
        }
    }

    fn instance_shutdown_by_provider_id(&self, provider_id: &str) -> Result<bool, Error> {
        self.config.inject("instances.instance-shutdown-by-provider-id")?;
        Ok(self.by_provider_id(provider_id)?.state == MachineState::Stopped)
    }
}

impl Zones for Fake {
    fn get_zone(&self) -> Result<Zone, Error> {
        self.config.inject("zones.get-zone")?;
        let configured = self.config.zone.as_ref().ok_or_else(|| Error::other("no zone is configured"))?;
        Ok(Zone { failure_domain: configured.failure_domain.clone(), region: configured.region.clone() })
    }

    fn get_zone_by_provider_id(&self, provider_id: &str) -> Result<Zone, Error> {
        self.config.inject("zones.get-zone-by-provider-id")?;
        Ok(zone(self.by_provider_id(provider_id)?))
    }

    fn get_zone_by_node_name(&self, node_name: &str) -> Result<Zone, Error> {
        self.config.inject("zones.get-zone-by-node-name")?;
        Ok(zone(self.by_name(node_name)?))
    }
}
