// Package hosthttp sends a provider's HTTP requests through the host, the
// provider's only way to reach its cloud, as an http.RoundTripper: existing
// HTTP code and generated cloud SDK clients work unchanged.
//
// Inside a component http.DefaultTransport is a Transport, so
// http.DefaultClient and clients without a transport of their own already
// go through the host. The host checks every request and every redirect
// against the provider's allow-list, follows redirects itself, caps request
// bodies at 1 MiB and response bodies at its --provider-max-response, and
// bounds every request by what is left of the call's deadline.
package hosthttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/host"
)

// Auth is a credential the host attaches to requests: Bearer or AWSSigV4.
type Auth = host.Auth

// Bearer has the host send the credential it names as a bearer token.
type Bearer = host.Bearer

// AWSSigV4 has the host sign requests for AWS; the secret key never enters
// the provider.
type AWSSigV4 = host.AWSSigV4

// Error is a request the host did not answer (an HTTP error status is a
// response, not an Error).
type Error = host.HTTPError

// ErrorKind says why.
type ErrorKind = host.HTTPErrorKind

// The reasons a request fails.
const (
	Denied           = host.Denied
	InvalidRequest   = host.InvalidRequest
	TooLarge         = host.TooLarge
	TimedOut         = host.TimedOut
	TransportFailure = host.TransportFailure
)

// MaxRequestBody is the host's cap on a request body, in bytes.
const MaxRequestBody = 1 << 20

// Transport sends requests through the host.
type Transport struct {
	// Auth is attached by the host to every request; nil for none.
	Auth Auth
}

// The methods the host sends.
var methods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// RoundTrip sends req and reads the whole response. Redirects are followed
// by the host, so the response is the last one.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	request, err := t.lower(req)
	if err != nil {
		return nil, err
	}
	response, err := host.Current().Send(request)
	if err != nil {
		return nil, err
	}
	return lift(req, response), nil
}

// lower is req as the host takes it; it closes req's body.
func (t *Transport) lower(req *http.Request) (host.Request, error) {
	body, err := readBody(req.Body)
	if err != nil {
		return host.Request{}, err
	}
	if err := req.Context().Err(); err != nil {
		return host.Request{}, err
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !slices.Contains(methods, method) {
		return host.Request{}, &Error{Kind: InvalidRequest, Reason: fmt.Sprintf("method %q is not one the host sends", method)}
	}
	if req.URL == nil {
		return host.Request{}, &Error{Kind: InvalidRequest, Reason: "no URL"}
	}
	if req.Host != "" && req.Host != req.URL.Host {
		return host.Request{}, &Error{Kind: InvalidRequest, Reason: fmt.Sprintf("Host %q differs from the URL's host %q", req.Host, req.URL.Host)}
	}
	timeout, err := remaining(req.Context())
	if err != nil {
		return host.Request{}, err
	}
	return host.Request{
		Method:  method,
		URL:     req.URL.String(),
		Headers: lowerHeaders(req.Header),
		Body:    body,
		Timeout: timeout,
		Auth:    t.Auth,
	}, nil
}

// readBody reads and closes body, refusing more than the host takes.
func readBody(body io.ReadCloser) ([]byte, error) {
	if body == nil || body == http.NoBody {
		return nil, nil
	}
	defer body.Close()
	read, err := io.ReadAll(io.LimitReader(body, MaxRequestBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	if len(read) > MaxRequestBody {
		return nil, &Error{Kind: TooLarge, Reason: fmt.Sprintf("request body over %d bytes", MaxRequestBody)}
	}
	return read, nil
}

// remaining is what is left of ctx's deadline, zero when it has none.
func remaining(ctx context.Context) (time.Duration, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, nil
	}
	left := time.Until(deadline)
	if left <= 0 {
		return 0, context.DeadlineExceeded
	}
	return left, nil
}

// lowerHeaders flattens header, in the order of its names.
func lowerHeaders(header http.Header) []host.Header {
	names := make([]string, 0, len(header))
	for name := range header {
		names = append(names, name)
	}
	slices.Sort(names)
	var lowered []host.Header
	for _, name := range names {
		for _, value := range header[name] {
			lowered = append(lowered, host.Header{Name: strings.ToLower(name), Value: value})
		}
	}
	return lowered
}

// lift is the host's response to req as net/http gives it.
func lift(req *http.Request, response host.Response) *http.Response {
	header := make(http.Header, len(response.Headers))
	for _, line := range response.Headers {
		header.Add(line.Name, line.Value)
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", response.Status, http.StatusText(response.Status)),
		StatusCode:    response.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(response.Body)),
		ContentLength: int64(len(response.Body)),
		Request:       req,
	}
}
