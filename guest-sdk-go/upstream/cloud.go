package upstream

import (
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	cloudprovider "k8s.io/cloud-provider"
)

// Adapt is provider as the SDK's cloudprovider.Interface, for a native
// test or a factory of one's own; Serve adapts the registered provider
// after its Initialize. Every part provider supports is adapted; the SDK's
// batch interfaces, which upstream lacks, are not implemented, so the host
// asks about one node at a time.
func Adapt(provider cloudprovider.Interface) lean.Interface {
	return &cloud{provider: provider}
}

// cloud is an upstream provider seen through the SDK's interface.
type cloud struct {
	provider cloudprovider.Interface
}

func (c *cloud) LoadBalancer() (lean.LoadBalancer, bool) {
	part, ok := c.provider.LoadBalancer()
	if !ok || part == nil {
		return nil, false
	}
	return loadBalancer{part}, true
}

func (c *cloud) Instances() (lean.Instances, bool) {
	part, ok := c.provider.Instances()
	if !ok || part == nil {
		return nil, false
	}
	return instances{part}, true
}

func (c *cloud) InstancesV2() (lean.InstancesV2, bool) {
	part, ok := c.provider.InstancesV2()
	if !ok || part == nil {
		return nil, false
	}
	return instancesV2{part}, true
}

func (c *cloud) Zones() (lean.Zones, bool) {
	part, ok := c.provider.Zones()
	if !ok || part == nil {
		return nil, false
	}
	return zones{part}, true
}

func (c *cloud) Clusters() (lean.Clusters, bool) {
	part, ok := c.provider.Clusters()
	if !ok || part == nil {
		return nil, false
	}
	return clusters{part}, true
}

func (c *cloud) Routes() (lean.Routes, bool) {
	part, ok := c.provider.Routes()
	if !ok || part == nil {
		return nil, false
	}
	return routes{part}, true
}

func (c *cloud) ProviderName() string {
	return c.provider.ProviderName()
}

func (c *cloud) HasClusterID() bool {
	return c.provider.HasClusterID()
}
