//! Upstream's leader election flags.

use std::time::Duration;

use clap::ArgAction;
use wasm_ccm_controllers::LeaderElectionConfig;
use wasm_ccm_controllers::framework::leader::default_identity;

/// `--leader-elect*` flags, with upstream's names and defaults.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderArgs {
    /// Run the controllers only while this replica holds the lease.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    /// How long a lease holds after its last renewal.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often to try to acquire or renew the lease.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// The Lease's name.
    #[arg(long, default_value = "cloud-controller-manager")]
    pub leader_elect_resource_name: String,
    /// The Lease's namespace.
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
    /// The kind of lock: `leases`, the only one wasm-ccm (and upstream
    /// since 1.24) elects with.
    #[arg(long, default_value = "leases", value_parser = resource_lock)]
    pub leader_elect_resource_lock: String,
}

fn resource_lock(lock: &str) -> Result<String, String> {
    match lock {
        "leases" => Ok(lock.to_owned()),
        other => {
            Err(format!("{other:?} is not supported: leaders are elected on a coordination.k8s.io Lease only (leases)"))
        }
    }
}

impl LeaderArgs {
    /// The election's settings, or `None` without `--leader-elect`.
    ///
    /// # Errors
    /// When the durations cannot work together.
    pub fn config(&self) -> anyhow::Result<Option<LeaderElectionConfig>> {
        if !self.leader_elect {
            return Ok(None);
        }
        let config = LeaderElectionConfig {
            namespace: self.leader_elect_resource_namespace.clone(),
            name: self.leader_elect_resource_name.clone(),
            identity: default_identity(),
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        };
        config.check()?;
        Ok(Some(config))
    }
}
