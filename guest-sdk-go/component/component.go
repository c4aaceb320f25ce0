// Package component makes a Go program a wasm-ccm provider component:
// imported for its side effects by the provider's main package, it exports
// the provider registered with cloudprovider.RegisterCloudProvider as the
// wasm-ccm:provider world, and points http.DefaultTransport at the host's
// HTTP (hosthttp) and the default slog logger, and so the log package, at
// the host's log (hostlog).
//
//	package main
//
//	import (
//		"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
//		_ "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/component"
//	)
//
//	func init() { cloudprovider.RegisterCloudProvider("acme", newAcme) }
//
//	func main() {} // never called: the host calls the component's exports
//
// Outside GOOS=wasip1 it does nothing, so that the provider's package also
// builds natively for its tests.
package component
