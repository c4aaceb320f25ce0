//! A Kubernetes API server harness.
