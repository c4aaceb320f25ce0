package upstream

import (
	leanv1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	v1 "k8s.io/api/core/v1"
)

// toNodes is every node of set whole, as upstream's, in the set's order.
func toNodes(set lean.NodeSet) []*v1.Node {
	if set == nil {
		return nil
	}
	nodes := lean.Nodes(set)
	converted := make([]*v1.Node, len(nodes))
	for index, node := range nodes {
		converted[index] = toNode(node)
	}
	return converted
}

// toNode is node as upstream's, with the fields the contract carries;
// conditions and taints have no timestamps. nil stays nil.
func toNode(node *leanv1.Node) *v1.Node {
	if node == nil {
		return nil
	}
	converted := &v1.Node{
		ObjectMeta: toObjectMeta(node.ObjectMeta),
		Spec: v1.NodeSpec{
			PodCIDR:    node.Spec.PodCIDR,
			PodCIDRs:   node.Spec.PodCIDRs,
			ProviderID: node.Spec.ProviderID,
		},
		Status: v1.NodeStatus{Addresses: toAddresses(node.Status.Addresses)},
	}
	for _, taint := range node.Spec.Taints {
		converted.Spec.Taints = append(converted.Spec.Taints, v1.Taint{
			Key:    taint.Key,
			Value:  taint.Value,
			Effect: v1.TaintEffect(taint.Effect),
		})
	}
	for _, condition := range node.Status.Conditions {
		converted.Status.Conditions = append(converted.Status.Conditions, v1.NodeCondition{
			Type:    v1.NodeConditionType(condition.Type),
			Status:  v1.ConditionStatus(condition.Status),
			Reason:  condition.Reason,
			Message: condition.Message,
		})
	}
	return converted
}

// toAddresses is addresses as upstream's; nil stays nil.
func toAddresses(addresses []leanv1.NodeAddress) []v1.NodeAddress {
	if addresses == nil {
		return nil
	}
	converted := make([]v1.NodeAddress, len(addresses))
	for index, address := range addresses {
		converted[index] = v1.NodeAddress{Type: v1.NodeAddressType(address.Type), Address: address.Address}
	}
	return converted
}

// fromAddresses is upstream's addresses as the SDK's; nil stays nil.
func fromAddresses(addresses []v1.NodeAddress) []leanv1.NodeAddress {
	if addresses == nil {
		return nil
	}
	converted := make([]leanv1.NodeAddress, len(addresses))
	for index, address := range addresses {
		converted[index] = leanv1.NodeAddress{Type: leanv1.NodeAddressType(address.Type), Address: address.Address}
	}
	return converted
}
