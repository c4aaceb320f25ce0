package cloudprovider

import (
	"iter"
	"slices"
	"strings"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
)

// NodeSet is the nodes a load balancer should target, in name order:
// upstream's nodes []*v1.Node, read lazily. Inside a component the host
// lends the set for one call; a provider reads what it needs (names,
// provider IDs, addresses, or whole nodes) and pays only for that. The set
// is valid until the method it was passed to returns.
//
// Besides the nodes, the set knows those the load balancer was last given
// successfully, when the host knows them (HasPrevious): Added and Removed
// let a provider change only what changed. Without a previous set (after a
// restart or a leader change) every node counts as added, and the provider
// should bring the load balancer to exactly this set.
//
// NewNodeSet and NodeSetAfter make one for a native test.
type NodeSet interface {
	// Len is how many nodes there are.
	Len() int
	// Names yields every node's index and name.
	Names() iter.Seq2[int, string]
	// ProviderIDs yields every node's index and provider ID
	// (spec.providerID); an empty string for a node without one.
	ProviderIDs() iter.Seq2[int, string]
	// Addresses yields every node's index and first address of
	// addressType; an empty string for a node without one.
	Addresses(addressType v1.NodeAddressType) iter.Seq2[int, string]
	// Get is the node at index whole, with its labels, annotations,
	// conditions and taints; false past the end. It costs most to read:
	// prefer the views above.
	Get(index int) (*v1.Node, bool)
	// HasPrevious says whether the set the load balancer was last given is
	// known.
	HasPrevious() bool
	// Added is the indexes of the nodes that were not in the previous set
	// (by name and provider ID); every index when there is no previous set.
	Added() []int
	// Removed is the nodes of the previous set that are not in this one;
	// none when there is no previous set.
	Removed() []NodeRef
}

// NodeRef is a node by its name and provider ID (empty when it had none).
type NodeRef struct {
	Name       string
	ProviderID string
}

// Nodes is every node of set whole, as upstream passes them: what costs
// most to read.
func Nodes(set NodeSet) []*v1.Node {
	nodes := make([]*v1.Node, 0, set.Len())
	for index := range set.Len() {
		if node, ok := set.Get(index); ok {
			nodes = append(nodes, node)
		}
	}
	return nodes
}

// NewNodeSet is a set of nodes without a previous set, put in name order as
// the host does, for a native test.
func NewNodeSet(nodes ...*v1.Node) NodeSet {
	return &ownedNodes{nodes: sorted(nodes)}
}

// NodeSetAfter is a set of nodes after previous, the set the load balancer
// was last given, for a native test.
func NodeSetAfter(nodes, previous []*v1.Node) NodeSet {
	return &ownedNodes{nodes: sorted(nodes), previous: sorted(previous), hasPrevious: true}
}

// ownedNodes is a NodeSet the provider holds itself.
type ownedNodes struct {
	nodes       []*v1.Node
	previous    []*v1.Node
	hasPrevious bool
}

func sorted(nodes []*v1.Node) []*v1.Node {
	return slices.SortedStableFunc(slices.Values(nodes), func(a, b *v1.Node) int {
		return strings.Compare(a.Name, b.Name)
	})
}

func (s *ownedNodes) Len() int {
	return len(s.nodes)
}

// each yields every node's index and what field says of it.
func (s *ownedNodes) each(field func(*v1.Node) string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for index, node := range s.nodes {
			if !yield(index, field(node)) {
				return
			}
		}
	}
}

func (s *ownedNodes) Names() iter.Seq2[int, string] {
	return s.each(func(node *v1.Node) string { return node.Name })
}

func (s *ownedNodes) ProviderIDs() iter.Seq2[int, string] {
	return s.each(func(node *v1.Node) string { return node.Spec.ProviderID })
}

func (s *ownedNodes) Addresses(addressType v1.NodeAddressType) iter.Seq2[int, string] {
	return s.each(func(node *v1.Node) string {
		for _, address := range node.Status.Addresses {
			if address.Type == addressType {
				return address.Address
			}
		}
		return ""
	})
}

func (s *ownedNodes) Get(index int) (*v1.Node, bool) {
	if index < 0 || index >= len(s.nodes) {
		return nil, false
	}
	return s.nodes[index], true
}

func (s *ownedNodes) HasPrevious() bool {
	return s.hasPrevious
}

func (s *ownedNodes) Added() []int {
	added := []int{}
	for index, node := range s.nodes {
		if !slices.ContainsFunc(s.previous, func(old *v1.Node) bool { return same(old, node) }) {
			added = append(added, index)
		}
	}
	return added
}

func (s *ownedNodes) Removed() []NodeRef {
	removed := []NodeRef{}
	for _, old := range s.previous {
		if !slices.ContainsFunc(s.nodes, func(node *v1.Node) bool { return same(old, node) }) {
			removed = append(removed, NodeRef{Name: old.Name, ProviderID: old.Spec.ProviderID})
		}
	}
	return removed
}

func same(a, b *v1.Node) bool {
	return a.Name == b.Name && a.Spec.ProviderID == b.Spec.ProviderID
}
