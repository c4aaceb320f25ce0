// Package component makes a Go program a wasm-ccm provider component:
// imported for its side effects by the provider's main package, it exports
// the provider registered with cloudprovider.RegisterCloudProvider as the
// wasm-ccm:provider world, points the default slog logger, and so the log
// package, at the host's log (hostlog), and http.DefaultTransport at the
// host's HTTP (hosthttp) when the provider starts, before its factory:
// after every package's init, some of which (k8s.io/apimachinery's) expect
// Go's own transport there.
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
