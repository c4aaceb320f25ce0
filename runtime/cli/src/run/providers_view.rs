//! What the admin server's `/providers` shows of each provider: the
//! version serving and the last rejection, what it serves, its limits (and
//! which bound set each) and what it uses now. `wasm-ccm provider status`
//! reads it back.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use wasm_ccm_controllers::{Members, Serves};
use wasm_ccm_host::{Limits, ProviderHandle, Usage};
use wasm_ccm_reload::{ProviderStatus, StatusBoard};

/// One provider, as `/providers` lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    /// Its version serving and its last rejection.
    #[serde(flatten)]
    pub status: ProviderStatus,
    /// What it serves.
    pub serves: ServesView,
    /// What it may use.
    pub limits: LimitsView,
    /// What it uses now.
    pub usage: Usage,
    /// Whose code its calls run: `optimizing`, Cranelift's, or `baseline`,
    /// Winch's, while Cranelift compiles the version just loaded (or for
    /// good when that compile failed). Empty from a server that does not
    /// say.
    #[serde(default)]
    pub code: String,
}

/// What a provider serves.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServesView {
    /// The `spec.loadBalancerClass`es of its Services.
    pub load_balancer_classes: Vec<String>,
    /// Whether it serves Services without a class.
    pub default_load_balancer: bool,
    /// Whether it serves the node controllers.
    pub nodes: bool,
    /// Whether it serves the route controller.
    pub routes: bool,
}

/// A provider's limits.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitsView {
    /// Linear memory of one instance, bytes.
    pub memory_bytes: u64,
    /// Time one call may take, seconds.
    pub deadline_seconds: f64,
    /// Calls at once.
    pub concurrent_calls: usize,
    /// Instances kept between calls; 0: a fresh one for every call.
    #[serde(default)]
    pub kept_instances: usize,
    /// Calls started per second, if limited.
    pub calls_per_second: Option<u32>,
    /// Outbound HTTP requests per second, if limited.
    pub http_requests_per_second: Option<u32>,
    /// Outbound HTTP requests at once after a quiet spell, if limited.
    pub http_burst: Option<u32>,
    /// The CPU of its guest code, all calls together, in thousandths of a
    /// core.
    pub cpu_millicores: u32,
    /// The largest HTTP response body it may receive, bytes.
    #[serde(default)]
    pub max_response_bytes: u64,
    /// Which bound set each limit the operator caps.
    #[serde(default)]
    pub bound_by: LimitBounds,
}

/// Which bound set a limit: the operator's `--provider-*` flag, which is
/// every provider's default and ceiling, or a providers file's entry,
/// which may only lower it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Bound {
    /// The operator's flag, or its default.
    #[default]
    Operator,
    /// The provider's entry in the providers file, below the operator's.
    ProvidersFile,
}

impl Bound {
    /// The bound that set `limit`: a value below the `ceiling` can only
    /// have come from the providers file.
    fn of<T: PartialOrd>(limit: T, ceiling: T) -> Bound {
        if limit < ceiling { Bound::ProvidersFile } else { Bound::Operator }
    }
}

/// Which bound set each limit the operator caps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitBounds {
    /// Of `memoryBytes`.
    pub memory: Bound,
    /// Of `deadlineSeconds`.
    pub deadline: Bound,
    /// Of `concurrentCalls`.
    pub concurrent_calls: Bound,
    /// Of `keptInstances`.
    pub kept_instances: Bound,
    /// Of `maxResponseBytes`.
    pub max_response: Bound,
    /// Of `cpuMillicores`.
    pub cpu: Bound,
}

impl LimitBounds {
    /// Which of `limits` are below the operator's `ceilings`.
    fn of(limits: &Limits, ceilings: &Limits) -> Self {
        LimitBounds {
            memory: Bound::of(limits.memory, ceilings.memory),
            deadline: Bound::of(limits.deadline, ceilings.deadline),
            concurrent_calls: Bound::of(limits.concurrency, ceilings.concurrency),
            kept_instances: Bound::of(limits.kept_instances, ceilings.kept_instances),
            max_response: Bound::of(limits.http_response_body, ceilings.http_response_body),
            cpu: Bound::of(limits.cpu_millicores, ceilings.cpu_millicores),
        }
    }
}

impl From<&Serves> for ServesView {
    fn from(serves: &Serves) -> Self {
        ServesView {
            load_balancer_classes: serves.load_balancer_classes.iter().cloned().collect(),
            default_load_balancer: serves.default_load_balancer,
            nodes: serves.nodes,
            routes: serves.routes,
        }
    }
}

impl LimitsView {
    /// `limits`, each bound by the operator's `ceilings`.
    fn new(limits: &Limits, ceilings: &Limits) -> Self {
        LimitsView {
            memory_bytes: limits.memory,
            deadline_seconds: limits.deadline.as_secs_f64(),
            concurrent_calls: limits.concurrency,
            kept_instances: limits.kept_instances,
            calls_per_second: limits.calls.map(|rate| rate.per_second.get()),
            http_requests_per_second: limits.http_requests.map(|rate| rate.per_second.get()),
            http_burst: limits.http_requests.map(|rate| rate.burst.get()),
            cpu_millicores: limits.cpu_millicores.get(),
            max_response_bytes: u64::try_from(limits.http_response_body).unwrap_or(u64::MAX),
            bound_by: LimitBounds::of(limits, ceilings),
        }
    }
}

/// Every provider's view: the status board, the operator's limits, and
/// the providers serving once they are loaded. Clones share it.
#[derive(Clone)]
pub struct ProvidersView {
    status: StatusBoard,
    ceilings: Arc<Limits>,
    members: Arc<OnceLock<watch::Receiver<Members<ProviderHandle>>>>,
}

impl ProvidersView {
    /// A view of `status` and of limits under the operator's `ceilings`,
    /// without providers serving yet.
    pub fn new(status: StatusBoard, ceilings: Limits) -> Self {
        ProvidersView { status, ceilings: Arc::new(ceilings), members: Arc::default() }
    }

    /// Shows the providers `members` holds from now on.
    pub fn serving(&self, members: watch::Receiver<Members<ProviderHandle>>) {
        let _ = self.members.set(members);
    }

    /// Every provider serving, by name.
    pub fn snapshot(&self) -> Vec<ProviderView> {
        let Some(members) = self.members.get() else {
            return Vec::new();
        };
        let members = members.borrow();
        self.status
            .snapshot()
            .into_iter()
            .filter_map(|status| {
                let member = members.get(status.name.as_str())?;
                Some(ProviderView {
                    serves: ServesView::from(&member.serves),
                    limits: LimitsView::new(member.cloud.current().limits(), &self.ceilings),
                    usage: member.cloud.usage(),
                    code: member.cloud.current().code().as_str().to_owned(),
                    status,
                })
            })
            .collect()
    }
}
