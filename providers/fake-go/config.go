package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

// Config is the fake provider's configuration file, in JSON: its
// instances, its address pool, where its cloud keeps load balancers and
// routes, and the faults to inject. Unknown fields are refused.
type Config struct {
	// Cloud is the fake cloud's URL, holding load balancers and routes.
	Cloud *string `json:"cloud"`
	// LoadBalancerPool is where load-balancer addresses come from;
	// 192.0.2.0/24 when unset.
	LoadBalancerPool []netip.Prefix `json:"loadBalancerPool"`
	// StatelessLoadBalancers derives each Service's address from its UID
	// within the pool and stores nothing, as upstream's in-memory fake:
	// every load balancer exists, updates and deletes do nothing.
	StatelessLoadBalancers bool `json:"statelessLoadBalancers"`
	// LoadBalancerHostnameSuffix reports load balancers by host name
	// <name>.<suffix> instead of by IP.
	LoadBalancerHostnameSuffix *string    `json:"loadBalancerHostnameSuffix"`
	Instances                  []Instance `json:"instances"`
	// Zone is GetZone's answer.
	Zone *ZoneConfig `json:"zone"`
	// Clusters is ListClusters' answer; the cluster's name when unset.
	Clusters *[]string `json:"clusters"`
	// Master is Master's answer.
	Master       *string `json:"master"`
	HasClusterID bool    `json:"hasClusterId"`
	// DisabledParts are reported as unsupported.
	DisabledParts []string `json:"disabledParts"`
	// MaxBatch is the most nodes it answers the lifecycle's questions
	// about in one call; 500 when unset, and 0 answers one node at a time.
	MaxBatch *int `json:"maxBatch"`
	// Faults by function (load-balancer.ensure, ...), or * for every one.
	Faults map[string]Fault `json:"faults"`
}

// Instance is a machine of the fake cloud.
type Instance struct {
	// Name is the Node it serves.
	Name string `json:"name"`
	// ID makes its provider ID fake://<id>.
	ID           string            `json:"id"`
	InstanceType string            `json:"type"`
	Zone         string            `json:"zone"`
	Region       string            `json:"region"`
	Addresses    []Address         `json:"addresses"`
	State        InstanceState     `json:"state"`
	Labels       map[string]string `json:"labels"`
}

// InstanceState is a machine's state.
type InstanceState string

// The machine states.
const (
	Running    InstanceState = "running"
	Stopped    InstanceState = "stopped"
	Terminated InstanceState = "terminated"
)

// Address is a node address: Hostname, InternalIP, ExternalIP, InternalDNS
// or ExternalDNS.
type Address struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// ZoneConfig is GetZone's answer.
type ZoneConfig struct {
	FailureDomain string `json:"failureDomain"`
	Region        string `json:"region"`
}

// Fault is injected into a function: a delay, an error, or both.
type Fault struct {
	LatencyMs uint64      `json:"latencyMs"`
	Error     *FaultError `json:"error"`
}

// FaultError is the error a fault returns, by kind: other, retry,
// not-implemented, implemented-elsewhere or instance-not-found.
type FaultError struct {
	Kind    string  `json:"kind"`
	Message *string `json:"message"`
	DelayMs *uint64 `json:"delayMs"`
}

// ParseConfig parses and checks the configuration; blank means all
// defaults.
func ParseConfig(raw []byte) (*Config, error) {
	config, err := parseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid fake provider config: %w", err)
	}
	return config, nil
}

func parseConfig(raw []byte) (*Config, error) {
	config := &Config{HasClusterID: true}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(config); err != nil {
		return nil, err
	}
	if decoder.More() {
		return nil, errors.New("trailing data after the configuration")
	}
	if config.MaxBatch == nil {
		config.MaxBatch = new(int)
		*config.MaxBatch = 500
	}
	if config.LoadBalancerPool == nil {
		config.LoadBalancerPool = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	}
	if len(config.LoadBalancerPool) == 0 {
		return nil, errors.New("loadBalancerPool is empty")
	}
	for i, network := range config.LoadBalancerPool {
		config.LoadBalancerPool[i] = network.Masked()
	}
	return config, config.check()
}

// check refuses what the JSON decoder lets through: missing required
// fields and unknown values.
func (c *Config) check() error {
	for i := range c.Instances {
		instance := &c.Instances[i]
		if instance.Name == "" || instance.ID == "" {
			return fmt.Errorf("instances[%d]: name and id are required", i)
		}
		if instance.InstanceType == "" {
			instance.InstanceType = "fake.small"
		}
		switch instance.State {
		case "":
			instance.State = Running
		case Running, Stopped, Terminated:
		default:
			return fmt.Errorf("instance %s: unknown state %q", instance.Name, instance.State)
		}
		for _, address := range instance.Addresses {
			if address.Type == "" || address.Address == "" {
				return fmt.Errorf("instance %s: an address needs a type and an address", instance.Name)
			}
		}
	}
	if *c.MaxBatch < 0 {
		return fmt.Errorf("maxBatch %d is negative", *c.MaxBatch)
	}
	if c.Zone != nil && (c.Zone.FailureDomain == "" || c.Zone.Region == "") {
		return errors.New("zone: failureDomain and region are required")
	}
	for function, fault := range c.Faults {
		if fault.Error != nil {
			if err := fault.Error.validate(); err != nil {
				return fmt.Errorf("faults[%q]: %w", function, err)
			}
		}
	}
	return nil
}

// faultErrors are the errors of the kinds that take no fields.
var faultErrors = map[string]error{
	"not-implemented":       cloudprovider.NotImplemented,
	"implemented-elsewhere": cloudprovider.ImplementedElsewhere,
	"instance-not-found":    cloudprovider.InstanceNotFound,
}

// validate checks the fields fit the kind.
func (f *FaultError) validate() error {
	fits := map[string]bool{
		"other": f.Message != nil && f.DelayMs == nil,
		"retry": f.Message != nil && f.DelayMs != nil,
	}
	if faultErrors[f.Kind] != nil {
		fits[f.Kind] = f.Message == nil && f.DelayMs == nil
	}
	if !fits[f.Kind] {
		return fmt.Errorf("error kind %q with these fields is none of other (message), retry (delayMs, message), not-implemented, implemented-elsewhere, instance-not-found", f.Kind)
	}
	return nil
}

// Err is the error the fault returns; it must have been validated.
func (f *FaultError) Err() error {
	switch f.Kind {
	case "other":
		return errors.New(*f.Message)
	case "retry":
		return cloudprovider.NewRetryError(*f.Message, time.Duration(*f.DelayMs)*time.Millisecond)
	default:
		return faultErrors[f.Kind]
	}
}

// Inject applies the faults configured for function, if any: sleeps, then
// returns the error.
func (c *Config) Inject(function string) error {
	for _, key := range []string{"*", function} {
		fault, found := c.Faults[key]
		if !found {
			continue
		}
		if fault.LatencyMs > 0 {
			time.Sleep(time.Duration(fault.LatencyMs) * time.Millisecond)
		}
		if fault.Error != nil {
			return fault.Error.Err()
		}
	}
	return nil
}
