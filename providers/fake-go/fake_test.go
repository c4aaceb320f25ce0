package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	metav1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

// objectStore is the fake cloud's object store, as tests/fake-cloud serves
// it, in memory.
type objectStore struct {
	lock    sync.Mutex
	version uint64
	objects map[string]map[string]Stored[json.RawMessage]
}

func (s *objectStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.lock.Lock()
	defer s.lock.Unlock()
	path := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	collection := s.objects[path[0]]
	if collection == nil {
		collection = map[string]Stored[json.RawMessage]{}
		s.objects[path[0]] = collection
	}
	if len(path) == 1 {
		list := []Stored[json.RawMessage]{}
		for _, object := range collection {
			list = append(list, object)
		}
		_ = json.NewEncoder(w).Encode(list)
		return
	}
	key := path[1]
	current, exists := collection[key]
	switch r.Method {
	case http.MethodGet:
		if !exists {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(current)
	case http.MethodDelete:
		if !exists {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		delete(collection, key)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPut:
		match := r.Header.Get("If-Match")
		if (r.Header.Get("If-None-Match") == "*" && exists) || (match != "" && (!exists || match != strconv.FormatUint(current.Version, 10))) {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.version++
		collection[key] = Stored[json.RawMessage]{Key: key, Version: s.version, Value: body}
		w.WriteHeader(http.StatusCreated)
	}
}

func (s *objectStore) count(collection string) int {
	s.lock.Lock()
	defer s.lock.Unlock()
	return len(s.objects[collection])
}

func start(t *testing.T, config string) (*Fake, *objectStore) {
	t.Helper()
	store := &objectStore{objects: map[string]map[string]Stored[json.RawMessage]{}}
	server := httptest.NewServer(store)
	t.Cleanup(server.Close)
	fake, err := newFake(strings.NewReader(strings.Replace(config, "CLOUD", server.URL, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return fake, store
}

func service(uid, loadBalancerIP string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: types.UID("uid-" + uid)},
		Spec: v1.ServiceSpec{
			Type:           v1.ServiceTypeLoadBalancer,
			LoadBalancerIP: loadBalancerIP,
			Ports:          []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
}

func node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestLoadBalancersTakeAddressesFromThePoolAndGiveThemBack(t *testing.T) {
	ctx := context.Background()
	fake, store := start(t, `{"cloud": "CLOUD", "loadBalancerPool": ["203.0.113.0/29"]}`)
	web := service("web", "")
	status, err := fake.EnsureLoadBalancer(ctx, "test", web, cloudprovider.NewNodeSet(node("node-b"), node("node-a"), node("node-a")))
	if err != nil {
		t.Fatal(err)
	}
	targeted, _ := Get[record](fake.cloud, loadBalancers, fake.GetLoadBalancerName(ctx, "test", web))
	if !slices.Equal(targeted.Value.Nodes, []string{"node-a", "node-b"}) {
		t.Errorf("targets %q", targeted.Value.Nodes)
	}
	ip := status.Ingress[0].IP
	if !strings.HasPrefix(ip, "203.0.113.") || *status.Ingress[0].IPMode != v1.LoadBalancerIPModeVIP {
		t.Fatalf("%+v", status)
	}
	again, err := fake.EnsureLoadBalancer(ctx, "test", web, cloudprovider.NewNodeSet())
	if err != nil || again.Ingress[0].IP != ip {
		t.Errorf("not idempotent: %+v %v", again, err)
	}
	got, exists, err := fake.GetLoadBalancer(ctx, "test", web)
	if err != nil || !exists || got.Ingress[0].IP != ip {
		t.Errorf("%+v %v %v", got, exists, err)
	}
	stored, _ := Get[record](fake.cloud, loadBalancers, fake.GetLoadBalancerName(ctx, "test", web))
	if stored.Value.Service != "shop/web" || len(stored.Value.Nodes) != 0 || stored.Value.Ports[0].NodePort == nil {
		t.Errorf("%+v", stored.Value)
	}

	// A /29 has 6 usable addresses: 5 more fit, then none.
	for i := range 5 {
		if _, err := fake.EnsureLoadBalancer(ctx, "test", service(strconv.Itoa(i), ""), cloudprovider.NewNodeSet()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fake.EnsureLoadBalancer(ctx, "test", service("one-too-many", ""), cloudprovider.NewNodeSet()); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Errorf("%v", err)
	}
	if err := fake.EnsureLoadBalancerDeleted(ctx, "test", web); err != nil {
		t.Fatal(err)
	}
	if store.count(addressClaims) != 5 || store.count(loadBalancers) != 5 {
		t.Errorf("%d claims, %d load balancers", store.count(addressClaims), store.count(loadBalancers))
	}
	if err := fake.UpdateLoadBalancer(ctx, "test", web, cloudprovider.NewNodeSet()); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("%v", err)
	}
}

func TestFaultsAreInjectedPerFunction(t *testing.T) {
	fake, _ := start(t, `{"cloud": "CLOUD", "faults": {
		"load-balancer.ensure": {"error": {"kind": "retry", "delayMs": 1500, "message": "quota refill"}},
		"instances-v2.metadata": {"latencyMs": 50, "error": {"kind": "instance-not-found"}}}}`)
	_, err := fake.EnsureLoadBalancer(context.Background(), "test", service("web", ""), cloudprovider.NewNodeSet())
	var retry *cloudprovider.RetryError
	if !errors.As(err, &retry) || retry.RetryAfter() != 1500*time.Millisecond || retry.Error() != "quota refill" {
		t.Errorf("%v", err)
	}
	started := time.Now()
	if _, err := fake.InstanceMetadata(context.Background(), node("node-a")); !errors.Is(err, cloudprovider.InstanceNotFound) || time.Since(started) < 50*time.Millisecond {
		t.Errorf("%v after %v", err, time.Since(started))
	}
}

func TestABatchAnswersForEachNodeAsTheQuestionsOneNodeAtATime(t *testing.T) {
	ctx := context.Background()
	fake, _ := start(t, `{"maxBatch": 2, "instances": [
		{"name": "running", "id": "i-1"},
		{"name": "stopped", "id": "i-2", "state": "stopped"},
		{"name": "terminated", "id": "i-3", "state": "terminated"}]}`)
	byID := node("renamed")
	byID.Spec.ProviderID = "fake://i-2"
	badID := node("running")
	badID.Spec.ProviderID = "aws:///i-1"
	nodes := []*v1.Node{node("running"), byID, node("terminated"), node("unknown"), badID}
	if fake.MaxBatch() != 2 {
		t.Errorf("max batch %d", fake.MaxBatch())
	}
	set := cloudprovider.NewNodeSet(nodes...)
	states, err := fake.InstanceStates(ctx, set)
	if err != nil || len(states) != len(nodes) {
		t.Fatalf("%v %v", states, err)
	}
	for index, name := range set.Names() {
		asked, _ := set.Get(index)
		exists, existsErr := fake.InstanceExists(ctx, asked)
		shutdown, shutdownErr := fake.InstanceShutdown(ctx, asked)
		state := states[index]
		if (state.Err == nil) != (existsErr == nil) || state.Exists != exists || (exists && (state.ShutDown != shutdown || shutdownErr != nil)) {
			t.Errorf("%s: batch %+v, one at a time exists %v %v, shutdown %v %v", name, state, exists, existsErr, shutdown, shutdownErr)
		}
	}
	for index, name := range set.Names() {
		if name == "renamed" && (!states[index].Exists || !states[index].ShutDown) {
			t.Errorf("the node found by provider ID: %+v", states[index])
		}
	}
	answers, err := fake.BatchMetadata(ctx, set)
	if err != nil || len(answers) != len(nodes) {
		t.Fatalf("%v %v", answers, err)
	}
	for index, name := range set.Names() {
		asked, _ := set.Get(index)
		metadata, err := fake.InstanceMetadata(ctx, asked)
		answer := answers[index]
		if (answer.Err == nil) != (err == nil) || (err == nil && answer.Metadata.ProviderID != metadata.ProviderID) {
			t.Errorf("%s: batch %+v, one at a time %+v %v", name, answer, metadata, err)
		}
	}

	perNode, _ := start(t, `{"maxBatch": 0}`)
	instances, _ := perNode.InstancesV2()
	if _, batching := instances.(cloudprovider.InstancesBatch); batching {
		t.Errorf("a batch size of 0 keeps only the per-node methods")
	}

	faulty, _ := start(t, `{"faults": {"instances-batch.states": {"error": {"kind": "retry", "delayMs": 30000, "message": "RequestLimitExceeded"}}}}`)
	var retry *cloudprovider.RetryError
	if _, err := faulty.InstanceStates(ctx, set); !errors.As(err, &retry) {
		t.Errorf("a fault fails the whole batch: %v", err)
	}
}

func TestBadConfigurationsAreRefusedWithTheirReason(t *testing.T) {
	for _, config := range []string{
		`{"instances": 3}`,
		`{"unknown": true}`,
		`{"loadBalancerPool": []}`,
		`{"instances": [{"name": "a"}]}`,
		`{"instances": [{"name": "a", "id": "i", "state": "paused"}]}`,
		`{"faults": {"*": {"error": {"kind": "retry", "message": "no delay"}}}}`,
		`{"faults": {"*": {"error": {"kind": "not-implemented", "message": "extra"}}}}`,
		`{"maxBatch": -1}`,
	} {
		if _, err := ParseConfig([]byte(config)); err == nil || !strings.HasPrefix(err.Error(), "invalid fake provider config: ") {
			t.Errorf("%s: %v", config, err)
		}
	}
	config, err := ParseConfig([]byte(" \n"))
	if err != nil || !config.HasClusterID || config.LoadBalancerPool[0].String() != "192.0.2.0/24" || *config.MaxBatch != 500 {
		t.Errorf("defaults: %+v %v", config, err)
	}
}
