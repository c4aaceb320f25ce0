package v1

import metav1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"

// Node is what a provider reads of a Node.
type Node struct {
	metav1.ObjectMeta
	Spec   NodeSpec
	Status NodeStatus
}

// NodeSpec is the part of a Node's spec a provider reads.
type NodeSpec struct {
	// PodCIDR is PodCIDRs[0], or empty.
	PodCIDR  string
	PodCIDRs []string
	// ProviderID is empty until the cloud node controller sets it.
	ProviderID string
	Taints     []Taint
}

// NodeStatus is the part of a Node's status a provider reads.
type NodeStatus struct {
	Addresses  []NodeAddress
	Conditions []NodeCondition
}

// NodeAddress is one of a node's addresses.
type NodeAddress struct {
	Type    NodeAddressType
	Address string
}

// NodeAddressType is the kind of a node address.
type NodeAddressType string

// The node address types.
const (
	NodeHostName    NodeAddressType = "Hostname"
	NodeInternalIP  NodeAddressType = "InternalIP"
	NodeExternalIP  NodeAddressType = "ExternalIP"
	NodeInternalDNS NodeAddressType = "InternalDNS"
	NodeExternalDNS NodeAddressType = "ExternalDNS"
)

// NodeCondition is a node's condition, without its timestamps.
type NodeCondition struct {
	Type    NodeConditionType
	Status  ConditionStatus
	Reason  string
	Message string
}

// NodeConditionType names a condition.
type NodeConditionType string

// The conditions the controllers look at.
const (
	NodeReady              NodeConditionType = "Ready"
	NodeNetworkUnavailable NodeConditionType = "NetworkUnavailable"
)

// ConditionStatus is a condition's state.
type ConditionStatus string

// The condition states.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Taint is a node's taint, without its timestamp.
type Taint struct {
	Key    string
	Value  string
	Effect TaintEffect
}

// TaintEffect is what a taint does to pods that do not tolerate it.
type TaintEffect string

// The taint effects.
const (
	TaintEffectNoSchedule       TaintEffect = "NoSchedule"
	TaintEffectPreferNoSchedule TaintEffect = "PreferNoSchedule"
	TaintEffectNoExecute        TaintEffect = "NoExecute"
)
