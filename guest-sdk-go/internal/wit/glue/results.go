//go:build wasip1

package glue

import (
	"errors"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	wit "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_types"
)

// Result is value lowered, or err as the contract's error.
func Result[T, W any](value T, err error, lower func(T) (W, error)) abi.Result[W, wit.CloudError] {
	if err == nil {
		var lowered W
		lowered, err = lower(value)
		if err == nil {
			return abi.Ok[W, wit.CloudError](lowered)
		}
	}
	return abi.Err[W](LowerError(err))
}

// Done is success, or err as the contract's error.
func Done(err error) abi.Result[abi.Unit, wit.CloudError] {
	if err != nil {
		return abi.Err[abi.Unit](LowerError(err))
	}
	return abi.Ok[abi.Unit, wit.CloudError](abi.Unit{})
}

// Failed is err as the result of a function answering W.
func Failed[W any](err error) abi.Result[W, wit.CloudError] {
	return abi.Err[W](LowerError(err))
}

// Same lowers a value the contract carries as it is.
func Same[T any](value T) (T, error) {
	return value, nil
}

// LowerError is err as the contract's error: upstream's sentinels and
// retry errors as themselves, anything else as a message.
func LowerError(err error) wit.CloudError {
	var retry *cloudprovider.RetryError
	switch {
	case errors.Is(err, cloudprovider.InstanceNotFound):
		return wit.MakeCloudErrorInstanceNotFound()
	case errors.Is(err, cloudprovider.NotImplemented):
		return wit.MakeCloudErrorNotImplemented()
	case errors.Is(err, cloudprovider.ImplementedElsewhere):
		return wit.MakeCloudErrorImplementedElsewhere()
	case errors.As(err, &retry):
		delay := max(retry.RetryAfter().Milliseconds(), 0)
		return wit.MakeCloudErrorRetry(wit.RetryAfter{DelayMs: uint64(delay), Message: retry.Error()})
	default:
		return wit.MakeCloudErrorOther(err.Error())
	}
}
