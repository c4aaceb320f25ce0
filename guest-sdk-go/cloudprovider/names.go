package cloudprovider

import (
	"strings"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
)

// DefaultLoadBalancerName is upstream's load balancer name: "a" followed by
// the Service's UID without dashes, cut to 32 characters.
func DefaultLoadBalancerName(service *v1.Service) string {
	name := "a" + strings.ReplaceAll(string(service.UID), "-", "")
	if len(name) > 32 {
		name = name[:32]
	}
	return name
}
