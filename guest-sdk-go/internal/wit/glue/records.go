//go:build wasip1

package glue

import (
	"fmt"
	"math"
	"slices"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	metav1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

// The contract's enums, by value, as the Go API names them.
var (
	serviceTypes = [...]v1.ServiceType{
		wit.ServiceType_ClusterIp:    v1.ServiceTypeClusterIP,
		wit.ServiceType_NodePort:     v1.ServiceTypeNodePort,
		wit.ServiceType_LoadBalancer: v1.ServiceTypeLoadBalancer,
		wit.ServiceType_ExternalName: v1.ServiceTypeExternalName,
	}
	protocols = [...]v1.Protocol{
		wit.Protocol_Tcp:  v1.ProtocolTCP,
		wit.Protocol_Udp:  v1.ProtocolUDP,
		wit.Protocol_Sctp: v1.ProtocolSCTP,
	}
	trafficPolicies = [...]v1.ServiceExternalTrafficPolicy{
		wit.TrafficPolicy_Cluster: v1.ServiceExternalTrafficPolicyCluster,
		wit.TrafficPolicy_Local:   v1.ServiceExternalTrafficPolicyLocal,
	}
	ipFamilies = [...]v1.IPFamily{
		wit.IpFamily_Ipv4: v1.IPv4Protocol,
		wit.IpFamily_Ipv6: v1.IPv6Protocol,
	}
	affinities = [...]v1.ServiceAffinity{
		wit.SessionAffinity_None:     v1.ServiceAffinityNone,
		wit.SessionAffinity_ClientIp: v1.ServiceAffinityClientIP,
	}
	addressTypes = [...]v1.NodeAddressType{
		wit.NodeAddressType_Hostname:    v1.NodeHostName,
		wit.NodeAddressType_InternalIp:  v1.NodeInternalIP,
		wit.NodeAddressType_ExternalIp:  v1.NodeExternalIP,
		wit.NodeAddressType_InternalDns: v1.NodeInternalDNS,
		wit.NodeAddressType_ExternalDns: v1.NodeExternalDNS,
	}
	conditionStatuses = [...]v1.ConditionStatus{
		wit.ConditionStatus_True:    v1.ConditionTrue,
		wit.ConditionStatus_False:   v1.ConditionFalse,
		wit.ConditionStatus_Unknown: v1.ConditionUnknown,
	}
	taintEffects = [...]v1.TaintEffect{
		wit.TaintEffect_NoSchedule:       v1.TaintEffectNoSchedule,
		wit.TaintEffect_PreferNoSchedule: v1.TaintEffectPreferNoSchedule,
		wit.TaintEffect_NoExecute:        v1.TaintEffectNoExecute,
	}
	ipModes = [...]v1.LoadBalancerIPMode{
		wit.IpMode_Vip:   v1.LoadBalancerIPModeVIP,
		wit.IpMode_Proxy: v1.LoadBalancerIPModeProxy,
	}
)

// lowerEnum is the contract's value of name in values.
func lowerEnum[T ~string](values []T, name T) (uint8, error) {
	index := slices.Index(values, name)
	if index < 0 {
		return 0, fmt.Errorf("%T %q is not one of %q", name, name, values)
	}
	return uint8(index), nil
}

func liftMap(pairs []wit.KeyValue) map[string]string {
	if len(pairs) == 0 {
		return nil
	}
	lifted := make(map[string]string, len(pairs))
	for _, pair := range pairs {
		lifted[pair.Key] = pair.Value
	}
	return lifted
}

// lowerMap is m in the order of its keys.
func lowerMap(m map[string]string) []wit.KeyValue {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	pairs := make([]wit.KeyValue, len(keys))
	for i, key := range keys {
		pairs[i] = wit.KeyValue{Key: key, Value: m[key]}
	}
	return pairs
}

// pointer is the option's value, or nil.
func pointer[T any](option abi.Option[T]) *T {
	if option.IsNone() {
		return nil
	}
	value := option.Some()
	return &value
}

// optional is value, or none when it is empty.
func optional(value string) abi.Option[string] {
	if value == "" {
		return abi.None[string]()
	}
	return abi.Some(value)
}

// fromPointer is the value value points to, or none.
func fromPointer[T any](value *T) abi.Option[T] {
	if value == nil {
		return abi.None[T]()
	}
	return abi.Some(*value)
}

// port is value as a port number.
func port(value int32) (uint16, error) {
	if value < 0 || value > math.MaxUint16 {
		return 0, fmt.Errorf("port %d is out of range", value)
	}
	return uint16(value), nil
}

// LiftService is the Service as the Go API gives it.
func LiftService(service wit.Service) *v1.Service {
	ports := make([]v1.ServicePort, len(service.Ports))
	for i, p := range service.Ports {
		ports[i] = v1.ServicePort{
			Name:        p.Name,
			Protocol:    protocols[p.Protocol],
			AppProtocol: pointer(p.AppProtocol),
			Port:        int32(p.Port),
			NodePort:    int32(p.NodePort.SomeOr(0)),
		}
	}
	families := make([]v1.IPFamily, len(service.IpFamilies))
	for i, family := range service.IpFamilies {
		families[i] = ipFamilies[family]
	}
	var affinityConfig *v1.SessionAffinityConfig
	if service.SessionAffinityTimeoutSeconds.IsSome() {
		timeout := int32(min(service.SessionAffinityTimeoutSeconds.Some(), math.MaxInt32))
		affinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &timeout}}
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:        service.Name,
			Namespace:   service.Namespace,
			UID:         types.UID(service.Uid),
			Labels:      liftMap(service.Labels),
			Annotations: liftMap(service.Annotations),
		},
		Spec: v1.ServiceSpec{
			Ports:                    ports,
			Type:                     serviceTypes[service.ServiceType],
			LoadBalancerIP:           service.LoadBalancerIp.SomeOr(""),
			LoadBalancerSourceRanges: service.LoadBalancerSourceRanges,
			ExternalTrafficPolicy:    trafficPolicies[service.ExternalTrafficPolicy],
			HealthCheckNodePort:      int32(service.HealthCheckNodePort.SomeOr(0)),
			IPFamilies:               families,
			SessionAffinity:          affinities[service.SessionAffinity],
			SessionAffinityConfig:    affinityConfig,
			LoadBalancerClass:        pointer(service.LoadBalancerClass),
		},
	}
}

// LiftNode is the Node as the Go API gives it.
func LiftNode(node wit.Node) *v1.Node {
	conditions := make([]v1.NodeCondition, len(node.Conditions))
	for i, condition := range node.Conditions {
		conditions[i] = v1.NodeCondition{
			Type:    v1.NodeConditionType(condition.ConditionType),
			Status:  conditionStatuses[condition.Status],
			Reason:  condition.Reason.SomeOr(""),
			Message: condition.Message.SomeOr(""),
		}
	}
	taints := make([]v1.Taint, len(node.Taints))
	for i, taint := range node.Taints {
		taints[i] = v1.Taint{Key: taint.Key, Value: taint.Value.SomeOr(""), Effect: taintEffects[taint.Effect]}
	}
	var podCIDR string
	if len(node.PodCidrs) > 0 {
		podCIDR = node.PodCidrs[0]
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        node.Name,
			UID:         types.UID(node.Uid),
			Labels:      liftMap(node.Labels),
			Annotations: liftMap(node.Annotations),
		},
		Spec: v1.NodeSpec{
			PodCIDR:    podCIDR,
			PodCIDRs:   node.PodCidrs,
			ProviderID: node.ProviderId.SomeOr(""),
			Taints:     taints,
		},
		Status: v1.NodeStatus{Addresses: liftAddresses(node.Addresses), Conditions: conditions},
	}
}

func liftAddresses(addresses []wit.NodeAddress) []v1.NodeAddress {
	lifted := make([]v1.NodeAddress, len(addresses))
	for i, address := range addresses {
		lifted[i] = v1.NodeAddress{Type: addressTypes[address.AddressType], Address: address.Address}
	}
	return lifted
}

// LowerAddresses is the provider's node addresses as the contract carries
// them.
func LowerAddresses(addresses []v1.NodeAddress) ([]wit.NodeAddress, error) {
	lowered := make([]wit.NodeAddress, len(addresses))
	for i, address := range addresses {
		addressType, err := lowerEnum(addressTypes[:], address.Type)
		if err != nil {
			return nil, err
		}
		lowered[i] = wit.NodeAddress{AddressType: addressType, Address: address.Address}
	}
	return lowered, nil
}

// LowerStatus is the load balancer's status as the contract carries it; a
// nil status has no ingress.
func LowerStatus(status *v1.LoadBalancerStatus) (wit.LoadBalancerStatus, error) {
	if status == nil {
		return wit.LoadBalancerStatus{}, nil
	}
	ingress := make([]wit.LoadBalancerIngress, len(status.Ingress))
	for i, in := range status.Ingress {
		lowered, err := lowerIngress(in)
		if err != nil {
			return wit.LoadBalancerStatus{}, err
		}
		ingress[i] = lowered
	}
	return wit.LoadBalancerStatus{Ingress: ingress}, nil
}

func lowerIngress(ingress v1.LoadBalancerIngress) (wit.LoadBalancerIngress, error) {
	mode := abi.None[wit.IpMode]()
	if ingress.IPMode != nil {
		value, err := lowerEnum(ipModes[:], *ingress.IPMode)
		if err != nil {
			return wit.LoadBalancerIngress{}, err
		}
		mode = abi.Some(value)
	}
	ports := make([]wit.PortStatus, len(ingress.Ports))
	for i, status := range ingress.Ports {
		number, err := port(status.Port)
		if err != nil {
			return wit.LoadBalancerIngress{}, err
		}
		protocol, err := lowerEnum(protocols[:], status.Protocol)
		if err != nil {
			return wit.LoadBalancerIngress{}, err
		}
		ports[i] = wit.PortStatus{Port: number, Protocol: protocol, Error: fromPointer(status.Error)}
	}
	return wit.LoadBalancerIngress{
		Ip:       optional(ingress.IP),
		Hostname: optional(ingress.Hostname),
		IpMode:   mode,
		Ports:    ports,
	}, nil
}

// LowerMetadata is the instance's metadata as the contract carries it.
func LowerMetadata(metadata *cloudprovider.InstanceMetadata) (wit.InstanceMetadata, error) {
	if metadata == nil {
		return wit.InstanceMetadata{}, fmt.Errorf("InstanceMetadata answered neither metadata nor an error")
	}
	addresses, err := LowerAddresses(metadata.NodeAddresses)
	if err != nil {
		return wit.InstanceMetadata{}, err
	}
	return wit.InstanceMetadata{
		ProviderId:       metadata.ProviderID,
		InstanceType:     metadata.InstanceType,
		NodeAddresses:    addresses,
		Zone:             metadata.Zone,
		Region:           metadata.Region,
		AdditionalLabels: lowerMap(metadata.AdditionalLabels),
	}, nil
}

// LowerZone is the zone as the contract carries it.
func LowerZone(zone cloudprovider.Zone) (wit.Zone, error) {
	return wit.Zone{FailureDomain: zone.FailureDomain, Region: zone.Region}, nil
}

// LowerNodeName is a node name as the contract carries it.
func LowerNodeName(name types.NodeName) (string, error) {
	return string(name), nil
}

// LiftRoute is the route as the Go API gives it.
func LiftRoute(route wit.Route) *cloudprovider.Route {
	return &cloudprovider.Route{
		Name:                route.Name,
		TargetNode:          types.NodeName(route.TargetNode),
		TargetNodeAddresses: liftAddresses(route.TargetNodeAddresses),
		DestinationCIDR:     route.DestinationCidr,
		Blackhole:           route.Blackhole,
		EnableNodeAddresses: route.EnableNodeAddresses,
	}
}

// LowerRoutes is the routes as the contract carries them.
func LowerRoutes(routes []*cloudprovider.Route) ([]wit.Route, error) {
	lowered := make([]wit.Route, 0, len(routes))
	for _, route := range routes {
		if route == nil {
			continue
		}
		addresses, err := LowerAddresses(route.TargetNodeAddresses)
		if err != nil {
			return nil, err
		}
		lowered = append(lowered, wit.Route{
			Name:                route.Name,
			TargetNode:          string(route.TargetNode),
			EnableNodeAddresses: route.EnableNodeAddresses,
			TargetNodeAddresses: addresses,
			DestinationCidr:     route.DestinationCIDR,
			Blackhole:           route.Blackhole,
		})
	}
	return lowered, nil
}
