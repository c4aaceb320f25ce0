// Package host is the seam between the SDK and what it runs on: the host's
// imports inside a component, the host a native test installs outside one.
// Its types are the imports' records, in Go.
package host

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Backend is what the SDK's HTTP, credentials and logs go to.
type Backend interface {
	// Send sends request, following the redirects the host allows.
	Send(request Request) (Response, error)
	// Credential is the value of the credential name, if one is bound.
	Credential(name string) ([]byte, bool)
	// Log writes a record.
	Log(level slog.Level, message string, fields []Field)
}

// Request is an HTTP request as the host takes it.
type Request struct {
	// Method is GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
	Method string
	// URL is an absolute http or https URL.
	URL     string
	Headers []Header
	Body    []byte
	// Timeout bounds the request when not zero; the call's deadline bounds
	// it anyway.
	Timeout time.Duration
	// Auth is what the host attaches to the request, or nil.
	Auth Auth
}

// Response is an HTTP response read whole.
type Response struct {
	Status int
	// Headers have lower-case names.
	Headers []Header
	Body    []byte
}

// Header is one header line; a name may repeat.
type Header struct {
	Name  string
	Value string
}

// Field is a log record's key and value.
type Field struct {
	Key   string
	Value string
}

// Auth is a credential the host attaches to a request on the provider's
// behalf, so that the secret need not enter the provider: Bearer or
// AWSSigV4.
type Auth interface {
	isAuth()
}

// Bearer has the host send the credential it names as
// `Authorization: Bearer <value>`.
type Bearer struct {
	// Credential names the credential bound to the provider.
	Credential string
}

// AWSSigV4 has the host sign the request with AWS Signature Version 4; the
// fields ending in ID, Key and Token name credentials.
type AWSSigV4 struct {
	Region string
	// Service is the AWS service's signing name, such as ec2.
	Service         string
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken is empty when there is none.
	SessionToken string
}

func (Bearer) isAuth()   {}
func (AWSSigV4) isAuth() {}

// HTTPErrorKind says why the host did not answer a request.
type HTTPErrorKind int

// The reasons a request fails.
const (
	// Denied: the allow-list, or the address check behind it, refused it.
	Denied HTTPErrorKind = iota
	// InvalidRequest: a bad URL, a forbidden header, an unknown credential.
	InvalidRequest
	// TooLarge: the request or the response body is over the host's cap.
	TooLarge
	// TimedOut: no answer in time.
	TimedOut
	// TransportFailure: a connection, TLS or protocol failure.
	TransportFailure
)

// HTTPError is a request the host did not answer.
type HTTPError struct {
	Kind   HTTPErrorKind
	Reason string
}

func (e *HTTPError) Error() string {
	switch e.Kind {
	case Denied:
		return "HTTP request denied: " + e.Reason
	case InvalidRequest:
		return "invalid HTTP request: " + e.Reason
	case TooLarge:
		return "HTTP body too large: " + e.Reason
	case TimedOut:
		return "HTTP request timed out"
	default:
		return "HTTP transport error: " + e.Reason
	}
}

// Timeout says whether the request timed out, as net.Error does.
func (e *HTTPError) Timeout() bool {
	return e.Kind == TimedOut
}

// Temporary is false, as net.Error's deprecated method wants an answer.
func (e *HTTPError) Temporary() bool {
	return false
}

var (
	lock    sync.RWMutex
	current Backend = unconnected{}
)

// Use makes backend the one the SDK calls; nil restores the unconnected
// one.
func Use(backend Backend) {
	if backend == nil {
		backend = unconnected{}
	}
	lock.Lock()
	defer lock.Unlock()
	current = backend
}

// Current is the backend in use.
func Current() Backend {
	lock.RLock()
	defer lock.RUnlock()
	return current
}

// unconnected is the backend of a native process that installed none:
// requests fail, no credential is bound, logs go to stderr.
type unconnected struct{}

var errUnconnected = errors.New("no host is installed: call native.SetHost first")

func (unconnected) Send(Request) (Response, error) {
	return Response{}, &HTTPError{Kind: TransportFailure, Reason: errUnconnected.Error()}
}

func (unconnected) Credential(string) ([]byte, bool) {
	return nil, false
}

func (unconnected) Log(level slog.Level, message string, fields []Field) {
	fmt.Fprintln(os.Stderr, level, message, fields)
}
