//! What names a Service in the service controller's queues, memory and
//! address index.

use k8s_openapi::api::core::v1::Service;
use kube::runtime::reflector::ObjectRef;

/// A Service's key.
pub type ServiceKey = ObjectRef<Service>;
