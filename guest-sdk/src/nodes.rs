//! [`NodeSet`]: the nodes a load balancer should target, lent by the host
//! for one call. A provider reads what it needs (names, provider IDs,
//! addresses, or whole nodes) and pays only for that: each view crosses
//! from the host once, when first read.

use std::cell::OnceCell;

use crate::types::{Node, NodeAddressType, NodeRef};

/// Many strings in one buffer, as the host passes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Strings {
    text: String,
    ends: Vec<u32>,
}

impl Strings {
    fn packed(packed: crate::types::PackedStrings) -> Self {
        Strings { text: packed.text, ends: packed.ends }
    }

    fn of<'a>(strings: impl IntoIterator<Item = &'a str>) -> Self {
        let mut packed = Strings::default();
        for string in strings {
            packed.text.push_str(string);
            packed.ends.push(u32::try_from(packed.text.len()).unwrap_or(u32::MAX));
        }
        packed
    }

    /// The strings, in order; a malformed buffer yields empty strings.
    pub fn iter(&self) -> StringsIter<'_> {
        StringsIter { rest: &self.text, taken: 0, ends: self.ends.iter() }
    }

    /// How many strings there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// The strings of a [`Strings`], in order.
///
/// Each string is split off the front of the text not yet read, so a step
/// checks one char boundary, the string's end: what makes reading 5000
/// provider IDs cost little more than the call itself.
#[derive(Debug, Clone)]
pub struct StringsIter<'a> {
    /// The text after the strings read so far.
    rest: &'a str,
    /// The bytes read so far.
    taken: u32,
    ends: std::slice::Iter<'a, u32>,
}

impl<'a> Iterator for StringsIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let end = *self.ends.next()?;
        let split = end.checked_sub(self.taken).and_then(|len| self.rest.split_at_checked(len as usize));
        let Some((string, rest)) = split else { return Some("") };
        self.rest = rest;
        self.taken = end;
        Some(string)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl ExactSizeIterator for StringsIter<'_> {}

/// Where a set's nodes are.
enum Source<'a> {
    /// Lent by the host.
    Host(&'a crate::wit::wasm_ccm::provider::nodes::NodeSet),
    /// Held by the provider itself, in a native test.
    Owned { nodes: Vec<Node>, previous: Option<Vec<Node>>, lifetime: std::marker::PhantomData<&'a ()> },
}

/// The nodes a load balancer should target, in name order: upstream's
/// `nodes []*v1.Node`, read lazily.
///
/// Besides the nodes, the set knows those the load balancer was last given
/// successfully, when the host knows them ([`NodeSet::has_previous`]):
/// [`NodeSet::added`] and [`NodeSet::removed`] let a provider change only
/// what changed. Without a previous set (after a restart or leader change)
/// every node counts as added, and the provider should bring the load
/// balancer to exactly this set.
///
/// ```
/// use wasm_ccm_sdk::NodeSet;
/// use wasm_ccm_sdk::types::Node;
///
/// fn instance_ids(nodes: &NodeSet) -> Vec<String> {
///     nodes
///         .provider_ids()
///         .iter()
///         .filter_map(|id| id.strip_prefix("acme://"))
///         .map(str::to_owned)
///         .collect()
/// }
/// # let node = |name: &str, id: &str| Node {
/// #     name: name.into(), uid: String::new(), provider_id: Some(id.into()), labels: vec![],
/// #     annotations: vec![], addresses: vec![], pod_cidrs: vec![], conditions: vec![], taints: vec![],
/// # };
/// let nodes = NodeSet::of(vec![node("b", "acme://i-2"), node("a", "acme://i-1")]);
/// assert_eq!(instance_ids(&nodes), ["i-1", "i-2"]);
/// ```
pub struct NodeSet<'a> {
    source: Source<'a>,
    names: OnceCell<Strings>,
    provider_ids: OnceCell<Strings>,
}

impl<'a> NodeSet<'a> {
    fn new(source: Source<'a>) -> Self {
        NodeSet { source, names: OnceCell::new(), provider_ids: OnceCell::new() }
    }

    /// The set the host lends a call.
    pub(crate) fn lent(set: &'a crate::wit::wasm_ccm::provider::nodes::NodeSet) -> Self {
        NodeSet::new(Source::Host(set))
    }

    /// A set of `nodes`, without a previous set, as a native test passes
    /// them; put in name order, as the host does.
    pub fn of(nodes: Vec<Node>) -> NodeSet<'static> {
        NodeSet::new(Source::Owned { nodes: sorted(nodes), previous: None, lifetime: std::marker::PhantomData })
    }

    /// A set of `nodes`, after `previous`, the set the load balancer was
    /// last given, as a native test passes them.
    pub fn after(nodes: Vec<Node>, previous: Vec<Node>) -> NodeSet<'static> {
        let source = Source::Owned {
            nodes: sorted(nodes),
            previous: Some(sorted(previous)),
            lifetime: std::marker::PhantomData,
        };
        NodeSet::new(source)
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Host(set) => set.len() as usize,
            Source::Owned { nodes, .. } => nodes.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every node's name.
    pub fn names(&self) -> &Strings {
        self.names.get_or_init(|| match &self.source {
            Source::Host(set) => Strings::packed(set.names()),
            Source::Owned { nodes, .. } => Strings::of(nodes.iter().map(|node| node.name.as_str())),
        })
    }

    /// Every node's provider ID (`spec.providerID`); an empty string for a
    /// node without one.
    pub fn provider_ids(&self) -> &Strings {
        self.provider_ids.get_or_init(|| match &self.source {
            Source::Host(set) => Strings::packed(set.provider_ids()),
            Source::Owned { nodes, .. } => {
                Strings::of(nodes.iter().map(|node| node.provider_id.as_deref().unwrap_or("")))
            }
        })
    }

    /// Every node's first address of `address_type`; an empty string for a
    /// node without one.
    pub fn addresses(&self, address_type: NodeAddressType) -> Strings {
        match &self.source {
            Source::Host(set) => Strings::packed(set.addresses(address_type)),
            Source::Owned { nodes, .. } => Strings::of(nodes.iter().map(|node| {
                let address = node.addresses.iter().find(|address| address.address_type == address_type);
                address.map_or("", |address| address.address.as_str())
            })),
        }
    }

    /// The node at `index` whole, with its labels, annotations, conditions
    /// and taints.
    pub fn get(&self, index: usize) -> Option<Node> {
        match &self.source {
            Source::Host(set) => set.get(u32::try_from(index).ok()?),
            Source::Owned { nodes, .. } => nodes.get(index).cloned(),
        }
    }

    /// Every node whole: what the first contract passed, and what costs
    /// most to read; prefer the views above.
    pub fn to_vec(&self) -> Vec<Node> {
        (0..self.len()).filter_map(|index| self.get(index)).collect()
    }

    /// Whether the set the load balancer was last given is known.
    pub fn has_previous(&self) -> bool {
        match &self.source {
            Source::Host(set) => set.has_previous(),
            Source::Owned { previous, .. } => previous.is_some(),
        }
    }

    /// The indexes of the nodes that were not in the previous set (by name
    /// and provider ID); every index when there is no previous set.
    pub fn added(&self) -> Vec<usize> {
        match &self.source {
            Source::Host(set) => set.added().into_iter().map(|index| index as usize).collect(),
            Source::Owned { nodes, previous: None, .. } => (0..nodes.len()).collect(),
            Source::Owned { nodes, previous: Some(previous), .. } => {
                (0..nodes.len()).filter(|&index| !previous.iter().any(|old| same(old, &nodes[index]))).collect()
            }
        }
    }

    /// The nodes of the previous set that are not in this one; none when
    /// there is no previous set.
    pub fn removed(&self) -> Vec<NodeRef> {
        match &self.source {
            Source::Host(set) => set.removed(),
            Source::Owned { previous: None, .. } => Vec::new(),
            Source::Owned { nodes, previous: Some(previous), .. } => previous
                .iter()
                .filter(|old| !nodes.iter().any(|node| same(old, node)))
                .map(|old| NodeRef { name: old.name.clone(), provider_id: old.provider_id.clone() })
                .collect(),
        }
    }
}

fn sorted(mut nodes: Vec<Node>) -> Vec<Node> {
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    nodes
}

fn same(a: &Node, b: &Node) -> bool {
    a.name == b.name && a.provider_id == b.provider_id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::NodeAddress;

    fn node(name: &str, provider_id: Option<&str>, internal_ip: Option<&str>) -> Node {
        Node {
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            provider_id: provider_id.map(str::to_owned),
            labels: Vec::new(),
            annotations: Vec::new(),
            addresses: internal_ip
                .map(|ip| NodeAddress { address_type: NodeAddressType::InternalIp, address: ip.to_owned() })
                .into_iter()
                .collect(),
            pod_cidrs: Vec::new(),
            conditions: Vec::new(),
            taints: Vec::new(),
        }
    }

    #[test]
    fn a_native_set_reads_as_a_lent_one() {
        let set = NodeSet::of(vec![node("b", None, Some("10.0.0.2")), node("a", Some("x://a"), None)]);
        assert_eq!(set.len(), 2);
        assert_eq!(set.names().iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(set.provider_ids().iter().collect::<Vec<_>>(), ["x://a", ""]);
        assert_eq!(set.addresses(NodeAddressType::InternalIp).iter().collect::<Vec<_>>(), ["", "10.0.0.2"]);
        assert_eq!(set.get(1).map(|node| node.uid), Some("uid-b".to_owned()));
        assert_eq!(set.get(2), None);
        assert!(!set.has_previous());
        assert_eq!(set.added(), [0, 1]);
    }

    #[test]
    fn added_and_removed_follow_the_previous_set() {
        let set = NodeSet::after(
            vec![node("b", None, None), node("c", None, None)],
            vec![node("a", None, None), node("b", None, None)],
        );
        assert_eq!(set.added(), [1]);
        assert_eq!(set.removed(), [NodeRef { name: "a".to_owned(), provider_id: None }]);
    }

    #[test]
    fn strings_split_at_their_ends_and_a_malformed_end_reads_empty() {
        let strings = |text: &str, ends: &[u32]| Strings { text: text.to_owned(), ends: ends.to_vec() };
        let read = |strings: &Strings| strings.iter().map(str::to_owned).collect::<Vec<_>>();

        assert_eq!(read(&strings("aébc", &[1, 3, 3, 5])), ["a", "é", "", "bc"]);
        // Inside `é`, before the last end, past the text: each reads empty
        // and the next string starts after the last good end.
        assert_eq!(read(&strings("aébc", &[2, 3, 1, 9, 5])), ["", "aé", "", "", "bc"]);
        assert_eq!(strings("ab", &[1, 2]).iter().len(), 2);
    }
}
