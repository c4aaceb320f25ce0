package upstream

import (
	"context"

	leantypes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// zones is upstream's Zones seen through the SDK's.
type zones struct {
	part cloudprovider.Zones
}

func (z zones) GetZone(ctx context.Context) (lean.Zone, error) {
	zone, err := z.part.GetZone(ctx)
	return fromZone(zone), fromError(err)
}

func (z zones) GetZoneByProviderID(ctx context.Context, providerID string) (lean.Zone, error) {
	zone, err := z.part.GetZoneByProviderID(ctx, providerID)
	return fromZone(zone), fromError(err)
}

func (z zones) GetZoneByNodeName(ctx context.Context, nodeName leantypes.NodeName) (lean.Zone, error) {
	zone, err := z.part.GetZoneByNodeName(ctx, types.NodeName(nodeName))
	return fromZone(zone), fromError(err)
}

func fromZone(zone cloudprovider.Zone) lean.Zone {
	return lean.Zone{FailureDomain: zone.FailureDomain, Region: zone.Region}
}
