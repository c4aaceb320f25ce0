package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

// Instances, both APIs, and zones, answered from the configured machines.

const providerIDPrefix = ProviderName + "://"

func (f *Fake) byName(name string) (*Instance, error) {
	if instance, found := f.byNameIndex[name]; found {
		return instance, nil
	}
	return nil, cloudprovider.InstanceNotFound
}

func (f *Fake) byProviderID(providerID string) (*Instance, error) {
	id, found := strings.CutPrefix(providerID, providerIDPrefix)
	if !found {
		return nil, fmt.Errorf("provider ID %q is not of the form fake://<id>", providerID)
	}
	if instance, found := f.byIDIndex[id]; found {
		return instance, nil
	}
	return nil, cloudprovider.InstanceNotFound
}

// byNode is the machine behind node: by provider ID once it has one, else
// by name.
func (f *Fake) byNode(node *v1.Node) (*Instance, error) {
	if node.Spec.ProviderID != "" {
		return f.byProviderID(node.Spec.ProviderID)
	}
	return f.byName(node.Name)
}

// isRunning says whether a running machine serves the Node name.
func (f *Fake) isRunning(name string) bool {
	instance, err := f.byName(name)
	return err == nil && instance.State == Running
}

// exists answers whether a machine that is not terminated is found.
func exists(instance *Instance, err error) (bool, error) {
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return instance.State != Terminated, nil
}

var addressTypes = map[string]v1.NodeAddressType{
	"Hostname":    v1.NodeHostName,
	"InternalIP":  v1.NodeInternalIP,
	"ExternalIP":  v1.NodeExternalIP,
	"InternalDNS": v1.NodeInternalDNS,
	"ExternalDNS": v1.NodeExternalDNS,
}

func addresses(instance *Instance) ([]v1.NodeAddress, error) {
	result := make([]v1.NodeAddress, len(instance.Addresses))
	for i, address := range instance.Addresses {
		addressType, found := addressTypes[address.Type]
		if !found {
			return nil, fmt.Errorf("instance %s: unknown address type %q", instance.Name, address.Type)
		}
		result[i] = v1.NodeAddress{Type: addressType, Address: address.Address}
	}
	return result, nil
}

func (f *Fake) InstanceExists(_ context.Context, node *v1.Node) (bool, error) {
	if err := f.config.Inject("instances-v2.exists"); err != nil {
		return false, err
	}
	return exists(f.byNode(node))
}

func (f *Fake) InstanceShutdown(_ context.Context, node *v1.Node) (bool, error) {
	if err := f.config.Inject("instances-v2.shutdown"); err != nil {
		return false, err
	}
	instance, err := f.byNode(node)
	if err != nil {
		return false, err
	}
	return instance.State == Stopped, nil
}

func (f *Fake) MaxBatch() int { return *f.config.MaxBatch }

// InstanceStates answers for each node as InstanceExists and
// InstanceShutdown would.
func (f *Fake) InstanceStates(_ context.Context, nodes cloudprovider.NodeSet) ([]cloudprovider.InstanceState, error) {
	if err := f.config.Inject("instances-batch.states"); err != nil {
		return nil, err
	}
	found := f.bySet(nodes)
	states := make([]cloudprovider.InstanceState, len(found))
	for index, lookup := range found {
		states[index] = state(lookup.instance, lookup.err)
	}
	return states, nil
}

// BatchMetadata answers for each node as InstanceMetadata would.
func (f *Fake) BatchMetadata(_ context.Context, nodes cloudprovider.NodeSet) ([]cloudprovider.MetadataAnswer, error) {
	if err := f.config.Inject("metadata-batch.metadata"); err != nil {
		return nil, err
	}
	found := f.bySet(nodes)
	answers := make([]cloudprovider.MetadataAnswer, len(found))
	for index, lookup := range found {
		if lookup.err != nil {
			answers[index].Err = lookup.err
			continue
		}
		answers[index].Metadata, answers[index].Err = metadata(lookup.instance)
	}
	return answers, nil
}

// lookup is the machine found for a node, or why none was.
type lookup struct {
	instance *Instance
	err      error
}

// bySet is the machine behind each node of nodes, in its order, found as
// byNode finds it, from the set's two views.
func (f *Fake) bySet(nodes cloudprovider.NodeSet) []lookup {
	found := make([]lookup, nodes.Len())
	for index, name := range nodes.Names() {
		if index < len(found) {
			found[index].instance, found[index].err = f.byName(name)
		}
	}
	for index, providerID := range nodes.ProviderIDs() {
		if providerID != "" && index < len(found) {
			found[index].instance, found[index].err = f.byProviderID(providerID)
		}
	}
	return found
}

// state is a machine's state as the lifecycle asks for it.
func state(instance *Instance, err error) cloudprovider.InstanceState {
	found, err := exists(instance, err)
	if err != nil || !found {
		return cloudprovider.InstanceState{Err: err}
	}
	return cloudprovider.InstanceState{Exists: true, ShutDown: instance.State == Stopped}
}

func (f *Fake) InstanceMetadata(_ context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	if err := f.config.Inject("instances-v2.metadata"); err != nil {
		return nil, err
	}
	instance, err := f.byNode(node)
	if err != nil {
		return nil, err
	}
	return metadata(instance)
}

// metadata is what InstancesV2 says of instance.
func metadata(instance *Instance) (*cloudprovider.InstanceMetadata, error) {
	nodeAddresses, err := addresses(instance)
	if err != nil {
		return nil, err
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:       providerIDPrefix + instance.ID,
		InstanceType:     instance.InstanceType,
		NodeAddresses:    nodeAddresses,
		Zone:             instance.Zone,
		Region:           instance.Region,
		AdditionalLabels: instance.Labels,
	}, nil
}

func (f *Fake) NodeAddresses(_ context.Context, name types.NodeName) ([]v1.NodeAddress, error) {
	if err := f.config.Inject("instances.node-addresses"); err != nil {
		return nil, err
	}
	instance, err := f.byName(string(name))
	if err != nil {
		return nil, err
	}
	return addresses(instance)
}

func (f *Fake) NodeAddressesByProviderID(_ context.Context, providerID string) ([]v1.NodeAddress, error) {
	if err := f.config.Inject("instances.node-addresses-by-provider-id"); err != nil {
		return nil, err
	}
	instance, err := f.byProviderID(providerID)
	if err != nil {
		return nil, err
	}
	return addresses(instance)
}

func (f *Fake) InstanceID(_ context.Context, nodeName types.NodeName) (string, error) {
	if err := f.config.Inject("instances.instance-id"); err != nil {
		return "", err
	}
	instance, err := f.byName(string(nodeName))
	if err != nil {
		return "", err
	}
	return instance.ID, nil
}

func (f *Fake) InstanceType(_ context.Context, name types.NodeName) (string, error) {
	if err := f.config.Inject("instances.instance-type"); err != nil {
		return "", err
	}
	instance, err := f.byName(string(name))
	if err != nil {
		return "", err
	}
	return instance.InstanceType, nil
}

func (f *Fake) InstanceTypeByProviderID(_ context.Context, providerID string) (string, error) {
	if err := f.config.Inject("instances.instance-type-by-provider-id"); err != nil {
		return "", err
	}
	instance, err := f.byProviderID(providerID)
	if err != nil {
		return "", err
	}
	return instance.InstanceType, nil
}

func (f *Fake) AddSSHKeyToAllInstances(context.Context, string, []byte) error {
	return cloudprovider.NotImplemented
}

func (f *Fake) CurrentNodeName(_ context.Context, hostname string) (types.NodeName, error) {
	if err := f.config.Inject("instances.current-node-name"); err != nil {
		return "", err
	}
	return types.NodeName(hostname), nil
}

func (f *Fake) InstanceExistsByProviderID(_ context.Context, providerID string) (bool, error) {
	if err := f.config.Inject("instances.instance-exists-by-provider-id"); err != nil {
		return false, err
	}
	return exists(f.byProviderID(providerID))
}

func (f *Fake) InstanceShutdownByProviderID(_ context.Context, providerID string) (bool, error) {
	if err := f.config.Inject("instances.instance-shutdown-by-provider-id"); err != nil {
		return false, err
	}
	instance, err := f.byProviderID(providerID)
	if err != nil {
		return false, err
	}
	return instance.State == Stopped, nil
}

func (f *Fake) GetZone(context.Context) (cloudprovider.Zone, error) {
	if err := f.config.Inject("zones.get-zone"); err != nil {
		return cloudprovider.Zone{}, err
	}
	if f.config.Zone == nil {
		return cloudprovider.Zone{}, errors.New("no zone is configured")
	}
	return cloudprovider.Zone{FailureDomain: f.config.Zone.FailureDomain, Region: f.config.Zone.Region}, nil
}

func zone(instance *Instance, err error) (cloudprovider.Zone, error) {
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	return cloudprovider.Zone{FailureDomain: instance.Zone, Region: instance.Region}, nil
}

func (f *Fake) GetZoneByProviderID(_ context.Context, providerID string) (cloudprovider.Zone, error) {
	if err := f.config.Inject("zones.get-zone-by-provider-id"); err != nil {
		return cloudprovider.Zone{}, err
	}
	return zone(f.byProviderID(providerID))
}

func (f *Fake) GetZoneByNodeName(_ context.Context, nodeName types.NodeName) (cloudprovider.Zone, error) {
	if err := f.config.Inject("zones.get-zone-by-node-name"); err != nil {
		return cloudprovider.Zone{}, err
	}
	return zone(f.byName(string(nodeName)))
}
