package cloudprovider_test

import (
	"iter"
	"slices"
	"testing"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	metav1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

func node(name, providerID, internalIP string) *v1.Node {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: v1.NodeSpec{ProviderID: providerID}}
	if internalIP != "" {
		node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: internalIP}}
	}
	return node
}

func values(seq iter.Seq2[int, string]) []string {
	var all []string
	for index, value := range seq {
		if index != len(all) {
			panic("indexes out of order")
		}
		all = append(all, value)
	}
	return all
}

func TestANativeSetReadsAsALentOne(t *testing.T) {
	set := cloudprovider.NewNodeSet(node("b", "", "10.0.0.2"), node("a", "x://a", ""))
	if set.Len() != 2 {
		t.Errorf("len %d", set.Len())
	}
	if names := values(set.Names()); !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("names %q", names)
	}
	if ids := values(set.ProviderIDs()); !slices.Equal(ids, []string{"x://a", ""}) {
		t.Errorf("provider IDs %q", ids)
	}
	if ips := values(set.Addresses(v1.NodeInternalIP)); !slices.Equal(ips, []string{"", "10.0.0.2"}) {
		t.Errorf("addresses %q", ips)
	}
	if got, ok := set.Get(1); !ok || got.UID != "uid-b" {
		t.Errorf("get(1) %v %v", got, ok)
	}
	if _, ok := set.Get(2); ok {
		t.Error("get(2) past the end")
	}
	if set.HasPrevious() || !slices.Equal(set.Added(), []int{0, 1}) || len(set.Removed()) != 0 {
		t.Errorf("previous %v, added %v, removed %v", set.HasPrevious(), set.Added(), set.Removed())
	}
	if all := cloudprovider.Nodes(set); len(all) != 2 || all[0].Name != "a" {
		t.Errorf("nodes %v", all)
	}
}

func TestAnIterationStopsWhenAsked(t *testing.T) {
	set := cloudprovider.NewNodeSet(node("a", "", ""), node("b", "", ""), node("c", "", ""))
	var seen []string
	for _, name := range set.Names() {
		seen = append(seen, name)
		if name == "b" {
			break
		}
	}
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("%q", seen)
	}
}

func TestAddedAndRemovedFollowThePreviousSet(t *testing.T) {
	set := cloudprovider.NodeSetAfter(
		[]*v1.Node{node("c", "", ""), node("b", "", "")},
		[]*v1.Node{node("b", "", ""), node("a", "x://a", "")},
	)
	if !set.HasPrevious() || !slices.Equal(set.Added(), []int{1}) {
		t.Errorf("previous %v, added %v", set.HasPrevious(), set.Added())
	}
	if removed := set.Removed(); !slices.Equal(removed, []cloudprovider.NodeRef{{Name: "a", ProviderID: "x://a"}}) {
		t.Errorf("removed %v", removed)
	}
	// A node whose provider ID changed counts as removed and added.
	moved := cloudprovider.NodeSetAfter([]*v1.Node{node("a", "x://new", "")}, []*v1.Node{node("a", "x://old", "")})
	if !slices.Equal(moved.Added(), []int{0}) || len(moved.Removed()) != 1 {
		t.Errorf("added %v, removed %v", moved.Added(), moved.Removed())
	}
}
