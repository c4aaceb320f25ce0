package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	leanv1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	leanmeta "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"
	leantypes "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/cloud-provider/fake"
)

func ptr[T any](value T) *T {
	return &value
}

// A Service with every field the contract carries, and upstream's.
func services() (*leanv1.Service, *v1.Service) {
	meta := leanmeta.ObjectMeta{Name: "web", Namespace: "shop", UID: "0f6e-42", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"lb/kind": "nlb"}}
	service := &leanv1.Service{ObjectMeta: meta, Spec: leanv1.ServiceSpec{
		Ports:                    []leanv1.ServicePort{{Name: "https", Protocol: leanv1.ProtocolTCP, AppProtocol: ptr("https"), Port: 443, NodePort: 30443}},
		Type:                     leanv1.ServiceTypeLoadBalancer,
		LoadBalancerIP:           "192.0.2.7",
		LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
		ExternalTrafficPolicy:    leanv1.ServiceExternalTrafficPolicyLocal,
		HealthCheckNodePort:      32000,
		IPFamilies:               []leanv1.IPFamily{leanv1.IPv4Protocol, leanv1.IPv6Protocol},
		SessionAffinity:          leanv1.ServiceAffinityClientIP,
		SessionAffinityConfig:    &leanv1.SessionAffinityConfig{ClientIP: &leanv1.ClientIPConfig{TimeoutSeconds: ptr(int32(600))}},
		LoadBalancerClass:        ptr("acme/nlb"),
	}}
	want := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "0f6e-42", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"lb/kind": "nlb"}},
		Spec: v1.ServiceSpec{
			Ports:                    []v1.ServicePort{{Name: "https", Protocol: v1.ProtocolTCP, AppProtocol: ptr("https"), Port: 443, NodePort: 30443}},
			Type:                     v1.ServiceTypeLoadBalancer,
			LoadBalancerIP:           "192.0.2.7",
			LoadBalancerSourceRanges: []string{"10.0.0.0/8"},
			ExternalTrafficPolicy:    v1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort:      32000,
			IPFamilies:               []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol},
			SessionAffinity:          v1.ServiceAffinityClientIP,
			SessionAffinityConfig:    &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr(int32(600))}},
			LoadBalancerClass:        ptr("acme/nlb"),
		},
	}
	return service, want
}

// A Node with every field the contract carries, and upstream's.
func nodes(name string) (*leanv1.Node, *v1.Node) {
	node := &leanv1.Node{
		ObjectMeta: leanmeta.ObjectMeta{Name: name, UID: leantypes.UID("uid-" + name), Labels: map[string]string{"zone": "a"}},
		Spec: leanv1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}, ProviderID: "fake://" + name,
			Taints: []leanv1.Taint{{Key: "dedicated", Value: "lb", Effect: leanv1.TaintEffectNoSchedule}}},
		Status: leanv1.NodeStatus{
			Addresses:  []leanv1.NodeAddress{{Type: leanv1.NodeInternalIP, Address: "10.0.0.1"}},
			Conditions: []leanv1.NodeCondition{{Type: leanv1.NodeReady, Status: leanv1.ConditionTrue, Reason: "KubeletReady", Message: "ready"}},
		},
	}
	want := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"zone": "a"}},
		Spec: v1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}, ProviderID: "fake://" + name,
			Taints: []v1.Taint{{Key: "dedicated", Value: "lb", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "ready"}},
		},
	}
	return node, want
}

func TestServicesAndNodesReachUpstreamWhole(t *testing.T) {
	service, wantService := services()
	nodeB, wantB := nodes("node-b")
	nodeA, wantA := nodes("node-a")
	provider := &fake.Cloud{ExternalIP: net.ParseIP("198.51.100.4")}
	balancer, ok := Adapt(provider).LoadBalancer()
	if !ok {
		t.Fatal("the fake's load balancer is not adapted")
	}
	if _, err := balancer.EnsureLoadBalancer(context.Background(), "kubernetes", service, lean.NewNodeSet(nodeB, nodeA)); err != nil {
		t.Fatal(err)
	}
	if len(provider.EnsureCalls) != 1 {
		t.Fatalf("ensure calls: %+v", provider.EnsureCalls)
	}
	call := provider.EnsureCalls[0]
	if !reflect.DeepEqual(call.Service, wantService) {
		t.Errorf("service:\n got %#v\nwant %#v", call.Service, wantService)
	}
	if !reflect.DeepEqual(call.Hosts, []*v1.Node{wantA, wantB}) {
		t.Errorf("nodes, in name order:\n got %#v\nwant %#v", call.Hosts, []*v1.Node{wantA, wantB})
	}
}

func TestStatusComesBackWhole(t *testing.T) {
	service, _ := services()
	provider := &fake.Cloud{ExternalIP: net.ParseIP("198.51.100.4"), BalancerIPMode: ptr(v1.LoadBalancerIPModeProxy)}
	balancer, _ := Adapt(provider).LoadBalancer()
	status, err := balancer.EnsureLoadBalancer(context.Background(), "kubernetes", service, lean.NewNodeSet())
	if err != nil {
		t.Fatal(err)
	}
	want := &leanv1.LoadBalancerStatus{Ingress: []leanv1.LoadBalancerIngress{{
		IP:     "198.51.100.4",
		IPMode: ptr(leanv1.LoadBalancerIPModeProxy),
		Ports:  []leanv1.PortStatus{{Port: 443, Protocol: leanv1.ProtocolTCP}},
	}}}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("status:\n got %#v\nwant %#v", status, want)
	}
	if name := balancer.GetLoadBalancerName(context.Background(), "kubernetes", service); name != "a0f6e42" {
		t.Errorf("name %q", name)
	}
}

func TestInstancesAnswersComeBack(t *testing.T) {
	node, _ := nodes("node-a")
	addresses := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: "node-a"}}
	provider := &fake.Cloud{
		EnableInstancesV2:  true,
		Addresses:          addresses,
		ProviderID:         map[types.NodeName]string{"node-a": "fake://i-1"},
		InstanceTypes:      map[types.NodeName]string{"fake://node-a": "m5.large"},
		Zone:               cloudprovider.Zone{FailureDomain: "zone-a", Region: "region-1"},
		AdditionalLabels:   map[string]string{"acme/pool": "blue"},
		ExistsByProviderID: true,
	}
	instances, ok := Adapt(provider).InstancesV2()
	if !ok {
		t.Fatal("instances-v2 is not adapted")
	}
	metadata, err := instances.InstanceMetadata(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	want := &lean.InstanceMetadata{
		ProviderID:       "fake://i-1",
		InstanceType:     "m5.large",
		NodeAddresses:    []leanv1.NodeAddress{{Type: leanv1.NodeInternalIP, Address: "10.0.0.1"}, {Type: leanv1.NodeHostName, Address: "node-a"}},
		Zone:             "zone-a",
		Region:           "region-1",
		AdditionalLabels: map[string]string{"acme/pool": "blue"},
	}
	if !reflect.DeepEqual(metadata, want) {
		t.Errorf("metadata:\n got %#v\nwant %#v", metadata, want)
	}
	if exists, err := instances.InstanceExists(context.Background(), node); !exists || err != nil {
		t.Errorf("exists: %v, %v", exists, err)
	}
	zones, _ := Adapt(provider).Zones()
	if zone, err := zones.GetZoneByNodeName(context.Background(), "node-a"); zone != (lean.Zone{FailureDomain: "zone-a", Region: "region-1"}) || err != nil {
		t.Errorf("zone: %+v, %v", zone, err)
	}
}

func TestRoutesGoAndComeBack(t *testing.T) {
	provider := &fake.Cloud{RouteMap: map[string]*fake.Route{}}
	routes, _ := Adapt(provider).Routes()
	route := &lean.Route{TargetNode: "node-a", DestinationCIDR: "10.244.1.0/24", EnableNodeAddresses: true,
		TargetNodeAddresses: []leanv1.NodeAddress{{Type: leanv1.NodeInternalIP, Address: "10.0.0.1"}}}
	if err := routes.CreateRoute(context.Background(), "kubernetes", "uid-a", route); err != nil {
		t.Fatal(err)
	}
	listed, err := routes.ListRoutes(context.Background(), "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	want := *route
	want.Name = "kubernetes-node-a-10.244.1.0/24"
	if len(listed) != 1 || !reflect.DeepEqual(*listed[0], want) {
		t.Errorf("routes: %+v", listed)
	}
}

func TestPartsTheProviderLacksAreNotOffered(t *testing.T) {
	cloud := Adapt(&fake.Cloud{DisableLoadBalancers: true, DisableRoutes: true})
	if part, ok := cloud.LoadBalancer(); ok || part != nil {
		t.Errorf("load balancer: %v, %v", part, ok)
	}
	if part, ok := cloud.Routes(); ok || part != nil {
		t.Errorf("routes: %v, %v", part, ok)
	}
	if part, ok := cloud.InstancesV2(); ok || part != nil {
		t.Errorf("instances-v2 without EnableInstancesV2: %v, %v", part, ok)
	}
	if _, ok := cloud.Instances(); !ok {
		t.Error("instances is not offered")
	}
	if cloud.ProviderName() != "fake" || !cloud.HasClusterID() {
		t.Errorf("name %q, cluster ID %v", cloud.ProviderName(), cloud.HasClusterID())
	}
}

func TestUpstreamErrorsAreTheSDKs(t *testing.T) {
	for _, test := range []struct {
		upstream, lean error
	}{
		{cloudprovider.InstanceNotFound, lean.InstanceNotFound},
		{fmt.Errorf("node-a: %w", cloudprovider.InstanceNotFound), lean.InstanceNotFound},
		{cloudprovider.NotImplemented, lean.NotImplemented},
		{cloudprovider.ImplementedElsewhere, lean.ImplementedElsewhere},
	} {
		got := fromError(test.upstream)
		if !errors.Is(got, test.lean) || !errors.Is(got, test.upstream) || got.Error() != test.upstream.Error() {
			t.Errorf("%v became %v", test.upstream, got)
		}
	}
	retry := fromError(fmt.Errorf("web: %w", api.NewRetryError("still provisioning", 7*time.Second)))
	var leanRetry *lean.RetryError
	if !errors.As(retry, &leanRetry) || leanRetry.RetryAfter() != 7*time.Second || leanRetry.Error() != "web: still provisioning" {
		t.Errorf("retry became %#v", retry)
	}
	other := errors.New("quota exceeded")
	if got := fromError(other); got != other {
		t.Errorf("%v became %v", other, got)
	}
	if fromError(nil) != nil {
		t.Error("nil is an error")
	}

	// Through a call: the fake answers its Err.
	provider := &fake.Cloud{Err: fmt.Errorf("zone lookup: %w", cloudprovider.NotImplemented)}
	zones, _ := Adapt(provider).Zones()
	if _, err := zones.GetZone(context.Background()); !errors.Is(err, lean.NotImplemented) {
		t.Errorf("get-zone answered %v", err)
	}
}

func TestClientBuilderClientsFailEveryRequest(t *testing.T) {
	client := ClientBuilder{}.ClientOrDie("cloud-node-controller")
	_, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if !errors.Is(err, ErrNoAPIServer) {
		t.Fatalf("list nodes answered %v", err)
	}
	config, err := ClientBuilder{}.Config("service-controller")
	if err != nil || config.UserAgent != "service-controller" {
		t.Fatalf("config %+v, %v", config, err)
	}
}

// initialized is an upstream provider that records its Initialize.
type initialized struct {
	fake.Cloud
	builder cloudprovider.ControllerClientBuilder
	stop    <-chan struct{}
}

func (p *initialized) Initialize(builder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	p.builder, p.stop = builder, stop
}

func TestServeBuildsAndInitializesTheRegisteredProvider(t *testing.T) {
	var built *initialized
	var config string
	cloudprovider.RegisterCloudProvider("served", func(reader io.Reader) (cloudprovider.Interface, error) {
		read, err := io.ReadAll(reader)
		config = string(read)
		built = &initialized{Cloud: fake.Cloud{Provider: "served"}}
		return built, err
	})
	Serve("served")
	provider, err := lean.GetCloudProvider("served", strings.NewReader("region: 1"))
	if err != nil || provider == nil {
		t.Fatalf("%v, %v", provider, err)
	}
	if config != "region: 1" || provider.ProviderName() != "served" {
		t.Errorf("config %q, name %q", config, provider.ProviderName())
	}
	if _, ok := built.builder.(ClientBuilder); !ok || built.stop == nil {
		t.Errorf("initialized with %v, %v", built.builder, built.stop)
	}
	select {
	case <-built.stop:
		t.Error("stop is closed")
	default:
	}

	Serve("unregistered")
	if _, err := lean.GetCloudProvider("unregistered", nil); err == nil {
		t.Error("a provider nobody registered was built")
	}
}
