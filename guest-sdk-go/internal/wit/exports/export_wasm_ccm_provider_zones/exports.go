//go:build wasip1

// Package export_wasm_ccm_provider_zones implements the world's zones
// export for the generated bindings.
package export_wasm_ccm_provider_zones

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func GetZone() abi.Result[wit.Zone, wit.CloudError] { return glue.GetZone() }

func GetZoneByProviderId(providerID string) abi.Result[wit.Zone, wit.CloudError] {
	return glue.GetZoneByProviderID(providerID)
}

func GetZoneByNodeName(nodeName string) abi.Result[wit.Zone, wit.CloudError] {
	return glue.GetZoneByNodeName(nodeName)
}
