//! The node lifecycle's and the node status refresh's questions about many
//! nodes at once, answered with a few DescribeInstances requests: the cluster's tagged instances a page of
//! a thousand at a time when the batch is large, by instance ID when it is
//! small, and by ID or private DNS name for whatever that did not find.

use std::collections::HashMap;

use wasm_ccm_sdk::{Error, NodeSet};

use crate::Aws;
use crate::ec2::{ALIVE_STATES, Ec2, FILTER_VALUES, Instance};
use crate::{naming, provider_id};

/// The most nodes a batch holds. A batch of more nodes than an ID filter
/// takes costs one request per thousand of the cluster's instances however
/// many nodes it holds, so the fewer batches the better.
pub(crate) const MAX_BATCH: u32 = 5000;

/// A node's instance, or `None` when EC2 has none for it.
pub(crate) type Found = Result<Option<Instance>, Error>;

impl Aws {
    /// The instance behind each node of `nodes`, in the set's order: by
    /// provider ID once a node has one (whatever its state), else by its
    /// name (not terminated).
    pub(crate) fn instances_of_set(&self, nodes: &NodeSet<'_>) -> Result<Vec<Found>, Error> {
        let (names, provider_ids) = (nodes.names(), nodes.provider_ids());
        let ids: Vec<Result<Option<&str>, Error>> = provider_ids
            .iter()
            .map(|id| if id.is_empty() { Ok(None) } else { provider_id::instance_id(id).map(Some) })
            .collect();
        let wanted: Vec<&str> = ids.iter().filter_map(|id| id.as_ref().ok().copied().flatten()).collect();
        let ec2 = Ec2(&self.client);
        let mut by_id: HashMap<String, Instance> = HashMap::new();
        if wanted.len() > FILTER_VALUES {
            let tagged = ec2.instances_tagged(&naming::cluster_tag(&self.cluster_name))?;
            by_id.extend(tagged.into_iter().map(|instance| (instance.instance_id.clone(), instance)));
        }
        let missing: Vec<&str> = wanted.iter().copied().filter(|id| !by_id.contains_key(*id)).collect();
        if !missing.is_empty() {
            let found = ec2.instances_where("instance-id", &missing, &[])?;
            by_id.extend(found.into_iter().map(|instance| (instance.instance_id.clone(), instance)));
        }
        let unnamed: Vec<&str> =
            names.iter().zip(&ids).filter(|(_, id)| matches!(id, Ok(None))).map(|(name, _)| name).collect();
        let mut by_name: HashMap<String, Vec<Instance>> = HashMap::new();
        if !unnamed.is_empty() {
            for instance in ec2.instances_where("private-dns-name", &unnamed, &ALIVE_STATES)? {
                let name = instance.node_name().unwrap_or_default().to_owned();
                by_name.entry(name).or_default().push(instance);
            }
        }
        Ok(names
            .iter()
            .zip(ids)
            .map(|(name, id)| match id? {
                Some(id) => Ok(by_id.get(id).cloned()),
                None => match by_name.get(name).map(Vec::as_slice) {
                    None | Some([]) => Ok(None),
                    Some([instance]) => Ok(Some(instance.clone())),
                    Some(many) => {
                        Err(Error::other(format_args!("{} instances have the private DNS name {name}", many.len())))
                    }
                },
            })
            .collect())
    }
}
