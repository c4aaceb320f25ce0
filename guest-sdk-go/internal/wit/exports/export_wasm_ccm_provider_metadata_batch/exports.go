//go:build wasip1

// Package export_wasm_ccm_provider_metadata_batch implements the world's
// metadata-batch export for the generated bindings.
package export_wasm_ccm_provider_metadata_batch

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	witnodes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_nodes"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func Metadata(nodes *witnodes.NodeSet) abi.Result[[]abi.Result[wit.InstanceMetadata, wit.CloudError], wit.CloudError] {
	return glue.BatchMetadata(nodes)
}
