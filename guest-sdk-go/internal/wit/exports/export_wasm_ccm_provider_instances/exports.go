//go:build wasip1

// Package export_wasm_ccm_provider_instances implements the world's
// instances export for the generated bindings.
package export_wasm_ccm_provider_instances

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func NodeAddresses(nodeName string) abi.Result[[]wit.NodeAddress, wit.CloudError] {
	return glue.NodeAddresses(nodeName)
}

func NodeAddressesByProviderId(providerID string) abi.Result[[]wit.NodeAddress, wit.CloudError] {
	return glue.NodeAddressesByProviderID(providerID)
}

func InstanceId(nodeName string) abi.Result[string, wit.CloudError] { return glue.InstanceID(nodeName) }

func InstanceType(nodeName string) abi.Result[string, wit.CloudError] {
	return glue.InstanceType(nodeName)
}

func InstanceTypeByProviderId(providerID string) abi.Result[string, wit.CloudError] {
	return glue.InstanceTypeByProviderID(providerID)
}

func AddSshKeyToAllInstances(user string, keyData []uint8) abi.Result[abi.Unit, wit.CloudError] {
	return glue.AddSSHKeyToAllInstances(user, keyData)
}

func CurrentNodeName(hostname string) abi.Result[string, wit.CloudError] {
	return glue.CurrentNodeName(hostname)
}

func InstanceExistsByProviderId(providerID string) abi.Result[bool, wit.CloudError] {
	return glue.InstanceExistsByProviderID(providerID)
}

func InstanceShutdownByProviderId(providerID string) abi.Result[bool, wit.CloudError] {
	return glue.InstanceShutdownByProviderID(providerID)
}
