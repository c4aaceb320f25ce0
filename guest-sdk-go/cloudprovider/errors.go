package cloudprovider

import (
	"errors"
	"time"
)

// The errors the controllers treat specially; compare with errors.Is.
var (
	// InstanceNotFound says the cloud has no such instance.
	InstanceNotFound = errors.New("instance not found")
	// NotImplemented says the provider does not implement the call.
	NotImplemented = errors.New("unimplemented")
	// ImplementedElsewhere says another component handles it; the
	// controllers do nothing.
	ImplementedElsewhere = errors.New("implemented by alternate to cloud provider")
)

// RetryError is not a failure: the controllers try again after its delay.
type RetryError struct {
	msg        string
	retryAfter time.Duration
}

// NewRetryError asks the controllers to try again after retryAfter.
func NewRetryError(msg string, retryAfter time.Duration) *RetryError {
	return &RetryError{msg: msg, retryAfter: retryAfter}
}

// Error is the message.
func (re *RetryError) Error() string {
	return re.msg
}

// RetryAfter is the delay.
func (re *RetryError) RetryAfter() time.Duration {
	return re.retryAfter
}
