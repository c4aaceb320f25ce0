//! A real Kubernetes control plane on loopback for tests and benchmarks, as
//! controller-runtime's envtest starts one: etcd and `kube-apiserver` from
//! the envtest assets, on free ports, with a fresh data directory, stopped
//! when dropped.
//!
//! ```no_run
//! # async fn demo() -> Result<(), wasm_ccm_envtest::EnvtestError> {
//! use wasm_ccm_envtest::{ControlPlane, Identity};
//!
//! let Some(assets) = wasm_ccm_envtest::Assets::find_or_skip("my test")? else {
//!     return Ok(());
//! };
//! let plane = ControlPlane::start(&assets, Default::default()).await?;
//! let admin = plane.client(Identity::Admin).await?;
//! let controller = plane.client(Identity::CloudControllerManager).await?;
//! # let _ = (admin, controller);
//! # Ok(())
//! # }
//! ```
//!
//! The binaries come from `KUBEBUILDER_ASSETS` (a directory holding
//! `kube-apiserver` and `etcd`) or from `TEST_ASSET_KUBE_APISERVER` and
//! `TEST_ASSET_ETCD`. Where they are missing, [`Assets::find_or_skip`] says
//! so on the terminal and the caller skips, unless `WASM_CCM_REQUIRE_ENVTEST`
//! is set, as it is in CI, where a missing binary is an error.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

mod assets;
mod audit;
mod control_plane;
mod error;
mod identity;
pub mod pki;
mod process;
mod rbac;

pub use assets::Assets;
pub use audit::{AuditedRequest, AuditedRequests};
pub use control_plane::{ControlPlane, Options};
pub use error::EnvtestError;
pub use identity::Identity;
