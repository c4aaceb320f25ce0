// The acme cloud provider for wasm-ccm: a WebAssembly component of the
// wasm-ccm:provider world, written with wasm-ccm's Go SDK.
package main

import (
	"io"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	_ "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/component" // exports the registered provider
)

// ProviderName is the provider's name, and the scheme of its provider IDs:
// acme://<instance>.
const ProviderName = "acme"

func init() {
	cloudprovider.RegisterCloudProvider(ProviderName, func(config io.Reader) (cloudprovider.Interface, error) {
		return newAcme(config)
	})
}

// main is never called: the host calls the component's exports.
func main() {}
