package cloudprovider

import (
	"fmt"
	"io"
	"sync"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/registry"
)

var (
	providersLock sync.Mutex
	providers     = make(map[string]Factory)
)

// RegisterCloudProvider registers the provider the component serves, from
// an init function; a component serves exactly one. A name registered twice
// panics.
func RegisterCloudProvider(name string, cloud Factory) {
	providersLock.Lock()
	defer providersLock.Unlock()
	if _, found := providers[name]; found {
		panic(fmt.Sprintf("cloud provider %q was registered twice", name))
	}
	providers[name] = cloud
	registry.Add(name)
}

// IsCloudProvider says whether a provider of that name is registered.
func IsCloudProvider(name string) bool {
	providersLock.Lock()
	defer providersLock.Unlock()
	_, found := providers[name]
	return found
}

// GetCloudProvider builds the provider registered as name from config (nil
// when there is none); nil, nil when no such provider is registered.
func GetCloudProvider(name string, config io.Reader) (Interface, error) {
	providersLock.Lock()
	factory, found := providers[name]
	providersLock.Unlock()
	if !found {
		return nil, nil
	}
	return factory(config)
}
