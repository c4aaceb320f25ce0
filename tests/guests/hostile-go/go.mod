module github.com/wasm-ccm/wasm-ccm/tests/guests/guest-hostile-go

go 1.24

require github.com/wasm-ccm/wasm-ccm/guest-sdk-go v0.0.0

replace github.com/wasm-ccm/wasm-ccm/guest-sdk-go => ../../../guest-sdk-go
