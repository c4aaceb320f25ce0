// Upstream's fake cloud provider, k8s.io/cloud-provider/fake as
// Kubernetes publishes it, served as a wasm-ccm component through the Go
// SDK's upstream adapter: the proof that a provider written against the
// real k8s.io/cloud-provider builds into a component unchanged.
//
// The factory builds a *fake.Cloud as upstream's tests do, its exported
// fields read from --cloud-config as JSON (none without one). The fake
// keeps its load balancers, routes and call records in memory, which does
// not outlive a call here: every call runs in a fresh instance.
package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/upstream"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"
)

// providerName is the name the fake is registered under, upstream's fake's
// own.
const providerName = "fake"

func init() {
	cloudprovider.RegisterCloudProvider(providerName, newFake)
	upstream.Serve(providerName)
}

// newFake is upstream's fake with the fields config sets, and an empty
// route table, which its CreateRoute needs.
func newFake(config io.Reader) (cloudprovider.Interface, error) {
	cloud := &fake.Cloud{RouteMap: map[string]*fake.Route{}}
	if config != nil {
		if err := json.NewDecoder(config).Decode(cloud); err != nil {
			return nil, fmt.Errorf("reading the fake's configuration: %w", err)
		}
	}
	return cloud, nil
}

// main is never called: the host calls the component's exports.
func main() {}
