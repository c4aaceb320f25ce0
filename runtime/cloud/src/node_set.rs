//! The nodes a load balancer targets: one snapshot per change of the
//! cluster's nodes, shared by every load balancer's calls, and what a
//! provider reads of it computed once, on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use k8s_openapi::api::core::v1::Node;

/// Many strings in one buffer, as the contract passes them: string `i`
/// ends at byte `ends[i]` of `text` and starts where the one before it
/// ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackedStrings {
    /// The strings, one after the other.
    pub text: String,
    /// Where each string ends in `text`, in bytes.
    pub ends: Vec<u32>,
}

impl PackedStrings {
    /// The strings, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let end = end as usize;
            let string = self.text.get(start..end).unwrap_or_default();
            start = end;
            string
        })
    }

    /// How many strings it holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl<'a> FromIterator<&'a str> for PackedStrings {
    /// Packs the strings.
    ///
    /// # Panics
    /// When they add up to 4 GiB or more, which no Kubernetes object can hold.
    fn from_iter<I: IntoIterator<Item = &'a str>>(strings: I) -> Self {
        let mut packed = PackedStrings::default();
        for string in strings {
            packed.text.push_str(string);
            #[expect(clippy::expect_used, reason = "no Kubernetes object holds 4 GiB of strings")]
            packed.ends.push(u32::try_from(packed.text.len()).expect("less than 4 GiB of strings"));
        }
        packed
    }
}

/// A node by its name and provider ID: what a provider knows of a node that
/// left a load balancer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeRef {
    /// `metadata.name`.
    pub name: String,
    /// `spec.providerID`, when it has one.
    pub provider_id: Option<String>,
}

impl NodeRef {
    fn of(node: &Node) -> NodeRef {
        NodeRef { name: name(node).to_owned(), provider_id: provider_id(node).map(str::to_owned) }
    }
}

fn name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

fn first_address<'a>(node: &'a Node, address_type: &str) -> &'a str {
    let addresses = node.status.as_ref().and_then(|status| status.addresses.as_deref());
    let found = addresses.unwrap_or_default().iter().find(|address| address.type_ == address_type);
    found.map_or("", |address| address.address.as_str())
}

fn provider_id(node: &Node) -> Option<&str> {
    node.spec.as_ref().and_then(|spec| spec.provider_id.as_deref()).filter(|id| !id.is_empty())
}

/// Nodes in name order, immutable once made, with the views providers read
/// of them computed on first use and kept: made once per change of the
/// cluster's nodes and shared by every call that passes them.
#[derive(Debug, Default)]
pub struct NodeSnapshot {
    nodes: Vec<Arc<Node>>,
    names: OnceLock<PackedStrings>,
    provider_ids: OnceLock<PackedStrings>,
    addresses: Mutex<HashMap<String, Arc<PackedStrings>>>,
}

impl NodeSnapshot {
    /// A snapshot of `nodes`, put in name order.
    pub fn new(mut nodes: Vec<Arc<Node>>) -> Self {
        nodes.sort_by(|a, b| name(a).cmp(name(b)));
        NodeSnapshot { nodes, ..NodeSnapshot::default() }
    }

    /// The nodes, in name order.
    pub fn nodes(&self) -> &[Arc<Node>] {
        &self.nodes
    }

    /// How many nodes it has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node's name.
    pub fn names(&self) -> &PackedStrings {
        self.names.get_or_init(|| self.nodes.iter().map(|node| name(node)).collect())
    }

    /// Every node's provider ID, empty for a node without one.
    pub fn provider_ids(&self) -> &PackedStrings {
        self.provider_ids.get_or_init(|| self.nodes.iter().map(|node| provider_id(node).unwrap_or_default()).collect())
    }

    /// Every node's first address of type `address_type` (`InternalIP` and
    /// so on), empty for a node without one.
    pub fn addresses(&self, address_type: &str) -> Arc<PackedStrings> {
        let mut addresses = self.addresses.lock().unwrap_or_else(PoisonError::into_inner);
        addresses
            .entry(address_type.to_owned())
            .or_insert_with(|| Arc::new(self.nodes.iter().map(|node| first_address(node, address_type)).collect()))
            .clone()
    }

    /// Whether both have the same nodes by name and provider ID, which is
    /// all that decides what a load balancer targets.
    pub fn same_targets(&self, other: &NodeSnapshot) -> bool {
        std::ptr::eq(self, other)
            || (self.len() == other.len()
                && self
                    .nodes
                    .iter()
                    .zip(&other.nodes)
                    .all(|(a, b)| name(a) == name(b) && provider_id(a) == provider_id(b)))
    }
}

/// The nodes a load balancer should target, and those it was last given
/// successfully, when known: the `node-set` a call lends a provider.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct NodeSet {
    current: Arc<NodeSnapshot>,
    previous: Option<Arc<NodeSnapshot>>,
}

impl NodeSet {
    /// `current`, after `previous`.
    pub fn new(current: Arc<NodeSnapshot>, previous: Option<Arc<NodeSnapshot>>) -> Self {
        NodeSet { current, previous }
    }

    /// `nodes`, with no previous set.
    pub fn of(nodes: impl IntoIterator<Item = Node>) -> Self {
        NodeSet::new(Arc::new(NodeSnapshot::new(nodes.into_iter().map(Arc::new).collect())), None)
    }

    /// The nodes to target.
    pub fn current(&self) -> &Arc<NodeSnapshot> {
        &self.current
    }

    /// The nodes last given, when known.
    pub fn previous(&self) -> Option<&Arc<NodeSnapshot>> {
        self.previous.as_ref()
    }

    /// The indexes of the nodes not in the previous set; all of them when
    /// there is none.
    pub fn added(&self) -> Vec<u32> {
        let index = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        let Some(previous) = &self.previous else {
            return (0..self.current.len()).map(index).collect();
        };
        let before: HashMap<&str, Option<&str>> =
            previous.nodes.iter().map(|node| (name(node), provider_id(node))).collect();
        let nodes = self.current.nodes.iter().enumerate();
        nodes.filter(|(_, node)| before.get(name(node)) != Some(&provider_id(node))).map(|(i, _)| index(i)).collect()
    }

    /// The nodes of the previous set that are not in this one, by name and
    /// provider ID; none when there is no previous set.
    pub fn removed(&self) -> Vec<NodeRef> {
        let Some(previous) = &self.previous else { return Vec::new() };
        let now: HashMap<&str, Option<&str>> =
            self.current.nodes.iter().map(|node| (name(node), provider_id(node))).collect();
        let gone = previous.nodes.iter().filter(|node| now.get(name(node)) != Some(&provider_id(node)));
        gone.map(|node| NodeRef::of(node)).collect()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{NodeAddress, NodeSpec, NodeStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn node(name: &str, provider_id: Option<&str>, internal_ip: Option<&str>) -> Node {
        Node {
            metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
            spec: Some(NodeSpec { provider_id: provider_id.map(str::to_owned), ..NodeSpec::default() }),
            status: Some(NodeStatus {
                addresses: internal_ip
                    .map(|ip| vec![NodeAddress { type_: "InternalIP".to_owned(), address: ip.to_owned() }]),
                ..NodeStatus::default()
            }),
        }
    }

    #[test]
    fn packed_strings_unpack_as_they_were_packed() {
        let packed: PackedStrings = ["a", "", "ccc", "ü"].into_iter().collect();
        assert_eq!(packed.text, "acccü");
        assert_eq!(packed.ends, [1, 1, 4, 6]);
        assert_eq!(packed.iter().collect::<Vec<_>>(), ["a", "", "ccc", "ü"]);
        assert!(PackedStrings::default().iter().next().is_none());
    }

    #[test]
    fn a_snapshot_is_in_name_order_with_its_views() {
        let set = NodeSet::of([node("b", None, Some("10.0.0.2")), node("a", Some("test://a"), None)]);
        let snapshot = set.current();
        assert_eq!(snapshot.names().iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(snapshot.provider_ids().iter().collect::<Vec<_>>(), ["test://a", ""]);
        assert_eq!(snapshot.addresses("InternalIP").iter().collect::<Vec<_>>(), ["", "10.0.0.2"]);
        assert_eq!(snapshot.addresses("ExternalIP").iter().collect::<Vec<_>>(), ["", ""]);
        assert_eq!(set.added(), [0, 1], "no previous set: every node is new");
        assert!(set.removed().is_empty());
    }

    #[test]
    fn added_and_removed_are_against_the_previous_set() {
        let before = NodeSet::of([node("a", None, None), node("b", None, None), node("c", Some("x://c"), None)]);
        let now = NodeSnapshot::new(
            [node("b", None, None), node("c", Some("x://c2"), None), node("d", None, None)]
                .into_iter()
                .map(Arc::new)
                .collect(),
        );
        let set = NodeSet::new(Arc::new(now), Some(before.current().clone()));
        assert_eq!(set.added(), [1, 2], "c has a new provider ID, d is new");
        let removed: Vec<String> = set.removed().into_iter().map(|node| node.name).collect();
        assert_eq!(removed, ["a", "c"]);
        assert!(!set.current().same_targets(before.current()));
        assert!(before.current().same_targets(&NodeSnapshot::new(before.current().nodes().to_vec())));
    }
}
