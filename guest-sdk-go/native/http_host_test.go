package native_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/credentials"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/hosthttp"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/hostlog"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/native"
)

func TestHTTPHostSendsForRealAndAttachesBearerCredentials(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.Header.Get("Authorization")+" "+string(body))
		w.WriteHeader(http.StatusAccepted)
	}))
	defer server.Close()
	var logs bytes.Buffer
	native.SetHost(&native.HTTPHost{
		Credentials: map[string][]byte{"token": []byte("s3cret\n")},
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	defer native.SetHost(nil)

	client := &http.Client{Transport: &hosthttp.Transport{Auth: hosthttp.Bearer{Credential: "token"}}}
	res, err := client.Post(server.URL, "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusAccepted || res.Header.Get("X-Seen") != "POST Bearer s3cret hello" {
		t.Errorf("%d %q", res.StatusCode, res.Header.Get("X-Seen"))
	}

	unknown := &http.Client{Transport: &hosthttp.Transport{Auth: hosthttp.Bearer{Credential: "missing"}}}
	if _, err := unknown.Get(server.URL); err == nil || !strings.Contains(err.Error(), "unknown credential missing") {
		t.Errorf("%v", err)
	}

	if value, err := credentials.GetString("token"); err != nil || value != "s3cret" {
		t.Errorf("%q %v", value, err)
	}
	slog.New(hostlog.NewHandler(nil)).Info("hello", "k", "v")
	if !strings.Contains(logs.String(), "msg=hello k=v") {
		t.Errorf("logs: %q", logs.String())
	}
}
