// Upstream's cloud-controller-manager (k8s.io/cloud-provider/app) linked with upstream's fake
// provider (k8s.io/cloud-provider/fake), as k8s.io/cloud-provider/sample links a provider: the
// peer the end-to-end tests and benchmarks compare wasm-ccm with.
//
// The fake answers every node with zone "zone-a", region "region-1" and InternalIP 10.0.0.5,
// every load balancer with the ingress IP 203.0.113.10, and keeps its load balancers in memory.
// Its calls are serialised, since the fake's maps are not safe for concurrent syncs.
package main

import (
	"context"
	"io"
	"net"
	"os"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/fake"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/klog/v2"
)

// lockedCloud serialises the calls of the controllers' concurrent syncs.
type lockedCloud struct {
	*fake.Cloud
	mu sync.Mutex
}

func (c *lockedCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, true }

func (c *lockedCloud) GetLoadBalancer(ctx context.Context, cluster string, s *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.GetLoadBalancer(ctx, cluster, s)
}

func (c *lockedCloud) EnsureLoadBalancer(ctx context.Context, cluster string, s *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.EnsureLoadBalancer(ctx, cluster, s, nodes)
}

func (c *lockedCloud) UpdateLoadBalancer(ctx context.Context, cluster string, s *v1.Service, nodes []*v1.Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.UpdateLoadBalancer(ctx, cluster, s, nodes)
}

func (c *lockedCloud) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, s *v1.Service) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.EnsureLoadBalancerDeleted(ctx, cluster, s)
}

func (c *lockedCloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c, true }

func (c *lockedCloud) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.InstanceExists(ctx, node)
}

func (c *lockedCloud) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.InstanceShutdown(ctx, node)
}

func (c *lockedCloud) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Cloud.InstanceMetadata(ctx, node)
}

func init() {
	cloudprovider.RegisterCloudProvider("fake", func(io.Reader) (cloudprovider.Interface, error) {
		return &lockedCloud{Cloud: &fake.Cloud{
			ExternalIP:         net.ParseIP("203.0.113.10"),
			ExistsByProviderID: true,
			EnableInstancesV2:  true,
			Provider:           "fake",
			Zone:               cloudprovider.Zone{FailureDomain: "zone-a", Region: "region-1"},
			Addresses:          []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}},
			ProviderID:         map[types.NodeName]string{},
		}}, nil
	})
}

func main() {
	ccmOptions, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("unable to initialize command options: %v", err)
	}
	command := app.NewCloudControllerManagerCommand(ccmOptions, cloudInitializer, app.DefaultInitFuncConstructors,
		names.CCMControllerAliases(), cliflag.NamedFlagSets{}, wait.NeverStop)
	os.Exit(cli.Run(command))
}

func cloudInitializer(config *config.CompletedConfig) cloudprovider.Interface {
	provider := config.ComponentConfig.KubeCloudShared.CloudProvider
	cloud, err := cloudprovider.InitCloudProvider(provider.Name, provider.CloudConfigFile)
	if err != nil || cloud == nil {
		klog.Fatalf("cloud provider %q could not be initialized: %v", provider.Name, err)
	}
	return cloud
}
