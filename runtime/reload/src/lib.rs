//! Where wasm-ccm providers come from, and how a new version replaces the
//! one serving without a failed call.
//!
//! - [`Location`]: `--provider`'s syntax: a file path,
//!   `configmap:NAMESPACE/NAME/KEY`, or `oci://registry/repository:tag`
//!   (or `@sha256:...`).
//! - [`Source`]: one per provider, built from [`SourceSettings`]: a
//!   [`FileSource`] polled, a [`ConfigMapSource`] watched through the API,
//!   an [`OciSource`] whose tag is polled and pulled by digest. Each offers
//!   [`Candidate`]s that already passed the pin and signature checks.
//! - [`Reloader`]: loads the first version, then for every candidate, and
//!   every change of the configuration file or credentials
//!   ([`InputFiles`]): compile, world check, smoke test, then an atomic
//!   swap of the [`ProviderHandle`](wasm_ccm_host::ProviderHandle). A
//!   candidate that fails is rejected with a Warning event, a log line and
//!   a metric, and the version serving keeps serving.
//! - [`ReloadMetrics`], [`StatusBoard`] and [`Reporter`]: what was loaded
//!   and rejected, as metrics, as `/providers` JSON, and as events.
//!
//! ```no_run
//! use std::time::Duration;
//! use tokio_util::sync::CancellationToken;
//! use wasm_ccm_host::{AllowList, Credentials, Engine, EngineSettings, Limits, ProviderSpec};
//! use wasm_ccm_reload::{InputFiles, Observers, Reloader, SourceSettings};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Engine::new(EngineSettings::default())?;
//! let settings = SourceSettings::new("oci://registry.example/providers/acme:stable".parse()?);
//! let template = ProviderSpec {
//!     name: "acme".into(),
//!     wasm: Vec::new().into(),
//!     config: Vec::new().into(),
//!     cluster_name: "prod".into(),
//!     credentials: Credentials::default(),
//!     allow_list: AllowList::default(),
//!     trusted_certificates: None,
//!     limits: Limits::default(),
//! };
//! let inputs = InputFiles { config: Some("/etc/acme/cloud.conf".into()), ..InputFiles::default() };
//! let reloader =
//!     Reloader::start(&engine, template, settings.build(None)?, inputs, Duration::from_secs(30), Observers::default())
//!         .await?;
//! let handle = reloader.handle(); // give this to the controllers
//! tokio::spawn(reloader.run(CancellationToken::new()));
//! # drop(handle); Ok(()) }
//! ```

mod candidate;
mod configmap;
mod error;
mod file;
mod inputs;
mod location;
mod metrics;
mod oci;
mod reloader;
mod report;
mod source;
mod status;
mod versions;

pub use candidate::Candidate;
pub use configmap::ConfigMapSource;
pub use error::{SourceError, StartError};
pub use file::FileSource;
pub use inputs::{InputFiles, Inputs};
pub use location::{CONFIGMAP_PREFIX, Location};
pub use metrics::ReloadMetrics;
pub use oci::OciSource;
pub use reloader::{Observers, Reloader};
pub use report::{REJECTED, RELOADED, Reporter, config_map_reference, own_pod_reference};
pub use source::{DEFAULT_POLL_INTERVAL, Source, SourceSettings};
pub use status::{ProviderStatus, Rejection, StatusBoard};
pub use versions::{RecordError, VERSION_ANNOTATION_PREFIX, VersionRecord};
