//! Flags of upstream's cloud-controller-manager that mean nothing here:
//! accepted, so that an existing manifest runs unchanged but for the
//! provider, and never silently: each one set is logged with what it does
//! here.

use clap::ArgAction;

/// Upstream's flags that wasm-ccm accepts without acting on them.
#[derive(Debug, Default, clap::Args)]
pub struct UpstreamArgs {
    /// Upstream's provider name (`--cloud-provider=aws`); the provider is
    /// `--provider` here. Logged.
    #[arg(long, value_name = "NAME")]
    pub cloud_provider: Option<String>,
    /// Pod CIDRs are allocated by kube-controller-manager here, not by the
    /// cloud controller manager: `true` is accepted with a warning.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub allocate_node_cidrs: Option<bool>,
    /// Accepted with a warning, as `--allocate-node-cidrs`.
    #[arg(long, value_name = "TYPE")]
    pub cidr_allocator_type: Option<String>,
    /// wasm-ccm has no feature gates: accepted with a warning.
    #[arg(long, value_delimiter = ',', value_name = "GATE=BOOL")]
    pub feature_gates: Vec<String>,
    /// There are no profiling handlers: `true` is accepted with a warning.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub profiling: Option<bool>,
    /// Requests and watches are JSON here: accepted with a warning.
    #[arg(long, value_name = "TYPE")]
    pub kube_api_content_type: Option<String>,
    /// The caches are never resynced in full: accepted with a warning.
    #[arg(long, value_name = "DURATION")]
    pub min_resync_period: Option<String>,
}

impl UpstreamArgs {
    /// What each flag set does here: `(is it a warning, message)`.
    pub fn notices(&self) -> Vec<(bool, String)> {
        let mut notices = Vec::new();
        if let Some(name) = &self.cloud_provider {
            notices.push((false, format!("--cloud-provider={name}: the provider is the component of --provider")));
        }
        let mut ignored = |set: bool, flag: &str, why: &str| {
            if set {
                notices.push((true, format!("{flag} is accepted for upstream's manifests and ignored: {why}")));
            }
        };
        ignored(
            self.allocate_node_cidrs == Some(true),
            "--allocate-node-cidrs=true",
            "pod CIDRs are kube-controller-manager's to allocate",
        );
        ignored(self.cidr_allocator_type.is_some(), "--cidr-allocator-type", "no pod CIDRs are allocated here");
        ignored(!self.feature_gates.is_empty(), "--feature-gates", "wasm-ccm has no feature gates");
        ignored(self.profiling == Some(true), "--profiling=true", "there are no profiling handlers");
        ignored(self.kube_api_content_type.is_some(), "--kube-api-content-type", "requests are JSON");
        ignored(self.min_resync_period.is_some(), "--min-resync-period", "the caches follow watches only");
        notices
    }

    /// Logs [`UpstreamArgs::notices`].
    pub fn report(&self) {
        for (warning, notice) in self.notices() {
            if warning {
                tracing::warn!("{notice}");
            } else {
                tracing::info!("{notice}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        upstream: UpstreamArgs,
    }

    #[test]
    fn upstream_s_flags_are_accepted_and_none_is_silent() {
        let args = Command::try_parse_from([
            "ccm",
            "--cloud-provider=aws",
            "--allocate-node-cidrs=true",
            "--cidr-allocator-type=RangeAllocator",
            "--feature-gates=CloudDualStackNodeIPs=true",
            "--profiling",
            "--kube-api-content-type=application/vnd.kubernetes.protobuf",
            "--min-resync-period=12h",
        ])
        .unwrap();
        let notices = args.upstream.notices();
        assert_eq!(notices.len(), 7, "{notices:?}");
        assert!(!notices[0].0, "the provider's name is information");
        assert!(notices[1..].iter().all(|(warning, _)| *warning), "{notices:?}");
        let quiet = Command::try_parse_from(["ccm", "--allocate-node-cidrs=false", "--profiling=false"]).unwrap();
        assert!(quiet.upstream.notices().is_empty(), "what changes nothing is not reported");
    }
}
