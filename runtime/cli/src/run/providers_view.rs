//! What the admin server's `/providers` shows of each provider: the
//! version serving and the last rejection, what it serves, its limits and
//! what it uses now. `wasm-ccm provider status` reads it back.

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
    /// Calls started per second, if limited.
    pub calls_per_second: Option<u32>,
    /// Outbound HTTP requests per second, if limited.
    pub http_requests_per_second: Option<u32>,
    /// Outbound HTTP requests at once after a quiet spell, if limited.
    pub http_burst: Option<u32>,
    /// The CPU of its guest code, all calls together, in thousandths of a
    /// core.
    pub cpu_millicores: u32,
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

impl From<&Limits> for LimitsView {
    fn from(limits: &Limits) -> Self {
        LimitsView {
            memory_bytes: limits.memory,
            deadline_seconds: limits.deadline.as_secs_f64(),
            concurrent_calls: limits.concurrency,
            calls_per_second: limits.calls.map(|rate| rate.per_second.get()),
            http_requests_per_second: limits.http_requests.map(|rate| rate.per_second.get()),
            http_burst: limits.http_requests.map(|rate| rate.burst.get()),
            cpu_millicores: limits.cpu_millicores.get(),
        }
    }
}

/// Every provider's view: the status board, and the providers serving
/// once they are loaded. Clones share it.
#[derive(Clone, Default)]
pub struct ProvidersView {
    status: StatusBoard,
    members: Arc<OnceLock<watch::Receiver<Members<ProviderHandle>>>>,
}

impl ProvidersView {
    /// A view of `status`, without providers serving yet.
    pub fn new(status: StatusBoard) -> Self {
        ProvidersView { status, members: Arc::default() }
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
                    limits: LimitsView::from(member.cloud.current().limits()),
                    usage: member.cloud.usage(),
                    code: member.cloud.current().code().as_str().to_owned(),
                    status,
                })
            })
            .collect()
    }
}
