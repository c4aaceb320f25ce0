module provider-acme

go 1.24

require github.com/wasm-ccm/wasm-ccm/guest-sdk-go v0.0.0

// The Go SDK of a wasm-ccm checkout: point this at yours.
replace github.com/wasm-ccm/wasm-ccm/guest-sdk-go => ..
