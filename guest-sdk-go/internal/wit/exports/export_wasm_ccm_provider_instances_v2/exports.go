//go:build wasip1

// Package export_wasm_ccm_provider_instances_v2 implements the world's
// instances-v2 export for the generated bindings.
package export_wasm_ccm_provider_instances_v2

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func Exists(node wit.Node) abi.Result[bool, wit.CloudError] { return glue.InstanceExists(node) }

func Shutdown(node wit.Node) abi.Result[bool, wit.CloudError] { return glue.InstanceShutdown(node) }

func Metadata(node wit.Node) abi.Result[wit.InstanceMetadata, wit.CloudError] {
	return glue.InstanceMetadata(node)
}
