// Package native runs a provider outside a component, as a plain Go
// program: for its unit tests and for benchmarks against the component.
//
// Natively, hosthttp, credentials and hostlog go to the Host installed with
// SetHost; until one is, requests fail, no credential is bound and logs go
// to stderr. HTTPHost sends requests with net/http, so a test can aim a
// provider at an httptest.Server.
package native

import "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/host"

// Host is what a natively running provider reaches instead of the host's
// imports.
type Host = host.Backend

// Request is an HTTP request as the host receives it.
type Request = host.Request

// Response is an HTTP response as the host returns it.
type Response = host.Response

// Header is one header line of a Request or Response.
type Header = host.Header

// Field is a log record's key and value.
type Field = host.Field

// SetHost installs the host every natively running provider of this
// process uses; nil uninstalls it.
func SetHost(h Host) {
	host.Use(h)
}
