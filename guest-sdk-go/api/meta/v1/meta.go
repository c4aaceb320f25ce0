// Package v1 mirrors the part of k8s.io/apimachinery/pkg/apis/meta/v1 that
// the wasm-ccm contract carries: an object's name, identity, labels and
// annotations.
package v1

import "github.com/wasm-ccm/wasm-ccm/guest-sdk-go/api/types"

// ObjectMeta is what a provider reads of an object's metadata.
type ObjectMeta struct {
	Name        string
	Namespace   string
	UID         types.UID
	Labels      map[string]string
	Annotations map[string]string
}
