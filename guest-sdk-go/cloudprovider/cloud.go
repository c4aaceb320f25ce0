// Package cloudprovider mirrors k8s.io/cloud-provider for providers that
// wasm-ccm runs as WebAssembly components: the same interfaces, types and
// errors, so that an implementation of cloudprovider.Interface ports with
// its imports changed.
//
// Differences from upstream, all forced by the sandbox:
//   - Interface has no Initialize(clientBuilder, stop): there is no
//     Kubernetes client and each call runs in an instance of its own. A
//     provider that needs the cluster's name implements Initializer.
//   - The Factory runs once per version and configuration, and every call
//     starts from a fresh copy of the instance it left: nothing a call keeps
//     in memory outlives it, so keep state in the cloud, and draw nonces
//     with crypto/rand inside the call. Goroutines end with the call.
//   - LoadBalancer's nodes are a NodeSet the host lends for the call, read
//     by view, rather than []*v1.Node.
//   - A provider reaches its cloud through hosthttp (http.DefaultClient
//     already does), reads secrets through credentials and logs through
//     log/slog (hostlog); it has no files, environment or sockets.
package cloudprovider

import (
	"context"
	"io"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
)

// Interface is a cloud provider: which parts of the cloud it manages.
type Interface interface {
	// LoadBalancer is the load balancer part and whether it is supported.
	LoadBalancer() (LoadBalancer, bool)
	// Instances is the first instances API and whether it is supported.
	Instances() (Instances, bool)
	// InstancesV2 is the instances API and whether it is supported; when it
	// is, the controllers never call Zones.
	InstancesV2() (InstancesV2, bool)
	// Zones is the zones part and whether it is supported.
	Zones() (Zones, bool)
	// Clusters is the clusters part and whether it is supported.
	Clusters() (Clusters, bool)
	// Routes is the routes part and whether it is supported.
	Routes() (Routes, bool)
	// ProviderName is the provider's name, also the scheme of its provider
	// IDs; it must be the name it was registered under.
	ProviderName() string
	// HasClusterID says whether the provider tags resources with a cluster ID.
	HasClusterID() bool
}

// Initializer is implemented by a provider that wants the controller
// manager's --cluster-name before its first method: the sandbox's
// Initialize, called once after the Factory, before the snapshot every call
// starts from.
type Initializer interface {
	Initialize(clusterName string) error
}

// Factory builds the provider from its configuration file (--cloud-config);
// config is empty when there is none.
type Factory func(config io.Reader) (Interface, error)

// LoadBalancer manages a Service's load balancer.
type LoadBalancer interface {
	// GetLoadBalancer is the load balancer's status and whether it exists.
	GetLoadBalancer(ctx context.Context, clusterName string, service *v1.Service) (status *v1.LoadBalancerStatus, exists bool, err error)
	// GetLoadBalancerName is the load balancer's name; DefaultLoadBalancerName
	// is upstream's.
	GetLoadBalancerName(ctx context.Context, clusterName string, service *v1.Service) string
	// EnsureLoadBalancer creates the load balancer or brings it in line with
	// the Service and nodes; it is idempotent.
	EnsureLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes NodeSet) (*v1.LoadBalancerStatus, error)
	// UpdateLoadBalancer makes the load balancer target exactly nodes.
	UpdateLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes NodeSet) error
	// EnsureLoadBalancerDeleted deletes the load balancer; it succeeds when
	// the load balancer is already gone.
	EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, service *v1.Service) error
}

// Instances is the first instances API, by node name and provider ID.
type Instances interface {
	NodeAddresses(ctx context.Context, name types.NodeName) ([]v1.NodeAddress, error)
	NodeAddressesByProviderID(ctx context.Context, providerID string) ([]v1.NodeAddress, error)
	InstanceID(ctx context.Context, nodeName types.NodeName) (string, error)
	InstanceType(ctx context.Context, name types.NodeName) (string, error)
	InstanceTypeByProviderID(ctx context.Context, providerID string) (string, error)
	AddSSHKeyToAllInstances(ctx context.Context, user string, keyData []byte) error
	CurrentNodeName(ctx context.Context, hostname string) (types.NodeName, error)
	InstanceExistsByProviderID(ctx context.Context, providerID string) (bool, error)
	InstanceShutdownByProviderID(ctx context.Context, providerID string) (bool, error)
}

// InstancesV2 answers for a Node: by its provider ID once it has one, else
// by its name.
type InstancesV2 interface {
	InstanceExists(ctx context.Context, node *v1.Node) (bool, error)
	InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error)
	InstanceMetadata(ctx context.Context, node *v1.Node) (*InstanceMetadata, error)
}

// InstancesBatch is implemented by an InstancesV2 that answers the node
// lifecycle's questions about many nodes in one call, with as few cloud
// requests as its cloud allows (one listing of many instances, say). It has
// no counterpart upstream: without it, the host asks InstanceExists and
// InstanceShutdown one node at a time.
type InstancesBatch interface {
	// MaxBatch is the most nodes InstanceStates takes; the host splits
	// larger sets. 0 answers one node at a time.
	MaxBatch() int
	// InstanceStates answers for every node of nodes (which has no previous
	// set), in its order. An error fails the whole batch, and the host
	// backs off before asking again.
	InstanceStates(ctx context.Context, nodes NodeSet) ([]InstanceState, error)
}

// MetadataBatch is implemented by an InstancesBatch that also answers the
// node status refresh for many nodes in one call, in batches of MaxBatch:
// InstanceMetadata of every node. Without it, the host asks
// InstanceMetadata one node at a time, a few at once.
type MetadataBatch interface {
	// BatchMetadata answers for every node of nodes (which has no previous
	// set), in its order. An error fails the whole batch.
	BatchMetadata(ctx context.Context, nodes NodeSet) ([]MetadataAnswer, error)
}

// MetadataAnswer is InstanceMetadata's answer about one node of a batch:
// the metadata, or the node's own error, which leaves the node alone.
type MetadataAnswer struct {
	Metadata *InstanceMetadata
	Err      error
}

// InstanceState is what the node lifecycle needs to know of a node's
// instance.
type InstanceState struct {
	// Exists is InstanceExists's answer.
	Exists bool
	// ShutDown is InstanceShutdown's answer; read only when Exists.
	ShutDown bool
	// Err is the node's own error, upstream's of InstanceExists or
	// InstanceShutdown; it leaves the node alone.
	Err error
}

// InstanceMetadata is what the cloud node controller sets on a Node.
type InstanceMetadata struct {
	// ProviderID is <provider name>://<instance ID> by convention.
	ProviderID    string
	InstanceType  string
	NodeAddresses []v1.NodeAddress
	Zone          string
	Region        string
	// AdditionalLabels are added to the Node; keys under kubernetes.io and
	// k8s.io are dropped.
	AdditionalLabels map[string]string
}

// Zones is deprecated upstream in favour of InstancesV2.
type Zones interface {
	GetZone(ctx context.Context) (Zone, error)
	GetZoneByProviderID(ctx context.Context, providerID string) (Zone, error)
	GetZoneByNodeName(ctx context.Context, nodeName types.NodeName) (Zone, error)
}

// Zone is a failure domain and its region.
type Zone struct {
	FailureDomain string
	Region        string
}

// Clusters lists the clusters of the cloud.
type Clusters interface {
	ListClusters(ctx context.Context) ([]string, error)
	// Master is the address of the cluster's API server.
	Master(ctx context.Context, clusterName string) (string, error)
}

// Routes manages the routes of pod networks to nodes.
type Routes interface {
	ListRoutes(ctx context.Context, clusterName string) ([]*Route, error)
	// CreateRoute creates route; the route controller passes the target
	// Node's UID as nameHint.
	CreateRoute(ctx context.Context, clusterName string, nameHint string, route *Route) error
	DeleteRoute(ctx context.Context, clusterName string, route *Route) error
}

// Route sends a pod network to a node.
type Route struct {
	Name                string
	TargetNode          types.NodeName
	TargetNodeAddresses []v1.NodeAddress
	DestinationCIDR     string
	// Blackhole says the route's target is gone; the route controller
	// deletes it.
	Blackhole           bool
	EnableNodeAddresses bool
}
