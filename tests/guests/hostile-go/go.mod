module github.com/wasm-ccm/wasm-ccm/tests/guests/guest-hostile-go

go 1.24

require github.com/wasm-ccm/wasm-ccm/guest-sdk-go v0.0.0

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/smithy-go v1.28.9 // indirect
)

replace github.com/wasm-ccm/wasm-ccm/guest-sdk-go => ../../../guest-sdk-go
