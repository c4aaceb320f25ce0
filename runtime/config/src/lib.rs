//! The providers a wasm-ccm process is asked to run, as the operator and
//! whoever edits a providers file ask for them: the provider flags
//! ([`SettingsArgs`], [`SourceArgs`], [`RegistryArgs`]), the operator's
//! trust file ([`TrustFile`]), and the providers file ([`plan`]), each
//! read and checked into what the fleet loads
//! ([`PlannedProvider`]). A providers-file entry is read through the same
//! checks as the flags, and may only narrow what the trust file gives it.

mod error;
mod providers_file;
mod registry;
mod settings;
mod source;
mod trust;

pub use error::OptionError;
pub use providers_file::{
    FileDefaults, InvalidProvidersFile, LimitsEntry, PlannedProvider, ProviderEntry, ProviderLoad, ProvidersFile, plan,
};
pub use registry::RegistryArgs;
pub use settings::SettingsArgs;
pub use source::SourceArgs;
pub use trust::{Trust, TrustFile, Trusted, UNLISTED};
