module github.com/wasm-ccm/wasm-ccm/guest-sdk-go

go 1.24
