package hosthttp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/hosthttp"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/native"
)

// recorder answers every request with its answer and keeps what it was sent.
type recorder struct {
	sent   []native.Request
	answer native.Response
	err    error
}

func (r *recorder) Send(request native.Request) (native.Response, error) {
	r.sent = append(r.sent, request)
	return r.answer, r.err
}

func (r *recorder) Credential(string) ([]byte, bool) { return nil, false }

func (r *recorder) Log(slog.Level, string, []native.Field) {}

func use(t *testing.T, host native.Host) {
	t.Helper()
	native.SetHost(host)
	t.Cleanup(func() { native.SetHost(nil) })
}

func TestRequestsReachTheHostAsTheyWereMade(t *testing.T) {
	host := &recorder{answer: native.Response{
		Status:  201,
		Headers: []native.Header{{Name: "content-type", Value: "application/json"}, {Name: "x-id", Value: "1"}, {Name: "x-id", Value: "2"}},
		Body:    []byte(`{"id": 7}`),
	}}
	use(t, host)
	client := &http.Client{Transport: &hosthttp.Transport{Auth: hosthttp.Bearer{Credential: "token"}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example/v1/things?x=1", strings.NewReader("payload"))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Add("X-Tag", "a")
	req.Header.Add("X-Tag", "b")

	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 || res.Status != "201 Created" || string(body) != `{"id": 7}` || res.ContentLength != 9 {
		t.Errorf("response %d %q %q %d", res.StatusCode, res.Status, body, res.ContentLength)
	}
	if got := res.Header.Values("X-Id"); len(got) != 2 || got[0] != "1" || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("response headers %v", res.Header)
	}

	sent := host.sent[0]
	if sent.Method != "POST" || sent.URL != "https://api.example/v1/things?x=1" || string(sent.Body) != "payload" {
		t.Errorf("sent %s %s %q", sent.Method, sent.URL, sent.Body)
	}
	want := []native.Header{{Name: "content-type", Value: "text/plain"}, {Name: "x-tag", Value: "a"}, {Name: "x-tag", Value: "b"}}
	if len(sent.Headers) != len(want) {
		t.Fatalf("sent headers %v", sent.Headers)
	}
	for i := range want {
		if sent.Headers[i] != want[i] {
			t.Errorf("sent headers %v, want %v", sent.Headers, want)
		}
	}
	if sent.Timeout <= 50*time.Second || sent.Timeout > time.Minute {
		t.Errorf("timeout %v is not what is left of the context's minute", sent.Timeout)
	}
	if sent.Auth != (hosthttp.Bearer{Credential: "token"}) {
		t.Errorf("auth %v", sent.Auth)
	}
}

func TestWhatTheHostCannotSendIsRefusedBeforeIt(t *testing.T) {
	host := &recorder{}
	use(t, host)
	client := &http.Client{Transport: &hosthttp.Transport{}}
	cases := map[string]func() (*http.Request, error){
		"method": func() (*http.Request, error) { return http.NewRequest("PROPFIND", "https://api.example/", nil) },
		"body": func() (*http.Request, error) {
			return http.NewRequest("PUT", "https://api.example/", strings.NewReader(strings.Repeat("x", hosthttp.MaxRequestBody+1)))
		},
		"host": func() (*http.Request, error) {
			req, err := http.NewRequest("GET", "https://api.example/", nil)
			req.Host = "other.example"
			return req, err
		},
		"deadline": func() (*http.Request, error) {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			return http.NewRequestWithContext(ctx, "GET", "https://api.example/", nil)
		},
	}
	for name, build := range cases {
		req, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Do(req); err == nil {
			t.Errorf("%s: sent", name)
		}
	}
	if len(host.sent) != 0 {
		t.Errorf("the host was sent %d requests", len(host.sent))
	}
}

func TestHostErrorsKeepTheirKind(t *testing.T) {
	use(t, &recorder{err: &hosthttp.Error{Kind: hosthttp.TimedOut}})
	client := &http.Client{Transport: &hosthttp.Transport{}}
	_, err := client.Get("https://api.example/")
	var urlErr *url.Error
	if !errors.As(err, &urlErr) || !urlErr.Timeout() {
		t.Fatalf("%v is not a timeout", err)
	}
	var hostErr *hosthttp.Error
	if !errors.As(err, &hostErr) || hostErr.Kind != hosthttp.TimedOut {
		t.Fatalf("%v is not the host's error", err)
	}

	use(t, &recorder{err: &hosthttp.Error{Kind: hosthttp.Denied, Reason: "not on the allow-list"}})
	if _, err := client.Get("https://api.example/"); err == nil || !strings.Contains(err.Error(), "HTTP request denied: not on the allow-list") {
		t.Fatalf("%v", err)
	}
}
