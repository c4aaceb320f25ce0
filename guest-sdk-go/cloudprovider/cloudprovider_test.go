package cloudprovider_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	metav1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

func TestDefaultLoadBalancerNameIsUpstreams(t *testing.T) {
	service := &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}}
	if name := cloudprovider.DefaultLoadBalancerName(service); name != "a0f1e2d3c4b5a69788796a5b4c3d2e1f" {
		t.Errorf("%q", name)
	}
}

func TestRetryErrorsCarryTheirDelayThroughWrapping(t *testing.T) {
	err := fmt.Errorf("ensuring: %w", cloudprovider.NewRetryError("quota", 3*time.Second))
	var retry *cloudprovider.RetryError
	if !errors.As(err, &retry) || retry.RetryAfter() != 3*time.Second || retry.Error() != "quota" {
		t.Errorf("%v", err)
	}
}

type named string

func (n named) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }
func (n named) Instances() (cloudprovider.Instances, bool)       { return nil, false }
func (n named) InstancesV2() (cloudprovider.InstancesV2, bool)   { return nil, false }
func (n named) Zones() (cloudprovider.Zones, bool)               { return nil, false }
func (n named) Clusters() (cloudprovider.Clusters, bool)         { return nil, false }
func (n named) Routes() (cloudprovider.Routes, bool)             { return nil, false }
func (n named) ProviderName() string                             { return string(n) }
func (n named) HasClusterID() bool                               { return true }

func TestRegisteredProvidersAreBuiltFromTheirConfig(t *testing.T) {
	cloudprovider.RegisterCloudProvider("registry-test", func(config io.Reader) (cloudprovider.Interface, error) {
		if config == nil {
			return named("unconfigured"), nil
		}
		read, _ := io.ReadAll(config)
		return named(read), nil
	})
	if !cloudprovider.IsCloudProvider("registry-test") || cloudprovider.IsCloudProvider("other") {
		t.Error("IsCloudProvider")
	}
	built, err := cloudprovider.GetCloudProvider("registry-test", strings.NewReader("configured"))
	if err != nil || built.ProviderName() != "configured" {
		t.Errorf("%v %v", built, err)
	}
	if built, err := cloudprovider.GetCloudProvider("registry-test", nil); err != nil || built.ProviderName() != "unconfigured" {
		t.Errorf("%v %v", built, err)
	}
	if built, err := cloudprovider.GetCloudProvider("other", nil); built != nil || err != nil {
		t.Errorf("%v %v", built, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	cloudprovider.RegisterCloudProvider("registry-test", nil)
}
