package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	metav1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/native"
)

func TestReadsItsConfigurationAndSupportsItsParts(t *testing.T) {
	provider, err := newAcme(strings.NewReader(`{"endpoint": "https://api.test/"}`))
	if err != nil {
		t.Fatal(err)
	}
	if provider.endpoint != "https://api.test" {
		t.Errorf("endpoint %q", provider.endpoint)
	}
	_, loadBalancer := provider.LoadBalancer()
	_, instances := provider.InstancesV2()
	if !loadBalancer || !instances {
		t.Error("a part is not supported")
	}
}

// TestAsksTheCloudWhetherAnInstanceExists runs the provider natively against
// a cloud with the instance node-a only, its HTTP through the SDK's native
// host, which attaches the credential as the host would.
func TestAsksTheCloudWhetherAnInstanceExists(t *testing.T) {
	cloud := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
		} else if r.URL.Path != "/instances/node-a" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer cloud.Close()
	native.SetHost(&native.HTTPHost{Credentials: map[string][]byte{"token": []byte("s3cret")}})
	defer native.SetHost(nil)

	provider, err := newAcme(strings.NewReader(`{"endpoint": "` + cloud.URL + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"node-a": true, "node-b": false} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if exists, err := provider.InstanceExists(context.Background(), node); err != nil || exists != want {
			t.Errorf("%s: %v %v", name, exists, err)
		}
	}
}
