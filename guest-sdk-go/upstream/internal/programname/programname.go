// Package programname gives the component a program name, os.Args[0],
// which the host does not pass: k8s.io/klog/v2 reads it while its package
// is initialised and panics without one. This package imports only os and
// its import path sorts before k8s.io's, so Go initialises it before klog
// (packages whose imports are initialised go in import-path order).
package programname

import "os"

// Name is os.Args[0] when the host passes no arguments.
const Name = "wasm-ccm-provider"

func init() {
	if len(os.Args) == 0 {
		os.Args = []string{Name}
	}
}
