//go:build wasip1

package glue

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	abi "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/cabi/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/host"
	witcredentials "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_credentials"
	withttp "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_http"
	witlog "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/internal/wit/imports/wasm_ccm_provider_log"
)

// Backend is the SDK's host over the world's imports.
type Backend struct{}

var methods = map[string]withttp.Method{
	http.MethodGet:     withttp.Method_Get,
	http.MethodHead:    withttp.Method_Head,
	http.MethodPost:    withttp.Method_Post,
	http.MethodPut:     withttp.Method_Put,
	http.MethodPatch:   withttp.Method_Patch,
	http.MethodDelete:  withttp.Method_Delete,
	http.MethodOptions: withttp.Method_Options,
}

// Send is http.send.
func (Backend) Send(request host.Request) (host.Response, error) {
	method, found := methods[request.Method]
	if !found {
		return host.Response{}, &host.HTTPError{Kind: host.InvalidRequest, Reason: fmt.Sprintf("method %q is not one the host sends", request.Method)}
	}
	headers := make([]abi.Tuple2[string, string], len(request.Headers))
	for i, header := range request.Headers {
		headers[i] = abi.Tuple2[string, string]{F0: header.Name, F1: header.Value}
	}
	result := withttp.Send(withttp.Request{
		Method:    method,
		Url:       request.URL,
		Headers:   headers,
		Body:      request.Body,
		TimeoutMs: timeoutMillis(request.Timeout),
		Auth:      lowerAuth(request.Auth),
	})
	if result.IsErr() {
		return host.Response{}, liftHTTPError(result.Err())
	}
	response := result.Ok()
	lifted := host.Response{Status: int(response.Status), Headers: make([]host.Header, len(response.Headers)), Body: response.Body}
	for i, header := range response.Headers {
		lifted.Headers[i] = host.Header{Name: header.F0, Value: header.F1}
	}
	return lifted, nil
}

// timeoutMillis is timeout in whole milliseconds, rounded up; none for zero.
func timeoutMillis(timeout time.Duration) abi.Option[uint32] {
	if timeout <= 0 {
		return abi.None[uint32]()
	}
	millis := (timeout + time.Millisecond - 1) / time.Millisecond
	return abi.Some(uint32(min(int64(millis), math.MaxUint32)))
}

func lowerAuth(auth host.Auth) abi.Option[withttp.RequestAuth] {
	switch auth := auth.(type) {
	case host.Bearer:
		return abi.Some(withttp.MakeRequestAuthBearer(auth.Credential))
	case host.AWSSigV4:
		return abi.Some(withttp.MakeRequestAuthAwsSigv4(withttp.AwsSigv4{
			Region:          auth.Region,
			Service:         auth.Service,
			AccessKeyId:     auth.AccessKeyID,
			SecretAccessKey: auth.SecretAccessKey,
			SessionToken:    optional(auth.SessionToken),
		}))
	default:
		return abi.None[withttp.RequestAuth]()
	}
}

func liftHTTPError(err withttp.Error) *host.HTTPError {
	switch err.Tag() {
	case withttp.Error_Denied:
		return &host.HTTPError{Kind: host.Denied, Reason: err.Denied()}
	case withttp.Error_InvalidRequest:
		return &host.HTTPError{Kind: host.InvalidRequest, Reason: err.InvalidRequest()}
	case withttp.Error_TooLarge:
		return &host.HTTPError{Kind: host.TooLarge, Reason: err.TooLarge()}
	case withttp.Error_Timeout:
		return &host.HTTPError{Kind: host.TimedOut}
	default:
		return &host.HTTPError{Kind: host.TransportFailure, Reason: err.Transport()}
	}
}

// Credential is credentials.get.
func (Backend) Credential(name string) ([]byte, bool) {
	result := witcredentials.Get(name)
	if result.IsErr() {
		return nil, false
	}
	return result.Ok(), true
}

// Log is log.emit, slog's levels mapped onto the host's.
func (Backend) Log(level slog.Level, message string, fields []host.Field) {
	lowered := make([]abi.Tuple2[string, string], len(fields))
	for i, field := range fields {
		lowered[i] = abi.Tuple2[string, string]{F0: field.Key, F1: field.Value}
	}
	witlog.Emit(logLevel(level), message, lowered)
}

func logLevel(level slog.Level) witlog.Level {
	switch {
	case level < slog.LevelDebug:
		return witlog.Level_Trace
	case level < slog.LevelInfo:
		return witlog.Level_Debug
	case level < slog.LevelWarn:
		return witlog.Level_Info
	case level < slog.LevelError:
		return witlog.Level_Warn
	default:
		return witlog.Level_Error
	}
}
