// Package upstream runs a provider written against the real
// k8s.io/cloud-provider as a wasm-ccm component: it adapts the
// cloudprovider.Interface a vendor registered with upstream's
// RegisterCloudProvider to the Go SDK's, converting the contract's records
// to upstream's *v1.Service and *v1.Node and back, and upstream's errors to
// the SDK's. The vendor's provider package stays as it is; its main
// package names the provider the component serves:
//
//	package main
//
//	import (
//		"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/upstream"
//		_ "example.com/acme/pkg/cloudprovider" // registers "acme" in its init
//	)
//
//	func init() { upstream.Serve("acme") }
//
//	func main() {} // never called: the host calls the component's exports
//
// What the sandbox replaces: Initialize receives ClientBuilder, whose
// clients fail every request (a provider has no access to the API server),
// and a stop channel that is never closed; an InformerUser is not given
// informers. http.DefaultTransport goes through the host's HTTP, as with
// the SDK (this package imports its component package). os.Args is the
// program name alone, which klog needs. The configuration
// is --cloud-config's, passed to the factory as upstream does. Every call
// runs in a fresh copy of the instance the factory and Initialize left, so
// what the provider keeps in memory between calls is lost.
package upstream

import (
	"fmt"
	"io"

	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	_ "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/component"
	_ "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/upstream/internal/programname"
	cloudprovider "k8s.io/cloud-provider"
)

// stop is the stop channel Initialize receives: never closed, since a
// provider instance ends with its call rather than on a signal.
var stop = make(chan struct{})

// Serve makes the component serve the provider registered with upstream's
// cloudprovider.RegisterCloudProvider as name. Call it from an init
// function (the component never runs main), after the provider's package
// has registered it; a component serves exactly one provider.
func Serve(name string) {
	lean.RegisterCloudProvider(name, func(config io.Reader) (lean.Interface, error) {
		provider, err := cloudprovider.GetCloudProvider(name, config)
		if err != nil {
			return nil, err
		}
		if provider == nil {
			return nil, fmt.Errorf("no cloud provider %q is registered with k8s.io/cloud-provider", name)
		}
		provider.Initialize(ClientBuilder{}, stop)
		return Adapt(provider), nil
	})
}
