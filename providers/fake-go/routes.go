package main

import (
	"context"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

// Routes, kept in the fake cloud under <cluster>-<name hint>.

const routeCollection = "routes"

// routeRecord is a route as the fake cloud stores it.
type routeRecord struct {
	Cluster         string `json:"cluster"`
	TargetNode      string `json:"targetNode"`
	DestinationCIDR string `json:"destinationCidr"`
}

func (f *Fake) ListRoutes(_ context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	if err := f.config.Inject("routes.list-routes"); err != nil {
		return nil, err
	}
	stored, err := List[routeRecord](f.cloud, routeCollection)
	if err != nil {
		return nil, err
	}
	routes := []*cloudprovider.Route{}
	for _, route := range stored {
		if route.Value.Cluster != clusterName {
			continue
		}
		routes = append(routes, &cloudprovider.Route{
			Name:            route.Key,
			TargetNode:      types.NodeName(route.Value.TargetNode),
			DestinationCIDR: route.Value.DestinationCIDR,
			Blackhole:       !f.isRunning(route.Value.TargetNode),
		})
	}
	return routes, nil
}

func (f *Fake) CreateRoute(_ context.Context, clusterName, nameHint string, route *cloudprovider.Route) error {
	if err := f.config.Inject("routes.create-route"); err != nil {
		return err
	}
	if !f.isRunning(string(route.TargetNode)) {
		return cloudprovider.InstanceNotFound
	}
	stored := routeRecord{Cluster: clusterName, TargetNode: string(route.TargetNode), DestinationCIDR: route.DestinationCIDR}
	_, err := f.cloud.Put(routeCollection, clusterName+"-"+nameHint, stored, Whatever)
	return err
}

func (f *Fake) DeleteRoute(_ context.Context, _ string, route *cloudprovider.Route) error {
	if err := f.config.Inject("routes.delete-route"); err != nil {
		return err
	}
	_, err := f.cloud.Delete(routeCollection, route.Name)
	return err
}
