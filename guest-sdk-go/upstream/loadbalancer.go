package upstream

import (
	"context"

	leanv1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	cloudprovider "k8s.io/cloud-provider"
)

// loadBalancer is upstream's LoadBalancer seen through the SDK's; it reads
// every node of a NodeSet whole, as upstream takes them.
type loadBalancer struct {
	part cloudprovider.LoadBalancer
}

func (l loadBalancer) GetLoadBalancer(ctx context.Context, clusterName string, service *leanv1.Service) (*leanv1.LoadBalancerStatus, bool, error) {
	status, exists, err := l.part.GetLoadBalancer(ctx, clusterName, toService(service))
	return fromStatus(status), exists, fromError(err)
}

func (l loadBalancer) GetLoadBalancerName(ctx context.Context, clusterName string, service *leanv1.Service) string {
	return l.part.GetLoadBalancerName(ctx, clusterName, toService(service))
}

func (l loadBalancer) EnsureLoadBalancer(ctx context.Context, clusterName string, service *leanv1.Service, nodes lean.NodeSet) (*leanv1.LoadBalancerStatus, error) {
	status, err := l.part.EnsureLoadBalancer(ctx, clusterName, toService(service), toNodes(nodes))
	return fromStatus(status), fromError(err)
}

func (l loadBalancer) UpdateLoadBalancer(ctx context.Context, clusterName string, service *leanv1.Service, nodes lean.NodeSet) error {
	return fromError(l.part.UpdateLoadBalancer(ctx, clusterName, toService(service), toNodes(nodes)))
}

func (l loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, service *leanv1.Service) error {
	return fromError(l.part.EnsureLoadBalancerDeleted(ctx, clusterName, toService(service)))
}
