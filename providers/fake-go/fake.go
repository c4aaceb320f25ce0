package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

// Fake is the fake provider, as built for one call.
type Fake struct {
	config      *Config
	clusterName string
	// byNameIndex and byIDIndex find the config's instances, the first of
	// a name or ID.
	byNameIndex map[string]*Instance
	byIDIndex   map[string]*Instance
	// cloud is nil when none is configured: no load balancers (unless
	// stateless) and no routes then.
	cloud *Cloud
}

func newFake(config io.Reader) (*Fake, error) {
	var raw []byte
	if config != nil {
		var err error
		if raw, err = io.ReadAll(config); err != nil {
			return nil, fmt.Errorf("reading the fake provider config: %w", err)
		}
	}
	parsed, err := ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	if err := parsed.Inject("provider.initialize"); err != nil {
		return nil, err
	}
	fake := &Fake{config: parsed, byNameIndex: map[string]*Instance{}, byIDIndex: map[string]*Instance{}}
	for i := range parsed.Instances {
		instance := &parsed.Instances[i]
		if _, found := fake.byNameIndex[instance.Name]; !found {
			fake.byNameIndex[instance.Name] = instance
		}
		if _, found := fake.byIDIndex[instance.ID]; !found {
			fake.byIDIndex[instance.ID] = instance
		}
	}
	if parsed.Cloud != nil {
		fake.cloud = NewCloud(*parsed.Cloud)
	}
	return fake, nil
}

// Initialize keeps the cluster's name, the default answer of ListClusters.
func (f *Fake) Initialize(clusterName string) error {
	f.clusterName = clusterName
	return nil
}

func (f *Fake) enabled(part string) bool {
	return !slices.Contains(f.config.DisabledParts, part)
}

func (f *Fake) ProviderName() string { return ProviderName }

func (f *Fake) HasClusterID() bool { return f.config.HasClusterID }

func (f *Fake) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	stored := f.cloud != nil || f.config.StatelessLoadBalancers
	return f, f.enabled("load-balancer") && stored
}

func (f *Fake) Instances() (cloudprovider.Instances, bool) {
	return f, f.enabled("instances")
}

// InstancesV2 answers in batches unless maxBatch is 0; then it has only
// upstream's per-node methods, as a provider written for upstream.
func (f *Fake) InstancesV2() (cloudprovider.InstancesV2, bool) {
	if *f.config.MaxBatch == 0 {
		return perNode{f}, f.enabled("instances-v2")
	}
	return f, f.enabled("instances-v2")
}

// perNode is an InstancesV2 and nothing more.
type perNode struct{ cloudprovider.InstancesV2 }

func (f *Fake) Zones() (cloudprovider.Zones, bool) {
	return f, f.enabled("zones")
}

func (f *Fake) Clusters() (cloudprovider.Clusters, bool) {
	return f, f.enabled("clusters")
}

func (f *Fake) Routes() (cloudprovider.Routes, bool) {
	return f, f.enabled("routes") && f.cloud != nil
}

func (f *Fake) ListClusters(context.Context) ([]string, error) {
	if err := f.config.Inject("clusters.list-clusters"); err != nil {
		return nil, err
	}
	if f.config.Clusters != nil {
		return *f.config.Clusters, nil
	}
	return []string{f.clusterName}, nil
}

func (f *Fake) Master(_ context.Context, clusterName string) (string, error) {
	if err := f.config.Inject("clusters.master"); err != nil {
		return "", err
	}
	if f.config.Master == nil {
		return "", fmt.Errorf("no master is configured for cluster %s", clusterName)
	}
	return *f.config.Master, nil
}
