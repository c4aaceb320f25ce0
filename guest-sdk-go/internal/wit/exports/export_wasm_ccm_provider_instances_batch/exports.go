//go:build wasip1

// Package export_wasm_ccm_provider_instances_batch implements the world's
// instances-batch export for the generated bindings.
package export_wasm_ccm_provider_instances_batch

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	witbatch "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_instances_batch"
	witnodes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_nodes"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func MaxBatch() uint32 { return glue.MaxBatch() }

func States(nodes *witnodes.NodeSet) abi.Result[[]abi.Result[witbatch.InstanceState, wit.CloudError], wit.CloudError] {
	return glue.InstanceStates(nodes)
}
