//! The fixture: the nodes the provider's cloud has and the Services to give
//! load balancers, as Kubernetes objects in YAML or JSON.

use std::path::{Path, PathBuf};

use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::{Node, Service, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// The name asked about when the fixture names no unknown node.
const UNKNOWN_NODE: &str = "wasm-ccm-conformance-absent";

/// What the suite works on.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fixture {
    /// Nodes whose instances exist in the cloud: instance checks ask about
    /// each, load balancers target them, and those with `spec.podCIDR` get
    /// routes.
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// Services to create, update and delete load balancers for.
    #[serde(default)]
    pub services: Vec<Service>,
    /// A node name the cloud has no instance for.
    #[serde(default = "unknown_node")]
    pub unknown_node: String,
}

fn unknown_node() -> String {
    UNKNOWN_NODE.to_owned()
}

impl Fixture {
    /// Reads a fixture file, YAML or JSON, and fills in what the API server
    /// would: UIDs, the `default` namespace and the `LoadBalancer` type.
    ///
    /// # Errors
    /// When it cannot be read or parsed, or an object has no name.
    pub fn read(path: &Path) -> Result<Fixture, FixtureError> {
        let path_buf = || path.to_path_buf();
        let text = std::fs::read_to_string(path).map_err(|source| FixtureError::Read { path: path_buf(), source })?;
        let fixture: Fixture =
            serde_norway::from_str(&text).map_err(|source| FixtureError::Parse { path: path_buf(), source })?;
        fixture.completed().map_err(|kind| FixtureError::Nameless { path: path_buf(), kind })
    }

    /// The fixture with what the API server fills in; the kind of the first
    /// object without a name when there is one.
    pub(crate) fn completed(mut self) -> Result<Fixture, &'static str> {
        for node in &mut self.nodes {
            let name = node.metadata.name.clone().filter(|name| !name.is_empty()).ok_or("node")?;
            node.metadata.uid.get_or_insert_with(|| uid(&format!("node/{name}")));
        }
        for service in &mut self.services {
            let name = service.metadata.name.clone().filter(|name| !name.is_empty()).ok_or("Service")?;
            let namespace = service.metadata.namespace.get_or_insert_with(|| "default".to_owned()).clone();
            service.metadata.uid.get_or_insert_with(|| uid(&format!("service/{namespace}/{name}")));
            service.spec.get_or_insert_with(ServiceSpec::default).type_.get_or_insert_with(|| "LoadBalancer".into());
        }
        Ok(self)
    }
}

/// Why a fixture file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The fixture file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: std::io::Error,
    },
    /// The file is neither YAML nor JSON of a fixture.
    #[error("invalid fixture {}", path.display())]
    Parse {
        /// The fixture file.
        path: PathBuf,
        /// What the parser found wrong.
        #[source]
        source: serde_norway::Error,
    },
    /// An object of kind `kind` has no name.
    #[error("invalid fixture {}: a {kind} has no name", path.display())]
    Nameless {
        /// The fixture file.
        path: PathBuf,
        /// `node` or `Service`.
        kind: &'static str,
    },
}

/// A UID in UUID form, the same for the same object on every run, so that
/// a run finds what an interrupted one left behind.
fn uid(key: &str) -> String {
    let hash = |seed: u64| key.bytes().fold(seed, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
    let (high, low) = (hash(0xcbf2_9ce4_8422_2325), hash(0x8422_2325_cbf2_9ce4));
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

/// An object's name, for check names and messages.
pub fn name<K: Metadata<Ty = ObjectMeta>>(object: &K) -> String {
    let meta = object.metadata();
    let name = meta.name.clone().unwrap_or_default();
    match &meta.namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_completed_as_the_api_server_would() {
        let fixture: Fixture = serde_norway::from_str(
            "nodes:\n- metadata: {name: node-a}\n  spec: {podCIDR: 10.244.1.0/24}\n\
             services:\n- metadata: {name: web}\n  spec: {ports: [{port: 80, nodePort: 30080}]}\n",
        )
        .unwrap();
        let fixture = fixture.completed().unwrap();
        assert_eq!(fixture.unknown_node, UNKNOWN_NODE);
        let service = &fixture.services[0];
        assert_eq!(name(service), "default/web");
        assert_eq!(service.spec.as_ref().unwrap().type_.as_deref(), Some("LoadBalancer"));
        let uid = service.metadata.uid.clone().unwrap();
        assert_eq!(uid.len(), 36);
        assert_eq!(uid, super::uid("service/default/web"));
        assert_ne!(fixture.nodes[0].metadata.uid, service.metadata.uid);

        let nameless: Fixture = serde_norway::from_str("{\"services\": [{\"metadata\": {}}]}").unwrap();
        assert_eq!(nameless.completed().unwrap_err(), "Service");
    }
}
