// Package v1 mirrors the part of k8s.io/api/core/v1 that the wasm-ccm
// contract carries: what a provider reads of Services and Nodes, and the
// load-balancer status and addresses it answers with. Types, fields and
// constants keep upstream's names.
package v1

import metav1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"

// Service is what a provider reads of a Service.
type Service struct {
	metav1.ObjectMeta
	Spec ServiceSpec
}

// ServiceSpec is the part of a Service's spec a load balancer is built from.
type ServiceSpec struct {
	Ports []ServicePort
	Type  ServiceType
	// LoadBalancerIP is deprecated upstream, still honoured by many clouds.
	LoadBalancerIP           string
	LoadBalancerSourceRanges []string
	ExternalTrafficPolicy    ServiceExternalTrafficPolicy
	// HealthCheckNodePort is zero when unset.
	HealthCheckNodePort   int32
	IPFamilies            []IPFamily
	SessionAffinity       ServiceAffinity
	SessionAffinityConfig *SessionAffinityConfig
	LoadBalancerClass     *string
}

// ServicePort is a port of a Service, without targetPort, which concerns
// endpoints only.
type ServicePort struct {
	Name        string
	Protocol    Protocol
	AppProtocol *string
	Port        int32
	// NodePort is zero until the API server allocates one, or when
	// allocateLoadBalancerNodePorts is false.
	NodePort int32
}

// SessionAffinityConfig holds the client IP affinity's timeout.
type SessionAffinityConfig struct {
	ClientIP *ClientIPConfig
}

// ClientIPConfig is the client IP affinity's configuration.
type ClientIPConfig struct {
	TimeoutSeconds *int32
}

// ServiceType is how a Service is exposed.
type ServiceType string

// The Service types.
const (
	ServiceTypeClusterIP    ServiceType = "ClusterIP"
	ServiceTypeNodePort     ServiceType = "NodePort"
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
	ServiceTypeExternalName ServiceType = "ExternalName"
)

// Protocol is a port's protocol.
type Protocol string

// The protocols.
const (
	ProtocolTCP  Protocol = "TCP"
	ProtocolUDP  Protocol = "UDP"
	ProtocolSCTP Protocol = "SCTP"
)

// ServiceExternalTrafficPolicy says whether external traffic may leave the
// node it arrives at.
type ServiceExternalTrafficPolicy string

// The external traffic policies.
const (
	ServiceExternalTrafficPolicyCluster ServiceExternalTrafficPolicy = "Cluster"
	ServiceExternalTrafficPolicyLocal   ServiceExternalTrafficPolicy = "Local"
)

// IPFamily is an IP version.
type IPFamily string

// The IP families.
const (
	IPv4Protocol IPFamily = "IPv4"
	IPv6Protocol IPFamily = "IPv6"
)

// ServiceAffinity is a Service's session affinity.
type ServiceAffinity string

// The session affinities.
const (
	ServiceAffinityNone     ServiceAffinity = "None"
	ServiceAffinityClientIP ServiceAffinity = "ClientIP"
)

// LoadBalancerStatus is what a provider answers for a load balancer.
type LoadBalancerStatus struct {
	Ingress []LoadBalancerIngress
}

// LoadBalancerIngress is one of a load balancer's addresses: an IP or a host
// name.
type LoadBalancerIngress struct {
	IP       string
	Hostname string
	IPMode   *LoadBalancerIPMode
	Ports    []PortStatus
}

// LoadBalancerIPMode says how traffic reaches the load balancer's IP.
type LoadBalancerIPMode string

// The IP modes.
const (
	LoadBalancerIPModeVIP   LoadBalancerIPMode = "VIP"
	LoadBalancerIPModeProxy LoadBalancerIPMode = "Proxy"
)

// PortStatus is a load balancer port's state.
type PortStatus struct {
	Port     int32
	Protocol Protocol
	// Error is a CamelCase reason when the port is in error.
	Error *string
}
