//go:build wasip1

// Package export_wasm_ccm_provider_clusters implements the world's
// clusters export for the generated bindings.
package export_wasm_ccm_provider_clusters

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func ListClusters() abi.Result[[]string, wit.CloudError] { return glue.ListClusters() }

func Master(clusterName string) abi.Result[string, wit.CloudError] { return glue.Master(clusterName) }
