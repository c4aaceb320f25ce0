package upstream

import (
	"context"

	leantypes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// routes is upstream's Routes seen through the SDK's.
type routes struct {
	part cloudprovider.Routes
}

func (r routes) ListRoutes(ctx context.Context, clusterName string) ([]*lean.Route, error) {
	listed, err := r.part.ListRoutes(ctx, clusterName)
	var converted []*lean.Route
	for _, route := range listed {
		if route != nil {
			converted = append(converted, fromRoute(route))
		}
	}
	return converted, fromError(err)
}

func (r routes) CreateRoute(ctx context.Context, clusterName string, nameHint string, route *lean.Route) error {
	return fromError(r.part.CreateRoute(ctx, clusterName, nameHint, toRoute(route)))
}

func (r routes) DeleteRoute(ctx context.Context, clusterName string, route *lean.Route) error {
	return fromError(r.part.DeleteRoute(ctx, clusterName, toRoute(route)))
}

func toRoute(route *lean.Route) *cloudprovider.Route {
	return &cloudprovider.Route{
		Name:                route.Name,
		TargetNode:          types.NodeName(route.TargetNode),
		TargetNodeAddresses: toAddresses(route.TargetNodeAddresses),
		DestinationCIDR:     route.DestinationCIDR,
		Blackhole:           route.Blackhole,
		EnableNodeAddresses: route.EnableNodeAddresses,
	}
}

func fromRoute(route *cloudprovider.Route) *lean.Route {
	return &lean.Route{
		Name:                route.Name,
		TargetNode:          leantypes.NodeName(route.TargetNode),
		TargetNodeAddresses: fromAddresses(route.TargetNodeAddresses),
		DestinationCIDR:     route.DestinationCIDR,
		Blackhole:           route.Blackhole,
		EnableNodeAddresses: route.EnableNodeAddresses,
	}
}
