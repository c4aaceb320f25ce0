package upstream

import (
	"context"

	cloudprovider "k8s.io/cloud-provider"
)

// clusters is upstream's Clusters seen through the SDK's.
type clusters struct {
	part cloudprovider.Clusters
}

func (c clusters) ListClusters(ctx context.Context) ([]string, error) {
	names, err := c.part.ListClusters(ctx)
	return names, fromError(err)
}

func (c clusters) Master(ctx context.Context, clusterName string) (string, error) {
	address, err := c.part.Master(ctx, clusterName)
	return address, fromError(err)
}
