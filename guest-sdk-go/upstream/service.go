package upstream

import (
	leanv1 "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/core/v1"
	leanmeta "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/meta/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// toService is service as upstream's, with the fields the contract
// carries; nil stays nil.
func toService(service *leanv1.Service) *v1.Service {
	if service == nil {
		return nil
	}
	spec := service.Spec
	converted := &v1.Service{
		ObjectMeta: toObjectMeta(service.ObjectMeta),
		Spec: v1.ServiceSpec{
			Type:                     v1.ServiceType(spec.Type),
			LoadBalancerIP:           spec.LoadBalancerIP,
			LoadBalancerSourceRanges: spec.LoadBalancerSourceRanges,
			ExternalTrafficPolicy:    v1.ServiceExternalTrafficPolicy(spec.ExternalTrafficPolicy),
			HealthCheckNodePort:      spec.HealthCheckNodePort,
			SessionAffinity:          v1.ServiceAffinity(spec.SessionAffinity),
			LoadBalancerClass:        spec.LoadBalancerClass,
		},
	}
	for _, port := range spec.Ports {
		converted.Spec.Ports = append(converted.Spec.Ports, v1.ServicePort{
			Name:        port.Name,
			Protocol:    v1.Protocol(port.Protocol),
			AppProtocol: port.AppProtocol,
			Port:        port.Port,
			NodePort:    port.NodePort,
		})
	}
	for _, family := range spec.IPFamilies {
		converted.Spec.IPFamilies = append(converted.Spec.IPFamilies, v1.IPFamily(family))
	}
	if affinity := spec.SessionAffinityConfig; affinity != nil {
		converted.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{}
		if affinity.ClientIP != nil {
			converted.Spec.SessionAffinityConfig.ClientIP = &v1.ClientIPConfig{TimeoutSeconds: affinity.ClientIP.TimeoutSeconds}
		}
	}
	return converted
}

// toObjectMeta is meta as upstream's.
func toObjectMeta(meta leanmeta.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        meta.Name,
		Namespace:   meta.Namespace,
		UID:         types.UID(meta.UID),
		Labels:      meta.Labels,
		Annotations: meta.Annotations,
	}
}
