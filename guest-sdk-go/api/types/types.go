// Package types mirrors the part of k8s.io/apimachinery/pkg/types that
// cloud providers use.
package types

// UID is an object's unique identifier.
type UID string

// NodeName is a Node's name.
type NodeName string
