package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	v1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	"github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
)

// Load balancers, kept in the fake cloud, with addresses claimed from the
// pool.

const (
	loadBalancers = "load-balancers"
	addressClaims = "addresses"
	// probes of the pool at hashed positions before scanning it in order.
	probes = 32
)

// record is a load balancer as the fake cloud stores it.
type record struct {
	// Service is <namespace>/<name> of the Service.
	Service string       `json:"service"`
	UID     string       `json:"uid"`
	Address string       `json:"address"`
	Ports   []portRecord `json:"ports"`
	// Nodes are the names of the nodes it targets, sorted.
	Nodes        []string `json:"nodes"`
	SourceRanges []string `json:"sourceRanges"`
}

type portRecord struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	NodePort *int32 `json:"nodePort"`
}

// claim is who holds an address of the pool.
type claim struct {
	LoadBalancer string `json:"loadBalancer"`
}

// nodeNames is the names of nodes, which come sorted, without repeats.
func nodeNames(nodes cloudprovider.NodeSet) []string {
	names := make([]string, 0, nodes.Len())
	for _, name := range nodes.Names() {
		names = append(names, name)
	}
	return slices.Compact(names)
}

func ports(service *v1.Service) ([]portRecord, error) {
	records := make([]portRecord, len(service.Spec.Ports))
	for i, port := range service.Spec.Ports {
		if port.Protocol == v1.ProtocolSCTP {
			return nil, errors.New("the fake cloud's load balancers do not support SCTP")
		}
		records[i] = portRecord{Name: port.Name, Protocol: string(port.Protocol), Port: port.Port}
		if port.NodePort != 0 {
			records[i].NodePort = &port.NodePort
		}
	}
	return records, nil
}

func (f *Fake) status(name, address string) *v1.LoadBalancerStatus {
	vip := v1.LoadBalancerIPModeVIP
	ingress := v1.LoadBalancerIngress{IP: address, IPMode: &vip}
	if suffix := f.config.LoadBalancerHostnameSuffix; suffix != nil {
		ingress = v1.LoadBalancerIngress{Hostname: name + "." + *suffix, IPMode: &vip}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{ingress}}
}

// claim claims address for name; false when another load balancer holds it.
func (f *Fake) claim(address netip.Addr, name string) (bool, error) {
	key := address.String()
	created, err := f.cloud.Put(addressClaims, key, claim{LoadBalancer: name}, Absent)
	if created || err != nil {
		return created, err
	}
	holder, err := Get[claim](f.cloud, addressClaims, key)
	return holder != nil && holder.Value.LoadBalancer == name, err
}

// allocate is an address for service: the one it asks for, or a free one
// of the pool.
func (f *Fake) allocate(service *v1.Service, name string) (netip.Addr, error) {
	pool := Pool(f.config.LoadBalancerPool)
	if requested := service.Spec.LoadBalancerIP; requested != "" {
		address, err := netip.ParseAddr(requested)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("loadBalancerIP %q is not an IP address", requested)
		}
		if !pool.Contains(address) {
			return netip.Addr{}, fmt.Errorf("loadBalancerIP %s is outside the address pool", address)
		}
		claimed, err := f.claim(address, name)
		if err != nil {
			return netip.Addr{}, err
		}
		if !claimed {
			return netip.Addr{}, fmt.Errorf("loadBalancerIP %s is in use by another load balancer", address)
		}
		return address, nil
	}
	length := pool.Len()
	start := Start(string(service.UID), length)
	for probe := range min(uint64(probes), length) {
		address, _ := pool.Get((start + probe*probe) % length)
		claimed, err := f.claim(address, name)
		if claimed || err != nil {
			return address, err
		}
	}
	claims, err := List[claim](f.cloud, addressClaims)
	if err != nil {
		return netip.Addr{}, err
	}
	taken := make(map[string]bool, len(claims))
	for _, held := range claims {
		taken[held.Key] = true
	}
	for index := range length {
		address, _ := pool.Get(index)
		if taken[address.String()] {
			continue
		}
		claimed, err := f.claim(address, name)
		if claimed || err != nil {
			return address, err
		}
	}
	return netip.Addr{}, errors.New("the load-balancer address pool is exhausted")
}

// derivedAddress is a stateless load balancer's address: the one the
// Service asks for, or the one its UID picks in the pool (two Services may
// get the same).
func (f *Fake) derivedAddress(service *v1.Service) (netip.Addr, error) {
	pool := Pool(f.config.LoadBalancerPool)
	if requested := service.Spec.LoadBalancerIP; requested != "" {
		address, err := netip.ParseAddr(requested)
		if err != nil || !pool.Contains(address) {
			return netip.Addr{}, fmt.Errorf("loadBalancerIP %q is not an address of the pool", requested)
		}
		return address, nil
	}
	address, _ := pool.Get(Start(string(service.UID), pool.Len()))
	return address, nil
}

func (f *Fake) release(address string) error {
	_, err := f.cloud.Delete(addressClaims, address)
	return err
}

func (f *Fake) derivedStatus(name string, service *v1.Service) (*v1.LoadBalancerStatus, error) {
	address, err := f.derivedAddress(service)
	if err != nil {
		return nil, err
	}
	return f.status(name, address.String()), nil
}

func (f *Fake) GetLoadBalancer(ctx context.Context, clusterName string, service *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if err := f.config.Inject("load-balancer.get"); err != nil {
		return nil, false, err
	}
	name := f.GetLoadBalancerName(ctx, clusterName, service)
	if f.config.StatelessLoadBalancers {
		status, err := f.derivedStatus(name, service)
		return status, err == nil, err
	}
	stored, err := Get[record](f.cloud, loadBalancers, name)
	if err != nil || stored == nil {
		return nil, false, err
	}
	return f.status(name, stored.Value.Address), true, nil
}

func (f *Fake) GetLoadBalancerName(_ context.Context, _ string, service *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(service)
}

func (f *Fake) EnsureLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes cloudprovider.NodeSet) (*v1.LoadBalancerStatus, error) {
	if err := f.config.Inject("load-balancer.ensure"); err != nil {
		return nil, err
	}
	name := f.GetLoadBalancerName(ctx, clusterName, service)
	servicePorts, err := ports(service)
	if err != nil {
		return nil, err
	}
	if f.config.StatelessLoadBalancers {
		return f.derivedStatus(name, service)
	}
	stored, err := Get[record](f.cloud, loadBalancers, name)
	if err != nil {
		return nil, err
	}
	requested := service.Spec.LoadBalancerIP
	var address string
	if stored != nil && (requested == "" || requested == stored.Value.Address) {
		address = stored.Value.Address
	} else {
		allocated, err := f.allocate(service, name)
		if err != nil {
			return nil, err
		}
		address = allocated.String()
	}
	sourceRanges := service.Spec.LoadBalancerSourceRanges
	if sourceRanges == nil {
		sourceRanges = []string{}
	}
	lb := record{
		Service:      service.Namespace + "/" + service.Name,
		UID:          string(service.UID),
		Address:      address,
		Ports:        servicePorts,
		Nodes:        nodeNames(nodes),
		SourceRanges: sourceRanges,
	}
	precondition := Absent
	if stored != nil {
		precondition = AtVersion(stored.Version)
	}
	written, err := f.cloud.Put(loadBalancers, name, lb, precondition)
	if err != nil {
		return nil, err
	}
	if !written {
		return nil, cloudprovider.NewRetryError(fmt.Sprintf("load balancer %s changed meanwhile", name), time.Second)
	}
	if stored != nil && stored.Value.Address != lb.Address {
		if err := f.release(stored.Value.Address); err != nil {
			return nil, err
		}
	}
	return f.status(name, lb.Address), nil
}

func (f *Fake) UpdateLoadBalancer(ctx context.Context, clusterName string, service *v1.Service, nodes cloudprovider.NodeSet) error {
	if err := f.config.Inject("load-balancer.update"); err != nil {
		return err
	}
	if f.config.StatelessLoadBalancers {
		return nil
	}
	name := f.GetLoadBalancerName(ctx, clusterName, service)
	stored, err := Get[record](f.cloud, loadBalancers, name)
	if err != nil {
		return err
	}
	if stored == nil {
		return fmt.Errorf("load balancer %s does not exist", name)
	}
	stored.Value.Nodes = nodeNames(nodes)
	written, err := f.cloud.Put(loadBalancers, name, stored.Value, AtVersion(stored.Version))
	if err != nil {
		return err
	}
	if !written {
		return cloudprovider.NewRetryError(fmt.Sprintf("load balancer %s changed meanwhile", name), time.Second)
	}
	return nil
}

func (f *Fake) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, service *v1.Service) error {
	if err := f.config.Inject("load-balancer.ensure-deleted"); err != nil {
		return err
	}
	if f.config.StatelessLoadBalancers {
		return nil
	}
	name := f.GetLoadBalancerName(ctx, clusterName, service)
	stored, err := Get[record](f.cloud, loadBalancers, name)
	if err != nil || stored == nil {
		return err
	}
	if _, err := f.cloud.Delete(loadBalancers, name); err != nil {
		return err
	}
	return f.release(stored.Value.Address)
}
