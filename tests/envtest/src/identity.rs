//! Who a client of the control plane is: bearer tokens from a static token
//! file, each for one user and its groups.

use std::hash::{BuildHasher, RandomState};

/// A user of the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Identity {
    /// A cluster administrator (`system:masters`): for setting up tests and
    /// reading what the controllers did.
    Admin,
    /// The in-cluster identity of `deploy/`, the ServiceAccount
    /// `kube-system/cloud-controller-manager`, allowed exactly what
    /// `deploy/rbac.yaml` grants.
    CloudControllerManager,
    /// Upstream's controller manager in side-by-side runs: a ServiceAccount
    /// of `kube-system` too, so that priority and fairness and the
    /// authorizer treat its requests as they treat wasm-ccm's, bound to
    /// `cluster-admin` so that none is refused; its requests are audited
    /// apart.
    UpstreamControllerManager,
}

impl Identity {
    /// Every identity.
    pub const ALL: [Identity; 3] =
        [Identity::Admin, Identity::CloudControllerManager, Identity::UpstreamControllerManager];

    /// The user name the API server knows it by.
    pub fn user(self) -> &'static str {
        match self {
            Identity::Admin => "envtest-admin",
            Identity::CloudControllerManager => "system:serviceaccount:kube-system:cloud-controller-manager",
            Identity::UpstreamControllerManager => {
                "system:serviceaccount:kube-system:upstream-cloud-controller-manager"
            }
        }
    }

    /// The groups the API server puts the user in, comma-separated.
    pub fn groups(self) -> &'static str {
        match self {
            Identity::Admin => "system:masters,system:authenticated",
            Identity::CloudControllerManager | Identity::UpstreamControllerManager => {
                "system:serviceaccounts,system:serviceaccounts:kube-system,system:authenticated"
            }
        }
    }
}

/// A bearer token per identity, and the token file the API server reads.
#[derive(Debug, Clone)]
pub(crate) struct Tokens {
    tokens: Vec<(Identity, String)>,
}

impl Tokens {
    /// Fresh random tokens.
    pub(crate) fn generate() -> Self {
        let random = || format!("{:016x}{:016x}", RandomState::new().hash_one(1u8), RandomState::new().hash_one(2u8));
        Tokens { tokens: Identity::ALL.iter().map(|identity| (*identity, random())).collect() }
    }

    /// `identity`'s token.
    pub(crate) fn token(&self, identity: Identity) -> &str {
        self.tokens.iter().find(|(known, _)| *known == identity).map(|(_, token)| token.as_str()).unwrap_or_default()
    }

    /// `--token-auth-file`: `token,user,uid,"group,group"` a line.
    pub(crate) fn file(&self) -> String {
        self.tokens
            .iter()
            .enumerate()
            .map(|(uid, (identity, token))| format!("{token},{},{uid},\"{}\"\n", identity.user(), identity.groups()))
            .collect()
    }
}
