//go:build wasip1

// Package export_wasm_ccm_provider_routes implements the world's routes
// export for the generated bindings.
package export_wasm_ccm_provider_routes

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func ListRoutes(clusterName string) abi.Result[[]wit.Route, wit.CloudError] {
	return glue.ListRoutes(clusterName)
}

func CreateRoute(clusterName string, nameHint string, route wit.Route) abi.Result[abi.Unit, wit.CloudError] {
	return glue.CreateRoute(clusterName, nameHint, route)
}

func DeleteRoute(clusterName string, route wit.Route) abi.Result[abi.Unit, wit.CloudError] {
	return glue.DeleteRoute(clusterName, route)
}
