//! The fake provider's configuration: its instances, its address pool, where
//! its cloud keeps load balancers and routes, and the faults to inject.

use std::collections::BTreeMap;

use ipnet::IpNet;
use serde::Deserialize;
use wasm_ccm_sdk::Error;

/// The configuration file, in JSON.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// The fake cloud's URL, holding load balancers and routes. Without it the
    /// provider supports neither.
    pub cloud: Option<String>,
    /// Where load-balancer addresses come from.
    #[serde(default = "default_pool")]
    pub load_balancer_pool: Vec<IpNet>,
    /// Load balancers that cost no cloud round trip, as upstream's in-memory
    /// fake: each Service's address is derived from its UID within the pool
    /// and nothing is stored, so every one exists and updates and deletes do
    /// nothing. For measuring the controllers and the sandbox, not the fake
    /// cloud.
    #[serde(default)]
    pub stateless_load_balancers: bool,
    /// Report load balancers by host name `<name>.<suffix>` instead of by IP.
    pub load_balancer_hostname_suffix: Option<String>,
    /// The machines of the fake cloud.
    #[serde(default)]
    pub instances: Vec<Instance>,
    /// What `GetZone` answers.
    pub zone: Option<ZoneConfig>,
    /// What `ListClusters` answers; the cluster name when unset.
    pub clusters: Option<Vec<String>>,
    /// What `Master` answers.
    pub master: Option<String>,
    /// `HasClusterID`.
    #[serde(default = "yes")]
    pub has_cluster_id: bool,
    /// Parts to report as unsupported.
    #[serde(default)]
    pub disabled_parts: Vec<String>,
    /// The most nodes it answers the lifecycle's questions about in one
    /// call; 0 answers one node at a time.
    #[serde(default = "default_max_batch")]
    pub max_batch: u32,
    /// Faults by function (`load-balancer.ensure`, ...) or `*` for every function.
    #[serde(default)]
    pub faults: BTreeMap<String, Fault>,
}

fn default_pool() -> Vec<IpNet> {
    vec!["192.0.2.0/24".parse().expect("a valid network")]
}

fn default_max_batch() -> u32 {
    500
}

fn yes() -> bool {
    true
}

/// A machine of the fake cloud.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instance {
    /// The Node name it serves.
    pub name: String,
    /// Its ID; provider IDs are `fake://<id>`.
    pub id: String,
    #[serde(default = "default_type", rename = "type")]
    pub instance_type: String,
    #[serde(default)]
    pub zone: String,
    #[serde(default)]
    pub region: String,
    #[serde(default)]
    pub addresses: Vec<Address>,
    #[serde(default)]
    pub state: MachineState,
    /// Labels reported as `AdditionalLabels`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

fn default_type() -> String {
    "fake.small".to_owned()
}

/// A machine's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MachineState {
    #[default]
    Running,
    Stopped,
    Terminated,
}

/// A node address, as in `v1.NodeAddress`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// `Hostname`, `InternalIP`, `ExternalIP`, `InternalDNS` or `ExternalDNS`.
    #[serde(rename = "type")]
    pub address_type: String,
    pub address: String,
}

/// `GetZone`'s answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ZoneConfig {
    pub failure_domain: String,
    pub region: String,
}

/// A fault injected into a function: a delay, an error, or both.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    /// Sleep this long before answering.
    #[serde(default)]
    pub latency_ms: u64,
    /// Fail with this error.
    pub error: Option<FaultError>,
}

/// The error a fault returns.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum FaultError {
    Other { message: String },
    Retry { delay_ms: u64, message: String },
    NotImplemented,
    ImplementedElsewhere,
    InstanceNotFound,
}

impl From<&FaultError> for Error {
    fn from(fault: &FaultError) -> Self {
        match fault {
            FaultError::Other { message } => Error::other(message),
            FaultError::Retry { delay_ms, message } => {
                Error::retry(std::time::Duration::from_millis(*delay_ms), message)
            }
            FaultError::NotImplemented => Error::NotImplemented,
            FaultError::ImplementedElsewhere => Error::ImplementedElsewhere,
            FaultError::InstanceNotFound => Error::InstanceNotFound,
        }
    }
}

impl Config {
    /// Parses and checks the configuration.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let bytes = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { bytes };
        let config: Config = serde_json::from_slice(bytes)
            .map_err(|err| Error::other(format_args!("invalid fake provider config: {err}")))?;
        if config.load_balancer_pool.is_empty() {
            return Err(Error::other("invalid fake provider config: loadBalancerPool is empty"));
        }
        Ok(config)
    }

    /// Applies the fault configured for `function`, if any: sleeps, then
    /// returns its error.
    pub fn inject(&self, function: &str) -> Result<(), Error> {
        for key in ["*", function] {
            let Some(fault) = self.faults.get(key) else { continue };
            if fault.latency_ms > 0 {
                std::thread::sleep(std::time::Duration::from_millis(fault.latency_ms));
            }
            if let Some(error) = &fault.error {
                return Err(error.into());
            }
        }
        Ok(())
    }
}
