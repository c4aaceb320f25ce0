//! The flags that set a provider's sandbox: its configuration,
//! credentials, allow-list and limits.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use wasm_ccm_host::{
    AllowList, Confinement, Credentials, Limits, MAX_INPUT_FILE, MAX_LINEAR_MEMORY, ProviderSpec, Seal,
};
use wasm_ccm_reload::InputFiles;

use crate::OptionError;

/// A provider's configuration, credentials, allow-list and limits: every
/// provider flag but the component itself.
#[derive(Debug, Clone, clap::Args)]
pub struct SettingsArgs {
    /// The provider's configuration file, passed to it verbatim.
    #[arg(long = "cloud-config", value_name = "FILE")]
    pub cloud_config: Option<PathBuf>,
    /// A directory of credential files bound to the provider, such as a
    /// mounted Secret.
    #[arg(long = "provider-credentials", value_name = "DIR")]
    pub credentials: Option<PathBuf>,
    /// Credentials the host signs or authenticates requests with but never
    /// hands to the provider, each in the one role it may serve and to the
    /// one origin it may be sent to: `NAME=ROLE@https://host[:port]`,
    /// comma-separated, repeated for more origins (roles: `bearer`,
    /// `aws-sigv4-access-key-id`, `aws-sigv4-secret-access-key`,
    /// `aws-sigv4-session-token`).
    #[arg(long = "provider-sealed-credentials", value_name = "NAME=ROLE@ORIGIN", value_delimiter = ',', value_parser = clap::value_parser!(Seal))]
    pub sealed_credentials: Vec<Seal>,
    /// Certificate authorities (PEM) the provider's HTTPS connections trust
    /// beyond the system's, for a cloud API with a private CA.
    #[arg(long = "provider-ca-file", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Where the provider may send HTTP requests: `scheme://host[:ports]`,
    /// repeated or comma-separated. Empty: nowhere.
    #[arg(long = "provider-allow", value_name = "URL", value_delimiter = ',')]
    pub allow: Vec<String>,
    /// How long one provider call may take, host calls included (default:
    /// 30s).
    #[arg(long = "provider-deadline", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub deadline: Option<Duration>,
    /// The most memory one provider instance may use (default: 64MiB; at
    /// most 4GiB).
    #[arg(long = "provider-memory", value_name = "SIZE")]
    pub memory: Option<ByteSize>,
    /// Provider calls at once; more wait (default: 64).
    #[arg(long = "provider-concurrency", value_name = "N")]
    pub concurrency: Option<usize>,
    /// Instances kept from one call to the next, with what the calls left
    /// in their memory, for a provider that keeps state or caches between
    /// calls; at most `--provider-concurrency` (default: 0, a fresh
    /// instance for every call).
    #[arg(long = "provider-kept-instances", value_name = "N")]
    pub kept_instances: Option<usize>,
    /// The largest HTTP response body the provider may receive (default:
    /// 16MiB).
    #[arg(long = "provider-max-response", value_name = "SIZE")]
    pub max_response: Option<ByteSize>,
    /// The CPU the provider's guest code may use, all calls together:
    /// cores (`1`, `0.5`) or thousandths of one (`250m`) (default: 1).
    #[arg(long = "provider-cpu", value_name = "CORES", value_parser = cpu_millicores)]
    pub cpu: Option<NonZeroU32>,
    /// Which paths the configuration and certificate authorities may be
    /// read from: anywhere for flags, beneath `--providers-root` for a
    /// providers file.
    #[arg(skip)]
    pub confinement: Confinement,
    /// Which paths the credentials directory may be read from: the same,
    /// but anywhere for a directory the trust file gives.
    #[arg(skip)]
    pub credentials_confinement: Confinement,
}

impl SettingsArgs {
    /// The configuration file and credentials directory, to watch.
    pub fn input_files(&self) -> InputFiles {
        InputFiles {
            config: self.cloud_config.clone(),
            credentials: self.credentials.clone(),
            sealed: self.sealed_credentials.clone(),
            confinement: self.confinement.clone(),
            credentials_confinement: self.credentials_confinement.clone(),
        }
    }

    /// The limits the flags set, [`Limits::default`]'s where unset: a
    /// single provider's own, or every provider's ceiling and default.
    ///
    /// # Errors
    /// When a flag is out of its range.
    pub fn limits(&self) -> Result<Limits, OptionError> {
        if self.concurrency == Some(0) {
            return Err(OptionError::OutOfRange { option: "--provider-concurrency", bound: "at least 1" });
        }
        if self.deadline.is_some_and(|deadline| deadline.is_zero()) {
            return Err(OptionError::OutOfRange { option: "--provider-deadline", bound: "longer than zero" });
        }
        if self.memory.is_some_and(|memory| memory.as_u64() > MAX_LINEAR_MEMORY) {
            return Err(OptionError::OutOfRange {
                option: "--provider-memory",
                bound: "at most 4GiB, the most a 32-bit linear memory holds",
            });
        }
        let defaults = Limits::default();
        let concurrency = self.concurrency.unwrap_or(defaults.concurrency);
        let kept_instances = self.kept_instances.unwrap_or(defaults.kept_instances);
        if kept_instances > concurrency {
            return Err(OptionError::OutOfRange {
                option: "--provider-kept-instances",
                bound: "at most --provider-concurrency: more would never be used",
            });
        }
        Ok(Limits {
            deadline: self.deadline.unwrap_or(defaults.deadline),
            memory: self.memory.map_or(defaults.memory, |memory| memory.as_u64()),
            concurrency,
            kept_instances,
            http_response_body: self
                .max_response
                .map_or(defaults.http_response_body, |size| usize::try_from(size.as_u64()).unwrap_or(usize::MAX)),
            cpu_millicores: self.cpu.unwrap_or(defaults.cpu_millicores),
            ..defaults
        })
    }

    /// A spec without the component: the configuration, credentials,
    /// allow-list and limits, checked and read (each file at most
    /// [`MAX_INPUT_FILE`], within the confinement).
    ///
    /// # Errors
    /// When a file cannot be read or a flag is invalid.
    pub fn template(&self, name: &str, cluster_name: &str) -> Result<ProviderSpec, OptionError> {
        let limits = self.limits()?;
        let read = |option, path: &PathBuf| {
            self.confinement.read(path, MAX_INPUT_FILE).map_err(OptionError::reading(option, path))
        };
        let config = match &self.cloud_config {
            Some(path) => read("--cloud-config", path)?,
            None => Vec::new(),
        };
        let credentials = match &self.credentials {
            Some(dir) => Credentials::from_dir(dir, &self.credentials_confinement)?,
            None => Credentials::default(),
        }
        .seal(self.sealed_credentials.clone())?;
        let allow_list = AllowList::parse(&self.allow)?;
        let trusted_certificates = match &self.ca_file {
            Some(path) => Some(read("--provider-ca-file", path)?.into()),
            None => None,
        };
        Ok(ProviderSpec {
            name: name.to_owned(),
            wasm: Vec::new().into(),
            config: config.into(),
            cluster_name: cluster_name.to_owned(),
            credentials,
            allow_list,
            trusted_certificates,
            limits,
        })
    }
}

/// A CPU share in thousandths of a core, as Kubernetes writes CPU
/// quantities: `2`, `0.5` or `500m`.
pub(crate) fn cpu_millicores(quantity: &str) -> Result<NonZeroU32, String> {
    let quantity = quantity.trim();
    let millicores = match quantity.strip_suffix('m') {
        Some(millicores) => millicores.parse::<u32>().ok(),
        None => quantity
            .parse::<f64>()
            .ok()
            .filter(|cores| cores.is_finite() && *cores > 0.0 && *cores <= 1024.0)
            .map(|cores| (cores * 1000.0).round() as u32),
    };
    millicores
        .and_then(NonZeroU32::new)
        .ok_or_else(|| format!("{quantity:?} is not a CPU share: cores (1, 0.5) or millicores (250m), above zero"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_ccm_fleet::error_chain;

    #[test]
    fn cpu_shares_are_kubernetes_quantities() {
        assert_eq!(cpu_millicores("1").unwrap().get(), 1000);
        assert_eq!(cpu_millicores("0.25").unwrap().get(), 250);
        assert_eq!(cpu_millicores("500m").unwrap().get(), 500);
        for bad in ["0", "0m", "-1", "lots", "NaN"] {
            assert!(cpu_millicores(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_out_of_range_are_refused_naming_their_flag() {
        let args = |concurrency, deadline| SettingsArgs {
            concurrency,
            deadline,
            ..<Flags as clap::Parser>::parse_from(["wasm-ccm"]).settings
        };
        let refused = |args: SettingsArgs| args.template("p", "kubernetes").err().expect("refused").to_string();
        assert_eq!(refused(args(Some(0), None)), "--provider-concurrency must be at least 1");
        assert_eq!(refused(args(None, Some(Duration::ZERO))), "--provider-deadline must be longer than zero");
        let too_large = SettingsArgs { memory: Some(ByteSize::gib(5)), ..args(None, None) };
        assert_eq!(refused(too_large), "--provider-memory must be at most 4GiB, the most a 32-bit linear memory holds");
        let kept = |kept| SettingsArgs { kept_instances: Some(kept), ..args(Some(3), None) };
        assert_eq!(
            refused(kept(4)),
            "--provider-kept-instances must be at most --provider-concurrency: more would never be used"
        );
        assert_eq!(kept(3).limits().unwrap().kept_instances, 3);
        let spec = args(Some(3), Some(Duration::from_secs(2))).template("p", "kubernetes").unwrap();
        assert_eq!((spec.limits.concurrency, spec.limits.deadline), (3, Duration::from_secs(2)));
    }

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        settings: SettingsArgs,
    }

    #[test]
    fn an_endless_configuration_file_fails_clearly() {
        let flags = <Flags as clap::Parser>::try_parse_from(["wasm-ccm", "--cloud-config", "/dev/zero"])
            .unwrap_or_else(|err| panic!("{err}"));
        let err = error_chain(&flags.settings.template("p", "kubernetes").err().expect("refused"));
        assert_eq!(err, "cannot read --cloud-config /dev/zero: it is larger than 1 MiB, the most read");
    }

    #[test]
    fn a_sealed_credential_names_its_role_and_origin() {
        let flags = <Flags as clap::Parser>::try_parse_from([
            "wasm-ccm",
            "--provider-sealed-credentials",
            "key=aws-sigv4-secret-access-key@https://ec2.example,key=aws-sigv4-secret-access-key@https://elb.example",
        ])
        .unwrap_or_else(|err| panic!("{err}"));
        let origins: Vec<String> =
            flags.settings.sealed_credentials.iter().map(|seal| seal.origin.to_string()).collect();
        assert_eq!(origins, ["https://ec2.example", "https://elb.example"]);
        let bare = <Flags as clap::Parser>::try_parse_from([
            "wasm-ccm",
            "--provider-sealed-credentials",
            "secret-access-key=aws-sigv4-secret-access-key",
        ])
        .err()
        .expect("a sealed credential without an origin is refused")
        .to_string();
        assert!(bare.contains("it names no origin"), "{bare}");
    }
}
