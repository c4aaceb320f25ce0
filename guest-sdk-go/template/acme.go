package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/hosthttp"
)

// Acme is the provider, built once per configuration: every call starts
// from a fresh copy of it, so what must last lives in the cloud.
type Acme struct {
	// endpoint is the cloud's API, from the configuration's endpoint.
	endpoint string
	client   *http.Client
}

// newAcme reads the configuration (--cloud-config), JSON here; config is
// nil when there is none.
func newAcme(config io.Reader) (*Acme, error) {
	settings := struct {
		Endpoint string `json:"endpoint"`
	}{Endpoint: "https://api.acme.example"}
	if config != nil {
		if err := json.NewDecoder(config).Decode(&settings); err != nil && err != io.EOF {
			return nil, fmt.Errorf("invalid acme config: %w", err)
		}
	}
	return &Acme{
		endpoint: strings.TrimRight(settings.Endpoint, "/"),
		// The host attaches the credential "token" to every request; the
		// provider never sees it.
		client: &http.Client{Transport: &hosthttp.Transport{Auth: hosthttp.Bearer{Credential: "token"}}},
	}, nil
}

func (a *Acme) ProviderName() string { return ProviderName }

func (a *Acme) HasClusterID() bool { return true }

func (a *Acme) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return a, true }

func (a *Acme) InstancesV2() (cloudprovider.InstancesV2, bool) { return a, true }

func (a *Acme) Instances() (cloudprovider.Instances, bool) { return nil, false }

func (a *Acme) Zones() (cloudprovider.Zones, bool) { return nil, false }

func (a *Acme) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

func (a *Acme) Routes() (cloudprovider.Routes, bool) { return nil, false }

// cloudprovider.InstancesV2. InstanceExists shows how to call the cloud;
// InstanceShutdown and InstanceMetadata answer "not implemented" until
// written.

func (a *Acme) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.endpoint+"/instances/"+node.Name, nil)
	if err != nil {
		return false, err
	}
	res, err := a.client.Do(req)
	if err != nil {
		return false, err
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusNotFound:
		return false, nil
	case res.StatusCode >= 300:
		return false, fmt.Errorf("acme answered %s", res.Status)
	default:
		return true, nil
	}
}

func (a *Acme) InstanceShutdown(context.Context, *v1.Node) (bool, error) {
	return false, cloudprovider.NotImplemented
}

func (a *Acme) InstanceMetadata(context.Context, *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	return nil, cloudprovider.NotImplemented
}

// cloudprovider.LoadBalancer: every method answers "not implemented" until
// written.

func (a *Acme) GetLoadBalancer(context.Context, string, *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return nil, false, cloudprovider.NotImplemented
}

func (a *Acme) GetLoadBalancerName(_ context.Context, _ string, service *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(service)
}

func (a *Acme) EnsureLoadBalancer(context.Context, string, *v1.Service, cloudprovider.NodeSet) (*v1.LoadBalancerStatus, error) {
	return nil, cloudprovider.NotImplemented
}

func (a *Acme) UpdateLoadBalancer(context.Context, string, *v1.Service, cloudprovider.NodeSet) error {
	return cloudprovider.NotImplemented
}

func (a *Acme) EnsureLoadBalancerDeleted(context.Context, string, *v1.Service) error {
	return cloudprovider.NotImplemented
}
