//go:build wasip1

// Package glue is the one place where the SDK meets the bindings
// wit-bindgen generates: it builds the registered provider for a call,
// converts the contract's records to and from the SDK's Go types, and
// implements the SDK's host over the world's imports. The packages
// internal/wit/exports/export_* forward each exported function here.
package glue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/hosthttp"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/registry"
)

// current is the provider of this instance, built by Initialize. Every call
// starts from a fresh copy of the instance as Initialize left it.
var current cloudprovider.Interface

var errUninitialized = errors.New("the provider was called before initialize")

// Name is the registered provider's name.
func Name() string {
	name, err := registry.Only()
	if err != nil {
		panic(err)
	}
	return name
}

// Initialize points http.DefaultTransport at the host, builds the
// registered provider from config and hands it the cluster's name.
func Initialize(config []byte, clusterName string) error {
	if current != nil {
		return errors.New("the provider was initialized twice")
	}
	name, err := registry.Only()
	if err != nil {
		return err
	}
	// Only now, after every package's init: k8s.io/apimachinery's init
	// asserts that http.DefaultTransport is Go's *http.Transport.
	http.DefaultTransport = &hosthttp.Transport{}
	var reader io.Reader
	if len(config) > 0 {
		reader = bytes.NewReader(config)
	}
	provider, err := cloudprovider.GetCloudProvider(name, reader)
	if err != nil {
		return err
	}
	if provider == nil {
		return fmt.Errorf("the factory of cloud provider %q built no provider", name)
	}
	if provider.ProviderName() != name {
		return fmt.Errorf("cloud provider %q calls itself %q", name, provider.ProviderName())
	}
	if initializer, ok := provider.(cloudprovider.Initializer); ok {
		if err := initializer.Initialize(clusterName); err != nil {
			return err
		}
	}
	current = provider
	releaseStdio()
	return nil
}

// releaseStdio closes the standard streams, which the WASI adapter opened
// when the Go runtime started, and resets the adapter so that it opens them
// again when they are next used. Streams are the only host resources a Go
// instance holds after Initialize, and the host snapshots an instance that
// holds none once it is initialised: every call then starts from that copy,
// with streams of its own, instead of running the runtime's start-up and
// the provider's factory again.
func releaseStdio() {
	for fd := range 3 {
		_ = syscall.Close(fd)
	}
	resetAdapterState()
}

// resetAdapterState is the WASI preview1 adapter's export for instances
// that are snapshotted: it forgets the adapter's descriptors, so that the
// adapter sets them up afresh on their next use.
//
//go:wasmimport wasi_snapshot_preview1 reset_adapter_state
func resetAdapterState()

// Provider is the instance's provider.
func Provider() (cloudprovider.Interface, error) {
	if current == nil {
		return nil, errUninitialized
	}
	return current, nil
}

// Context is the context of a call: the host enforces its deadline.
func Context() context.Context {
	return context.Background()
}

// part is the part select picks of the provider; NotImplemented when it is
// not supported.
func part[P any](selectPart func(cloudprovider.Interface) (P, bool)) (P, error) {
	var none P
	provider, err := Provider()
	if err != nil {
		return none, err
	}
	selected, ok := selectPart(provider)
	if !ok {
		return none, cloudprovider.NotImplemented
	}
	return selected, nil
}

// LoadBalancer is the provider's load balancer part.
func LoadBalancer() (cloudprovider.LoadBalancer, error) {
	return part(cloudprovider.Interface.LoadBalancer)
}

// Instances is the provider's first instances API.
func Instances() (cloudprovider.Instances, error) {
	return part(cloudprovider.Interface.Instances)
}

// InstancesV2 is the provider's instances API.
func InstancesV2() (cloudprovider.InstancesV2, error) {
	return part(cloudprovider.Interface.InstancesV2)
}

// instancesBatch is the provider's InstancesV2 when it answers in batches;
// NotImplemented otherwise.
func instancesBatch() (cloudprovider.InstancesBatch, error) {
	instances, err := InstancesV2()
	if err != nil {
		return nil, err
	}
	batch, ok := instances.(cloudprovider.InstancesBatch)
	if !ok {
		return nil, cloudprovider.NotImplemented
	}
	return batch, nil
}

// Zones is the provider's zones part.
func Zones() (cloudprovider.Zones, error) {
	return part(cloudprovider.Interface.Zones)
}

// Clusters is the provider's clusters part.
func Clusters() (cloudprovider.Clusters, error) {
	return part(cloudprovider.Interface.Clusters)
}

// Routes is the provider's routes part.
func Routes() (cloudprovider.Routes, error) {
	return part(cloudprovider.Interface.Routes)
}
