//go:build wasip1

// Package export_wasm_ccm_provider_load_balancer implements the world's
// load-balancer export for the generated bindings.
package export_wasm_ccm_provider_load_balancer

import (
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/glue"
	witnodes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_nodes"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

func Get(clusterName string, service wit.Service) abi.Result[abi.Option[wit.LoadBalancerStatus], wit.CloudError] {
	return glue.GetLoadBalancer(clusterName, service)
}

func GetName(clusterName string, service wit.Service) string {
	return glue.GetLoadBalancerName(clusterName, service)
}

func Ensure(clusterName string, service wit.Service, nodes *witnodes.NodeSet) abi.Result[wit.LoadBalancerStatus, wit.CloudError] {
	return glue.EnsureLoadBalancer(clusterName, service, nodes)
}

func Update(clusterName string, service wit.Service, nodes *witnodes.NodeSet) abi.Result[abi.Unit, wit.CloudError] {
	return glue.UpdateLoadBalancer(clusterName, service, nodes)
}

func EnsureDeleted(clusterName string, service wit.Service) abi.Result[abi.Unit, wit.CloudError] {
	return glue.EnsureLoadBalancerDeleted(clusterName, service)
}
