//go:build wasip1

package glue

import (
	"iter"
	"math"
	"sync"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	witnodes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_nodes"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

// lentNodes is the cloudprovider.NodeSet the host lends a call: each view
// crosses from the host when first read, names and provider IDs once. The
// export drops the borrowed handle when the call returns, as the component
// model requires; a read after that panics.
type lentNodes struct {
	set         *witnodes.NodeSet
	names       func() wit.PackedStrings
	providerIDs func() wit.PackedStrings
}

func lend(set *witnodes.NodeSet) cloudprovider.NodeSet {
	return &lentNodes{set: set, names: sync.OnceValue(set.Names), providerIDs: sync.OnceValue(set.ProviderIds)}
}

func (s *lentNodes) Len() int {
	return int(s.set.Len())
}

func (s *lentNodes) Names() iter.Seq2[int, string] {
	return unpack(s.names)
}

func (s *lentNodes) ProviderIDs() iter.Seq2[int, string] {
	return unpack(s.providerIDs)
}

// Addresses yields an empty string for every node when addressType is not
// one the contract knows: no node has an address of it.
func (s *lentNodes) Addresses(addressType v1.NodeAddressType) iter.Seq2[int, string] {
	lowered, err := lowerEnum(addressTypes[:], addressType)
	if err != nil {
		return func(yield func(int, string) bool) {
			for index := range s.Len() {
				if !yield(index, "") {
					return
				}
			}
		}
	}
	return unpack(func() wit.PackedStrings { return s.set.Addresses(lowered) })
}

func (s *lentNodes) Get(index int) (*v1.Node, bool) {
	if index < 0 || index > math.MaxUint32 {
		return nil, false
	}
	node := s.set.Get(uint32(index))
	if node.IsNone() {
		return nil, false
	}
	return LiftNode(node.Some()), true
}

func (s *lentNodes) HasPrevious() bool {
	return s.set.HasPrevious()
}

func (s *lentNodes) Added() []int {
	indexes := s.set.Added()
	added := make([]int, len(indexes))
	for i, index := range indexes {
		added[i] = int(index)
	}
	return added
}

func (s *lentNodes) Removed() []cloudprovider.NodeRef {
	refs := s.set.Removed()
	removed := make([]cloudprovider.NodeRef, len(refs))
	for i, ref := range refs {
		removed[i] = cloudprovider.NodeRef{Name: ref.Name, ProviderID: ref.ProviderId.SomeOr("")}
	}
	return removed
}

// unpack yields the strings packed reads, with their indexes, reading them
// when iterated; an end out of order or past the text yields an empty
// string.
func unpack(packed func() wit.PackedStrings) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		all := packed()
		start := 0
		for index, end := range all.Ends {
			var value string
			if int(end) >= start && int(end) <= len(all.Text) {
				value = all.Text[start:end]
			}
			if !yield(index, value) {
				return
			}
			start = max(start, int(end))
		}
	}
}
