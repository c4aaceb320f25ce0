//! What the controllers run and how: upstream's flags, parsed.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use ipnet::IpNet;

/// One of the cloud controllers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ControllerName {
    /// Load balancers for Services.
    Service,
    /// Initialises new nodes from the cloud.
    CloudNode,
    /// Deletes or taints nodes whose instances are gone or shut down.
    CloudNodeLifecycle,
    /// Cloud routes for pod CIDRs.
    Route,
}

impl ControllerName {
    /// Every controller, in upstream's order.
    pub const ALL: [ControllerName; 4] =
        [ControllerName::CloudNode, ControllerName::CloudNodeLifecycle, ControllerName::Service, ControllerName::Route];

    /// Its name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ControllerName::Service => "service",
            ControllerName::CloudNode => "cloud-node",
            ControllerName::CloudNodeLifecycle => "cloud-node-lifecycle",
            ControllerName::Route => "route",
        }
    }
}

impl ControllerName {
    /// Upstream's name for the controller, its events' reporting component
    /// but for the route controller's (`route_controller`).
    pub fn upstream_name(self) -> &'static str {
        match self {
            ControllerName::Service => "service-controller",
            ControllerName::CloudNode => "cloud-node-controller",
            ControllerName::CloudNodeLifecycle => "cloud-node-lifecycle-controller",
            ControllerName::Route => "route-controller",
        }
    }

    /// The ServiceAccount it acts as with `--use-service-account-credentials`,
    /// upstream's: the two node controllers share `node-controller`, which
    /// the API server's bootstrap RBAC (`system:controller:node-controller`)
    /// already grants what they write.
    pub fn service_account(self) -> &'static str {
        match self {
            ControllerName::CloudNode | ControllerName::CloudNodeLifecycle => "node-controller",
            other => other.upstream_name(),
        }
    }

    /// The reporting component of its events, upstream's.
    pub fn event_component(self) -> &'static str {
        match self {
            ControllerName::Route => "route_controller",
            other => other.upstream_name(),
        }
    }
}

impl fmt::Display for ControllerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ControllerName {
    type Err = String;

    /// The short name, or upstream 1.33's (`service-lb-controller`,
    /// `cloud-node-controller`, `cloud-node-lifecycle-controller`,
    /// `node-route-controller`).
    fn from_str(name: &str) -> Result<Self, String> {
        let canonical = |controller: ControllerName| match controller {
            ControllerName::Service => "service-lb-controller",
            ControllerName::CloudNode => "cloud-node-controller",
            ControllerName::CloudNodeLifecycle => "cloud-node-lifecycle-controller",
            ControllerName::Route => "node-route-controller",
        };
        let named = |controller: &ControllerName| controller.as_str() == name || canonical(*controller) == name;
        ControllerName::ALL.into_iter().find(named).ok_or_else(|| {
            let known: Vec<&str> = ControllerName::ALL.iter().map(|controller| controller.as_str()).collect();
            format!("unknown controller {name:?}; known: {}", known.join(", "))
        })
    }
}

/// Whether `--controllers` names the route controller itself, not through
/// `*`: then it must run.
pub fn names_route(list: &[String]) -> bool {
    list.iter().any(|item| item.trim().parse() == Ok(ControllerName::Route))
}

/// Which controllers run, from upstream's `--controllers` syntax: `*` for
/// all, a name to enable one, `-name` to disable one.
///
/// # Errors
/// On an unknown name.
pub fn enabled_controllers(list: &[String]) -> Result<BTreeSet<ControllerName>, String> {
    let mut enabled = BTreeSet::new();
    let mut disabled = BTreeSet::new();
    for item in list.iter().map(|item| item.trim()).filter(|item| !item.is_empty()) {
        match item {
            "*" => enabled.extend(ControllerName::ALL),
            _ => match item.strip_prefix('-') {
                Some(name) => {
                    disabled.insert(name.parse()?);
                }
                None => {
                    enabled.insert(item.parse()?);
                }
            },
        }
    }
    Ok(enabled.difference(&disabled).copied().collect())
}

/// How the controllers run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The controllers to run.
    pub controllers: BTreeSet<ControllerName>,
    /// `--cluster-name`, passed to the provider.
    pub cluster_name: String,
    /// `--cluster-cidr`: the networks routes are managed in. Without it the
    /// route controller does not run, unless it is named in `--controllers`,
    /// which is then an error.
    pub cluster_cidrs: Vec<IpNet>,
    /// `--service-cluster-ip-range`: the networks Services' cluster IPs
    /// come from, which no load balancer may answer as its ingress.
    pub service_cidrs: Vec<IpNet>,
    /// Whether `--controllers` names the route controller itself.
    pub route_explicitly_enabled: bool,
    /// `--configure-cloud-routes`.
    pub configure_cloud_routes: bool,
    /// `--concurrent-service-syncs`.
    pub concurrent_service_syncs: usize,
    /// `--concurrent-node-syncs`: nodes initialised at once.
    pub concurrent_node_syncs: usize,
    /// `--concurrent-node-status-updates`: initialised nodes whose
    /// addresses are refreshed at once.
    pub concurrent_node_status_updates: usize,
    /// `--concurrent-node-lifecycle-syncs`: not-Ready nodes checked at once.
    pub concurrent_node_lifecycle_syncs: usize,
    /// `--node-monitor-period`.
    pub node_monitor_period: Duration,
    /// `--node-status-update-frequency`.
    pub node_status_update_frequency: Duration,
    /// `--route-reconciliation-period`.
    pub route_reconciliation_period: Duration,
    /// Upstream's alpha gate `CloudControllerManagerWatchBasedRoutesReconciliation`:
    /// node changes that concern routes also start a route reconcile.
    pub watch_based_routes: bool,
    /// How often every load balancer is ensured again to repair drift in the
    /// cloud; zero disables it.
    pub load_balancer_resync_period: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            controllers: ControllerName::ALL.into_iter().collect(),
            cluster_name: wasm_ccm_cloud::DEFAULT_CLUSTER_NAME.to_owned(),
            cluster_cidrs: Vec::new(),
            service_cidrs: Vec::new(),
            route_explicitly_enabled: false,
            configure_cloud_routes: true,
            concurrent_service_syncs: 20,
            concurrent_node_syncs: 10,
            concurrent_node_status_updates: 10,
            concurrent_node_lifecycle_syncs: 10,
            node_monitor_period: Duration::from_secs(5),
            node_status_update_frequency: Duration::from_secs(300),
            route_reconciliation_period: Duration::from_secs(10),
            watch_based_routes: false,
            load_balancer_resync_period: Duration::from_secs(600),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_s_canonical_names_name_the_controllers() {
        let list = ["service-lb-controller", "-node-route-controller", "cloud-node-controller"];
        assert_eq!(parse(&list), Ok(vec!["service", "cloud-node"]));
        assert_eq!(parse(&["*", "-cloud-node-lifecycle-controller"]), Ok(vec!["service", "cloud-node", "route"]));
        assert!(names_route(&["node-route-controller".to_owned()]));
    }

    #[test]
    fn the_node_controllers_act_as_upstream_s_node_controller() {
        let accounts: Vec<_> = ControllerName::ALL.iter().map(|controller| controller.service_account()).collect();
        assert_eq!(accounts, ["node-controller", "node-controller", "service-controller", "route-controller"]);
    }

    fn parse(list: &[&str]) -> Result<Vec<&'static str>, String> {
        let list: Vec<String> = list.iter().map(|item| (*item).to_owned()).collect();
        Ok(enabled_controllers(&list)?.into_iter().map(ControllerName::as_str).collect())
    }

    #[test]
    fn parses_upstream_controller_lists() {
        assert_eq!(parse(&["*"]).unwrap(), ["service", "cloud-node", "cloud-node-lifecycle", "route"]);
        assert_eq!(parse(&["*", "-route"]).unwrap(), ["service", "cloud-node", "cloud-node-lifecycle"]);
        assert_eq!(parse(&["service", "route"]).unwrap(), ["service", "route"]);
        assert_eq!(parse(&["-service", "*"]).unwrap(), ["cloud-node", "cloud-node-lifecycle", "route"]);
        assert!(parse(&[]).unwrap().is_empty());
        assert!(parse(&["services"]).unwrap_err().contains("unknown controller \"services\""));
    }
}
