package upstream

import (
	leanv1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	lean "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/cloudprovider"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// fromStatus is upstream's load-balancer status as the SDK's; nil stays
// nil.
func fromStatus(status *v1.LoadBalancerStatus) *leanv1.LoadBalancerStatus {
	if status == nil {
		return nil
	}
	converted := &leanv1.LoadBalancerStatus{}
	for _, ingress := range status.Ingress {
		answer := leanv1.LoadBalancerIngress{
			IP:       ingress.IP,
			Hostname: ingress.Hostname,
			IPMode:   (*leanv1.LoadBalancerIPMode)(ingress.IPMode),
		}
		for _, port := range ingress.Ports {
			answer.Ports = append(answer.Ports, leanv1.PortStatus{
				Port:     port.Port,
				Protocol: leanv1.Protocol(port.Protocol),
				Error:    port.Error,
			})
		}
		converted.Ingress = append(converted.Ingress, answer)
	}
	return converted
}

// fromMetadata is upstream's instance metadata as the SDK's; nil stays nil.
func fromMetadata(metadata *cloudprovider.InstanceMetadata) *lean.InstanceMetadata {
	if metadata == nil {
		return nil
	}
	return &lean.InstanceMetadata{
		ProviderID:       metadata.ProviderID,
		InstanceType:     metadata.InstanceType,
		NodeAddresses:    fromAddresses(metadata.NodeAddresses),
		Zone:             metadata.Zone,
		Region:           metadata.Region,
		AdditionalLabels: metadata.AdditionalLabels,
	}
}
