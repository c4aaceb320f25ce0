package upstream

import (
	"errors"

	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
)

// sentinels pairs upstream's sentinel errors with the SDK's.
var sentinels = []struct{ upstream, lean error }{
	{cloudprovider.InstanceNotFound, lean.InstanceNotFound},
	{cloudprovider.NotImplemented, lean.NotImplemented},
	{cloudprovider.ImplementedElsewhere, lean.ImplementedElsewhere},
}

// fromError is err as the SDK reads it: wrapping one of upstream's
// sentinels, it is also the SDK's; wrapping upstream's *api.RetryError, it
// is the SDK's retry with its delay and err's whole message; anything else
// is err.
func fromError(err error) error {
	if err == nil {
		return nil
	}
	for _, sentinel := range sentinels {
		if errors.Is(err, sentinel.upstream) {
			return &translated{err: err, sentinel: sentinel.lean}
		}
	}
	var retry *api.RetryError
	if errors.As(err, &retry) {
		return lean.NewRetryError(err.Error(), retry.RetryAfter())
	}
	return err
}

// translated is a provider's error that wraps one of upstream's sentinels,
// with its message, also matching the SDK's sentinel.
type translated struct {
	err      error
	sentinel error
}

func (t *translated) Error() string {
	return t.err.Error()
}

func (t *translated) Unwrap() []error {
	return []error{t.err, t.sentinel}
}
