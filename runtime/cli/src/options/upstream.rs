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
    /// Untagged clouds are the provider's concern: accepted with a warning.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub allow_untagged_cloud: Option<bool>,
    /// Node sets are synced as nodes change, not periodically: accepted
    /// with a warning.
    #[arg(long, value_name = "DURATION")]
    pub node_sync_period: Option<String>,
    /// There is no webhook server: accepted with a warning unless `0`.
    #[arg(long, value_name = "PORT")]
    pub webhook_secure_port: Option<u16>,
    /// There are no webhooks: accepted with a warning.
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub webhooks: Vec<String>,
    /// Volumes are not the cloud controller manager's: accepted with a
    /// warning.
    #[arg(long, value_name = "NAME")]
    pub external_cloud_volume_plugin: Option<String>,
    /// The controllers start together: accepted with a warning.
    #[arg(long, value_name = "DURATION")]
    pub controller_start_interval: Option<String>,
    /// The admin server's certificate is `--tls-cert-file` or self-signed
    /// in memory: accepted with a warning.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<String>,
    /// The admin server authenticates bearer tokens only: accepted with a
    /// warning.
    #[arg(long, value_name = "FILE")]
    pub client_ca_file: Option<String>,
    /// The admin server keeps rustls' cipher suites and TLS versions:
    /// accepted with a warning.
    #[arg(long, value_delimiter = ',', value_name = "SUITE")]
    pub tls_cipher_suites: Vec<String>,
    /// As `--tls-cipher-suites`.
    #[arg(long, value_name = "VERSION")]
    pub tls_min_version: Option<String>,
    /// The admin server serves one certificate: accepted with a warning.
    #[arg(long, value_name = "CERT,KEY[:NAMES]")]
    pub tls_sni_cert_key: Vec<String>,
    /// Front-proxy headers are never trusted here, the admin server
    /// authenticating bearer tokens only: accepted with a warning, as the
    /// other `--requestheader-*` flags.
    #[arg(long, value_name = "FILE")]
    pub requestheader_client_ca_file: Option<String>,
    /// As `--requestheader-client-ca-file`.
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub requestheader_allowed_names: Vec<String>,
    /// As `--requestheader-client-ca-file`.
    #[arg(long, value_delimiter = ',', value_name = "HEADER")]
    pub requestheader_username_headers: Vec<String>,
    /// As `--requestheader-client-ca-file`.
    #[arg(long, value_delimiter = ',', value_name = "HEADER")]
    pub requestheader_group_headers: Vec<String>,
    /// As `--requestheader-client-ca-file`.
    #[arg(long, value_delimiter = ',', value_name = "PREFIX")]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// No client CA is looked up in the cluster: accepted with a warning.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub authentication_skip_lookup: Option<bool>,
    /// As `--authentication-skip-lookup`.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub authentication_tolerate_lookup_failure: Option<bool>,
    /// The admin server keeps its HTTP/2 defaults: accepted with a warning.
    #[arg(long, value_name = "N")]
    pub http2_max_streams_per_connection: Option<u32>,
    /// The admin port is never shared: `true` is accepted with a warning,
    /// as for `--permit-address-sharing`.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub permit_port_sharing: Option<bool>,
    /// As `--permit-port-sharing`.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub permit_address_sharing: Option<bool>,
    /// There are no profiling handlers: `true` is accepted with a warning.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub contention_profiling: Option<bool>,
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
        ignored(self.allow_untagged_cloud.is_some(), "--allow-untagged-cloud", "tags are the provider's concern");
        ignored(self.node_sync_period.is_some(), "--node-sync-period", "node sets sync as nodes change");
        ignored(
            self.webhook_secure_port.is_some_and(|port| port != 0),
            "--webhook-secure-port",
            "there are no webhooks",
        );
        ignored(!self.webhooks.is_empty(), "--webhooks", "there are no webhooks");
        ignored(
            self.external_cloud_volume_plugin.is_some(),
            "--external-cloud-volume-plugin",
            "volumes are not the cloud controller manager's",
        );
        ignored(
            self.controller_start_interval.is_some(),
            "--controller-start-interval",
            "the controllers start together",
        );
        ignored(self.cert_dir.is_some(), "--cert-dir", "the certificate is --tls-cert-file's or self-signed in memory");
        ignored(self.client_ca_file.is_some(), "--client-ca-file", "the admin server authenticates bearer tokens");
        ignored(
            !self.tls_cipher_suites.is_empty() || self.tls_min_version.is_some(),
            "--tls-cipher-suites/--tls-min-version",
            "the admin server keeps rustls' suites and versions (TLS 1.2 and 1.3)",
        );
        ignored(!self.tls_sni_cert_key.is_empty(), "--tls-sni-cert-key", "the admin server serves one certificate");
        let request_headers = self.requestheader_client_ca_file.is_some()
            || !self.requestheader_allowed_names.is_empty()
            || !self.requestheader_username_headers.is_empty()
            || !self.requestheader_group_headers.is_empty()
            || !self.requestheader_extra_headers_prefix.is_empty();
        ignored(
            request_headers,
            "--requestheader-*",
            "front-proxy headers are never trusted; the admin server authenticates bearer tokens",
        );
        ignored(
            self.authentication_skip_lookup.is_some() || self.authentication_tolerate_lookup_failure.is_some(),
            "--authentication-skip-lookup/--authentication-tolerate-lookup-failure",
            "no client CA is looked up in the cluster",
        );
        ignored(
            self.http2_max_streams_per_connection.is_some(),
            "--http2-max-streams-per-connection",
            "the admin server keeps its HTTP/2 defaults",
        );
        ignored(
            self.permit_port_sharing == Some(true) || self.permit_address_sharing == Some(true),
            "--permit-port-sharing/--permit-address-sharing",
            "the admin port is never shared",
        );
        ignored(
            self.contention_profiling == Some(true),
            "--contention-profiling=true",
            "there are no profiling handlers",
        );
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
            "--allow-untagged-cloud",
            "--node-sync-period=1m",
            "--webhook-secure-port=10260",
            "--webhooks=*",
            "--external-cloud-volume-plugin=aws",
            "--controller-start-interval=10s",
            "--cert-dir=/var/run/ccm",
            "--client-ca-file=/etc/kubernetes/pki/ca.crt",
            "--tls-min-version=VersionTLS12",
            "--tls-sni-cert-key=/etc/ccm/a.crt,/etc/ccm/a.key",
            "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--authentication-skip-lookup",
            "--http2-max-streams-per-connection=1000",
            "--permit-port-sharing",
            "--contention-profiling",
        ])
        .unwrap();
        let notices = args.upstream.notices();
        assert_eq!(notices.len(), 22, "{notices:?}");
        assert!(!notices[0].0, "the provider's name is information");
        assert!(notices[1..].iter().all(|(warning, _)| *warning), "{notices:?}");
        let quiet = Command::try_parse_from([
            "ccm",
            "--allocate-node-cidrs=false",
            "--profiling=false",
            "--webhook-secure-port=0",
            "--permit-port-sharing=false",
            "--contention-profiling=false",
        ])
        .unwrap();
        assert!(quiet.upstream.notices().is_empty(), "what changes nothing is not reported");
    }
}
