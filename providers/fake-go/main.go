// The fake cloud provider in Go: the same provider as providers/fake, for
// wasm-ccm's tests, written with the Go SDK.
//
// Every part of cloudprovider.Interface is implemented: instances come from
// the configuration; load balancers take addresses from a pool; load
// balancers and routes live in the fake cloud, a small object store reached
// over HTTP (each call runs in a fresh instance, so nothing survives in
// memory), or, with statelessLoadBalancers, load balancers are derived from
// the Service alone. Errors and latency can be injected per function.
package main

import (
	"io"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	_ "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/component"
)

// ProviderName is the fake's name, and the scheme of its provider IDs.
const ProviderName = "fake"

func init() {
	cloudprovider.RegisterCloudProvider(ProviderName, func(config io.Reader) (cloudprovider.Interface, error) {
		return newFake(config)
	})
}

// main is never called: the host calls the component's exports.
func main() {}
