package upstream

import (
	"context"

	leanv1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	leantypes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// instancesV2 is upstream's InstancesV2 seen through the SDK's.
type instancesV2 struct {
	part cloudprovider.InstancesV2
}

func (i instancesV2) InstanceExists(ctx context.Context, node *leanv1.Node) (bool, error) {
	exists, err := i.part.InstanceExists(ctx, toNode(node))
	return exists, fromError(err)
}

func (i instancesV2) InstanceShutdown(ctx context.Context, node *leanv1.Node) (bool, error) {
	shutDown, err := i.part.InstanceShutdown(ctx, toNode(node))
	return shutDown, fromError(err)
}

func (i instancesV2) InstanceMetadata(ctx context.Context, node *leanv1.Node) (*lean.InstanceMetadata, error) {
	metadata, err := i.part.InstanceMetadata(ctx, toNode(node))
	return fromMetadata(metadata), fromError(err)
}

// instances is upstream's first instances API seen through the SDK's.
type instances struct {
	part cloudprovider.Instances
}

func (i instances) NodeAddresses(ctx context.Context, name leantypes.NodeName) ([]leanv1.NodeAddress, error) {
	addresses, err := i.part.NodeAddresses(ctx, types.NodeName(name))
	return fromAddresses(addresses), fromError(err)
}

func (i instances) NodeAddressesByProviderID(ctx context.Context, providerID string) ([]leanv1.NodeAddress, error) {
	addresses, err := i.part.NodeAddressesByProviderID(ctx, providerID)
	return fromAddresses(addresses), fromError(err)
}

func (i instances) InstanceID(ctx context.Context, nodeName leantypes.NodeName) (string, error) {
	id, err := i.part.InstanceID(ctx, types.NodeName(nodeName))
	return id, fromError(err)
}

func (i instances) InstanceType(ctx context.Context, name leantypes.NodeName) (string, error) {
	instanceType, err := i.part.InstanceType(ctx, types.NodeName(name))
	return instanceType, fromError(err)
}

func (i instances) InstanceTypeByProviderID(ctx context.Context, providerID string) (string, error) {
	instanceType, err := i.part.InstanceTypeByProviderID(ctx, providerID)
	return instanceType, fromError(err)
}

func (i instances) AddSSHKeyToAllInstances(ctx context.Context, user string, keyData []byte) error {
	return fromError(i.part.AddSSHKeyToAllInstances(ctx, user, keyData))
}

func (i instances) CurrentNodeName(ctx context.Context, hostname string) (leantypes.NodeName, error) {
	name, err := i.part.CurrentNodeName(ctx, hostname)
	return leantypes.NodeName(name), fromError(err)
}

func (i instances) InstanceExistsByProviderID(ctx context.Context, providerID string) (bool, error) {
	exists, err := i.part.InstanceExistsByProviderID(ctx, providerID)
	return exists, fromError(err)
}

func (i instances) InstanceShutdownByProviderID(ctx context.Context, providerID string) (bool, error) {
	shutDown, err := i.part.InstanceShutdownByProviderID(ctx, providerID)
	return shutDown, fromError(err)
}
