package native

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/host"
)

// HTTPHost is a Host that sends requests with net/http, attaching Bearer
// credentials from Credentials as the host would; it cannot sign for AWS.
type HTTPHost struct {
	// Client sends the requests; http.DefaultClient when nil.
	Client *http.Client
	// Credentials are the credentials bound to the provider, by name.
	Credentials map[string][]byte
	// Logger receives the provider's logs; a text logger on stderr, debug
	// and up, when nil.
	Logger *slog.Logger
}

// Send sends request with the client.
func (h *HTTPHost) Send(request Request) (Response, error) {
	ctx := context.Background()
	if request.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, request.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, request.Method, request.URL, bytes.NewReader(request.Body))
	if err != nil {
		return Response{}, &host.HTTPError{Kind: host.InvalidRequest, Reason: err.Error()}
	}
	for _, header := range request.Headers {
		req.Header.Add(header.Name, header.Value)
	}
	if err := h.authenticate(req, request.Auth); err != nil {
		return Response{}, err
	}
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Response{}, &host.HTTPError{Kind: host.TimedOut}
		}
		return Response{}, &host.HTTPError{Kind: host.TransportFailure, Reason: err.Error()}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return Response{}, &host.HTTPError{Kind: host.TransportFailure, Reason: err.Error()}
	}
	var headers []Header
	for name, values := range res.Header {
		for _, value := range values {
			headers = append(headers, Header{Name: strings.ToLower(name), Value: value})
		}
	}
	return Response{Status: res.StatusCode, Headers: headers, Body: body}, nil
}

func (h *HTTPHost) authenticate(req *http.Request, auth host.Auth) error {
	switch auth := auth.(type) {
	case nil:
		return nil
	case host.Bearer:
		token, found := h.Credentials[auth.Credential]
		if !found {
			return &host.HTTPError{Kind: host.InvalidRequest, Reason: "unknown credential " + auth.Credential}
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		return nil
	default:
		return &host.HTTPError{Kind: host.InvalidRequest, Reason: "natively, only bearer credentials are attached"}
	}
}

// Credential is the credential name from Credentials.
func (h *HTTPHost) Credential(name string) ([]byte, bool) {
	value, found := h.Credentials[name]
	return value, found
}

// Log writes the record to the logger.
func (h *HTTPHost) Log(level slog.Level, message string, fields []Field) {
	logger := h.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	attrs := make([]slog.Attr, len(fields))
	for i, field := range fields {
		attrs[i] = slog.String(field.Key, field.Value)
	}
	logger.LogAttrs(context.Background(), level, message, attrs...)
}
