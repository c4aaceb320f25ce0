//go:build wasip1

// Package export_wasm_ccm_provider_provider implements the world's
// provider export for the generated bindings.
package export_wasm_ccm_provider_provider

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	witprovider "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_provider"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func Name() string { return glue.Name() }

func Initialize(config []uint8, clusterName string) abi.Result[abi.Unit, wit.CloudError] {
	return glue.InitializeProvider(config, clusterName)
}

func HasClusterId() bool { return glue.HasClusterID() }

func SupportedParts() witprovider.Parts { return glue.SupportedParts() }
