// Package registry knows the names of the providers registered in this
// program, for the component's exports to build the one it serves.
package registry

import (
	"errors"
	"fmt"
	"sync"
)

var (
	lock  sync.Mutex
	names []string
)

// Add records that name was registered.
func Add(name string) {
	lock.Lock()
	defer lock.Unlock()
	names = append(names, name)
}

// Only is the name of the one provider registered.
func Only() (string, error) {
	lock.Lock()
	defer lock.Unlock()
	switch len(names) {
	case 0:
		return "", errors.New("no cloud provider is registered: call cloudprovider.RegisterCloudProvider from an init function")
	case 1:
		return names[0], nil
	default:
		return "", fmt.Errorf("a component serves one cloud provider, and %q are registered", names)
	}
}
