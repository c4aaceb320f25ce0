//go:build wasip1

package glue

import (
	"math"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	witbatch "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_instances_batch"
	witnodes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_nodes"
	witprovider "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_provider"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

// The world's exports, function by function, with the generated bindings'
// signatures.

type (
	unitResult     = abi.Result[abi.Unit, wit.CloudError]
	boolResult     = abi.Result[bool, wit.CloudError]
	stringResult   = abi.Result[string, wit.CloudError]
	addressResult  = abi.Result[[]wit.NodeAddress, wit.CloudError]
	zoneResult     = abi.Result[wit.Zone, wit.CloudError]
	stateResult    = abi.Result[witbatch.InstanceState, wit.CloudError]
	metadataResult = abi.Result[wit.InstanceMetadata, wit.CloudError]
)

// InitializeProvider is provider.initialize.
func InitializeProvider(config []byte, clusterName string) unitResult {
	return Done(Initialize(config, clusterName))
}

// HasClusterID is provider.has-cluster-id; false before initialize.
func HasClusterID() bool {
	provider, err := Provider()
	return err == nil && provider.HasClusterID()
}

// SupportedParts is provider.supported-parts; none before initialize.
func SupportedParts() witprovider.Parts {
	provider, err := Provider()
	if err != nil {
		return 0
	}
	var parts witprovider.Parts
	for flag, supported := range map[witprovider.Parts]bool{
		witprovider.Parts_LoadBalancer: second(provider.LoadBalancer()),
		witprovider.Parts_Instances:    second(provider.Instances()),
		witprovider.Parts_InstancesV2:  second(provider.InstancesV2()),
		witprovider.Parts_Zones:        second(provider.Zones()),
		witprovider.Parts_Clusters:     second(provider.Clusters()),
		witprovider.Parts_Routes:       second(provider.Routes()),
	} {
		if supported {
			parts |= flag
		}
	}
	return parts
}

func second[T any](_ T, ok bool) bool {
	return ok
}

// GetLoadBalancer is load-balancer.get.
func GetLoadBalancer(clusterName string, service wit.Service) abi.Result[abi.Option[wit.LoadBalancerStatus], wit.CloudError] {
	none := abi.None[wit.LoadBalancerStatus]()
	lb, err := LoadBalancer()
	if err != nil {
		return Result(none, err, Same)
	}
	status, exists, err := lb.GetLoadBalancer(Context(), clusterName, LiftService(service))
	if err != nil || !exists {
		return Result(none, err, Same)
	}
	lowered, err := LowerStatus(status)
	return Result(abi.Some(lowered), err, Same)
}

// GetLoadBalancerName is load-balancer.get-name; upstream's default name
// when the provider has no load balancers.
func GetLoadBalancerName(clusterName string, service wit.Service) string {
	lifted := LiftService(service)
	lb, err := LoadBalancer()
	if err != nil {
		return cloudprovider.DefaultLoadBalancerName(lifted)
	}
	return lb.GetLoadBalancerName(Context(), clusterName, lifted)
}

// EnsureLoadBalancer is load-balancer.ensure.
func EnsureLoadBalancer(clusterName string, service wit.Service, nodes *witnodes.NodeSet) abi.Result[wit.LoadBalancerStatus, wit.CloudError] {
	defer nodes.Drop()
	lb, err := LoadBalancer()
	if err != nil {
		return Failed[wit.LoadBalancerStatus](err)
	}
	status, err := lb.EnsureLoadBalancer(Context(), clusterName, LiftService(service), lend(nodes))
	return Result(status, err, LowerStatus)
}

// UpdateLoadBalancer is load-balancer.update.
func UpdateLoadBalancer(clusterName string, service wit.Service, nodes *witnodes.NodeSet) unitResult {
	defer nodes.Drop()
	lb, err := LoadBalancer()
	if err != nil {
		return Done(err)
	}
	return Done(lb.UpdateLoadBalancer(Context(), clusterName, LiftService(service), lend(nodes)))
}

// EnsureLoadBalancerDeleted is load-balancer.ensure-deleted.
func EnsureLoadBalancerDeleted(clusterName string, service wit.Service) unitResult {
	lb, err := LoadBalancer()
	if err != nil {
		return Done(err)
	}
	return Done(lb.EnsureLoadBalancerDeleted(Context(), clusterName, LiftService(service)))
}

// InstanceExists is instances-v2.exists.
func InstanceExists(node wit.Node) boolResult {
	instances, err := InstancesV2()
	if err != nil {
		return Failed[bool](err)
	}
	exists, err := instances.InstanceExists(Context(), LiftNode(node))
	return Result(exists, err, Same)
}

// InstanceShutdown is instances-v2.shutdown.
func InstanceShutdown(node wit.Node) boolResult {
	instances, err := InstancesV2()
	if err != nil {
		return Failed[bool](err)
	}
	shutdown, err := instances.InstanceShutdown(Context(), LiftNode(node))
	return Result(shutdown, err, Same)
}

// MaxBatch is instances-batch.max-batch: 0, one node at a time, unless
// the provider's InstancesV2 is also an InstancesBatch.
func MaxBatch() uint32 {
	batch, err := instancesBatch()
	if err != nil {
		return 0
	}
	return uint32(min(max(batch.MaxBatch(), 0), math.MaxUint32))
}

// InstanceStates is instances-batch.states.
func InstanceStates(nodes *witnodes.NodeSet) abi.Result[[]stateResult, wit.CloudError] {
	defer nodes.Drop()
	batch, err := instancesBatch()
	if err != nil {
		return Failed[[]stateResult](err)
	}
	states, err := batch.InstanceStates(Context(), lend(nodes))
	return Result(states, err, lowerStates)
}

func lowerStates(states []cloudprovider.InstanceState) ([]stateResult, error) {
	lowered := make([]stateResult, len(states))
	for i, state := range states {
		if state.Err != nil {
			lowered[i] = Failed[witbatch.InstanceState](state.Err)
			continue
		}
		lowered[i] = abi.Ok[witbatch.InstanceState, wit.CloudError](witbatch.InstanceState{Exists: state.Exists, ShutDown: state.Exists && state.ShutDown})
	}
	return lowered, nil
}

// BatchMetadata is metadata-batch.metadata: not implemented unless the
// provider's InstancesV2 is also a MetadataBatch.
func BatchMetadata(nodes *witnodes.NodeSet) abi.Result[[]metadataResult, wit.CloudError] {
	defer nodes.Drop()
	instances, err := InstancesV2()
	if err != nil {
		return Failed[[]metadataResult](err)
	}
	batch, ok := instances.(cloudprovider.MetadataBatch)
	if !ok {
		return Failed[[]metadataResult](cloudprovider.NotImplemented)
	}
	answers, err := batch.BatchMetadata(Context(), lend(nodes))
	return Result(answers, err, lowerMetadataAnswers)
}

func lowerMetadataAnswers(answers []cloudprovider.MetadataAnswer) ([]metadataResult, error) {
	lowered := make([]metadataResult, len(answers))
	for i, answer := range answers {
		if answer.Err != nil {
			lowered[i] = Failed[wit.InstanceMetadata](answer.Err)
			continue
		}
		lowered[i] = Result(answer.Metadata, nil, LowerMetadata)
	}
	return lowered, nil
}

// InstanceMetadata is instances-v2.metadata.
func InstanceMetadata(node wit.Node) abi.Result[wit.InstanceMetadata, wit.CloudError] {
	instances, err := InstancesV2()
	if err != nil {
		return Failed[wit.InstanceMetadata](err)
	}
	metadata, err := instances.InstanceMetadata(Context(), LiftNode(node))
	return Result(metadata, err, LowerMetadata)
}

// NodeAddresses is instances.node-addresses.
func NodeAddresses(nodeName string) addressResult {
	instances, err := Instances()
	if err != nil {
		return Failed[[]wit.NodeAddress](err)
	}
	addresses, err := instances.NodeAddresses(Context(), types.NodeName(nodeName))
	return Result(addresses, err, LowerAddresses)
}

// NodeAddressesByProviderID is instances.node-addresses-by-provider-id.
func NodeAddressesByProviderID(providerID string) addressResult {
	instances, err := Instances()
	if err != nil {
		return Failed[[]wit.NodeAddress](err)
	}
	addresses, err := instances.NodeAddressesByProviderID(Context(), providerID)
	return Result(addresses, err, LowerAddresses)
}

// InstanceID is instances.instance-id.
func InstanceID(nodeName string) stringResult {
	instances, err := Instances()
	if err != nil {
		return Failed[string](err)
	}
	id, err := instances.InstanceID(Context(), types.NodeName(nodeName))
	return Result(id, err, Same)
}

// InstanceType is instances.instance-type.
func InstanceType(nodeName string) stringResult {
	instances, err := Instances()
	if err != nil {
		return Failed[string](err)
	}
	instanceType, err := instances.InstanceType(Context(), types.NodeName(nodeName))
	return Result(instanceType, err, Same)
}

// InstanceTypeByProviderID is instances.instance-type-by-provider-id.
func InstanceTypeByProviderID(providerID string) stringResult {
	instances, err := Instances()
	if err != nil {
		return Failed[string](err)
	}
	instanceType, err := instances.InstanceTypeByProviderID(Context(), providerID)
	return Result(instanceType, err, Same)
}

// AddSSHKeyToAllInstances is instances.add-ssh-key-to-all-instances.
func AddSSHKeyToAllInstances(user string, keyData []byte) unitResult {
	instances, err := Instances()
	if err != nil {
		return Done(err)
	}
	return Done(instances.AddSSHKeyToAllInstances(Context(), user, keyData))
}

// CurrentNodeName is instances.current-node-name.
func CurrentNodeName(hostname string) stringResult {
	instances, err := Instances()
	if err != nil {
		return Failed[string](err)
	}
	name, err := instances.CurrentNodeName(Context(), hostname)
	return Result(name, err, LowerNodeName)
}

// InstanceExistsByProviderID is instances.instance-exists-by-provider-id.
func InstanceExistsByProviderID(providerID string) boolResult {
	instances, err := Instances()
	if err != nil {
		return Failed[bool](err)
	}
	exists, err := instances.InstanceExistsByProviderID(Context(), providerID)
	return Result(exists, err, Same)
}

// InstanceShutdownByProviderID is instances.instance-shutdown-by-provider-id.
func InstanceShutdownByProviderID(providerID string) boolResult {
	instances, err := Instances()
	if err != nil {
		return Failed[bool](err)
	}
	shutdown, err := instances.InstanceShutdownByProviderID(Context(), providerID)
	return Result(shutdown, err, Same)
}

// GetZone is zones.get-zone.
func GetZone() zoneResult {
	zones, err := Zones()
	if err != nil {
		return Failed[wit.Zone](err)
	}
	zone, err := zones.GetZone(Context())
	return Result(zone, err, LowerZone)
}

// GetZoneByProviderID is zones.get-zone-by-provider-id.
func GetZoneByProviderID(providerID string) zoneResult {
	zones, err := Zones()
	if err != nil {
		return Failed[wit.Zone](err)
	}
	zone, err := zones.GetZoneByProviderID(Context(), providerID)
	return Result(zone, err, LowerZone)
}

// GetZoneByNodeName is zones.get-zone-by-node-name.
func GetZoneByNodeName(nodeName string) zoneResult {
	zones, err := Zones()
	if err != nil {
		return Failed[wit.Zone](err)
	}
	zone, err := zones.GetZoneByNodeName(Context(), types.NodeName(nodeName))
	return Result(zone, err, LowerZone)
}

// ListClusters is clusters.list-clusters.
func ListClusters() abi.Result[[]string, wit.CloudError] {
	clusters, err := Clusters()
	if err != nil {
		return Failed[[]string](err)
	}
	names, err := clusters.ListClusters(Context())
	return Result(names, err, Same)
}

// Master is clusters.master.
func Master(clusterName string) stringResult {
	clusters, err := Clusters()
	if err != nil {
		return Failed[string](err)
	}
	address, err := clusters.Master(Context(), clusterName)
	return Result(address, err, Same)
}

// ListRoutes is routes.list-routes.
func ListRoutes(clusterName string) abi.Result[[]wit.Route, wit.CloudError] {
	routes, err := Routes()
	if err != nil {
		return Failed[[]wit.Route](err)
	}
	listed, err := routes.ListRoutes(Context(), clusterName)
	return Result(listed, err, LowerRoutes)
}

// CreateRoute is routes.create-route.
func CreateRoute(clusterName, nameHint string, route wit.Route) unitResult {
	routes, err := Routes()
	if err != nil {
		return Done(err)
	}
	return Done(routes.CreateRoute(Context(), clusterName, nameHint, LiftRoute(route)))
}

// DeleteRoute is routes.delete-route.
func DeleteRoute(clusterName string, route wit.Route) unitResult {
	routes, err := Routes()
	if err != nil {
		return Done(err)
	}
	return Done(routes.DeleteRoute(Context(), clusterName, LiftRoute(route)))
}
