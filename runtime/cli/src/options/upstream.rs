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
    /// Upstream's feature gates: `CloudControllerManagerWatchBasedRoutesReconciliation`
    /// is honoured; the others are accepted with a warning.
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
    /// As `--tls-cipher-suites`.
    #[arg(long, value_delimiter = ',', value_name = "CURVE")]
    pub tls_curve_preferences: Vec<String>,
    /// The admin server keeps its HTTP/2 defaults: `true` is accepted with
    /// a warning.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub disable_http2_serving: Option<bool>,
    /// As `--requestheader-client-ca-file`.
    #[arg(long, value_delimiter = ',', value_name = "HEADER")]
    pub requestheader_uid_headers: Vec<String>,
    /// Leader migration hands controllers over from kube-controller-manager;
    /// wasm-ccm takes its own lease: `true` is accepted with a warning.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub enable_leader_migration: Option<bool>,
    /// As `--enable-leader-migration`.
    #[arg(long, value_name = "FILE")]
    pub leader_migration_config: Option<String>,
    /// klog's flush interval: logs are written as they come here; accepted
    /// with a warning, as the other `--log-*` flags of klog's.
    #[arg(long, value_name = "DURATION")]
    pub log_flush_frequency: Option<String>,
    /// As `--log-flush-frequency`.
    #[arg(long, value_name = "SIZE")]
    pub log_json_info_buffer_size: Option<String>,
    /// As `--log-flush-frequency`.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub log_json_split_stream: Option<bool>,
    /// As `--log-flush-frequency`.
    #[arg(long, value_name = "SIZE")]
    pub log_text_info_buffer_size: Option<String>,
    /// As `--log-flush-frequency`.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub log_text_split_stream: Option<bool>,
    /// klog's per-file verbosity: `--log-level` takes per-module directives
    /// here; accepted with a warning.
    #[arg(long, value_name = "PATTERN=N")]
    pub vmodule: Option<String>,
    /// There is no webhook server: accepted with a warning, as the other
    /// `--webhook-*` flags.
    #[arg(long, value_name = "ADDRESS")]
    pub webhook_bind_address: Option<String>,
    /// As `--webhook-bind-address`.
    #[arg(long, value_name = "DIR")]
    pub webhook_cert_dir: Option<String>,
    /// As `--webhook-bind-address`.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub webhook_disable_http2_serving: Option<bool>,
    /// As `--webhook-bind-address`.
    #[arg(long, value_name = "FILE")]
    pub webhook_tls_cert_file: Option<String>,
    /// As `--webhook-bind-address`.
    #[arg(long, value_name = "FILE")]
    pub webhook_tls_private_key_file: Option<String>,
    /// As `--webhook-bind-address`.
    #[arg(long, value_delimiter = ',', value_name = "SUITE")]
    pub webhook_tls_cipher_suites: Vec<String>,
    /// As `--webhook-bind-address`.
    #[arg(long, value_delimiter = ',', value_name = "CURVE")]
    pub webhook_tls_curve_preferences: Vec<String>,
    /// As `--webhook-bind-address`.
    #[arg(long, value_name = "VERSION")]
    pub webhook_tls_min_version: Option<String>,
    /// As `--webhook-bind-address`.
    #[arg(long, value_name = "CERT,KEY[:NAMES]")]
    pub webhook_tls_sni_cert_key: Vec<String>,
}

/// Upstream's gate for route reconciles started by node changes.
pub const WATCH_BASED_ROUTES: &str = "CloudControllerManagerWatchBasedRoutesReconciliation";

/// The name of a `--feature-gates` entry `Name=bool`.
fn gate_name(gate: &str) -> &str {
    gate.split_once('=').map_or(gate, |(name, _)| name).trim()
}

impl UpstreamArgs {
    /// Whether `--feature-gates` turns [`WATCH_BASED_ROUTES`] on.
    ///
    /// # Errors
    /// When its value is not a boolean.
    pub fn watch_based_routes(&self) -> anyhow::Result<bool> {
        let mut enabled = false;
        for gate in self.feature_gates.iter().filter(|gate| gate_name(gate) == WATCH_BASED_ROUTES) {
            let value = gate.split_once('=').map_or("", |(_, value)| value.trim());
            enabled = value.parse().map_err(|_| anyhow::anyhow!("--feature-gates: {gate}: not true or false"))?;
        }
        Ok(enabled)
    }

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
        let others: Vec<&str> = self
            .feature_gates
            .iter()
            .map(String::as_str)
            .filter(|gate| gate_name(gate) != WATCH_BASED_ROUTES)
            .collect();
        ignored(
            !others.is_empty(),
            &format!("--feature-gates={}", others.join(",")),
            "only WatchBasedRoutes' gate applies",
        );
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
            !self.tls_cipher_suites.is_empty()
                || self.tls_min_version.is_some()
                || !self.tls_curve_preferences.is_empty(),
            "--tls-cipher-suites/--tls-min-version/--tls-curve-preferences",
            "the admin server keeps rustls' suites and versions (TLS 1.2 and 1.3)",
        );
        ignored(!self.tls_sni_cert_key.is_empty(), "--tls-sni-cert-key", "the admin server serves one certificate");
        let request_headers = self.requestheader_client_ca_file.is_some()
            || !self.requestheader_allowed_names.is_empty()
            || !self.requestheader_username_headers.is_empty()
            || !self.requestheader_group_headers.is_empty()
            || !self.requestheader_extra_headers_prefix.is_empty()
            || !self.requestheader_uid_headers.is_empty();
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
        ignored(
            self.disable_http2_serving == Some(true),
            "--disable-http2-serving=true",
            "the admin server keeps its HTTP/2 defaults",
        );
        ignored(
            self.enable_leader_migration == Some(true) || self.leader_migration_config.is_some(),
            "--enable-leader-migration/--leader-migration-config",
            "wasm-ccm takes its own lease, --leader-elect-resource-name",
        );
        let klog = self.log_flush_frequency.is_some()
            || self.log_json_info_buffer_size.is_some()
            || self.log_json_split_stream.is_some()
            || self.log_text_info_buffer_size.is_some()
            || self.log_text_split_stream.is_some();
        ignored(klog, "klog's --log-* flags", "logs are written to stderr as they come");
        ignored(self.vmodule.is_some(), "--vmodule", "--log-level takes per-module directives");
        let webhooks = self.webhook_bind_address.is_some()
            || self.webhook_cert_dir.is_some()
            || self.webhook_disable_http2_serving.is_some()
            || self.webhook_tls_cert_file.is_some()
            || self.webhook_tls_private_key_file.is_some()
            || !self.webhook_tls_cipher_suites.is_empty()
            || !self.webhook_tls_curve_preferences.is_empty()
            || self.webhook_tls_min_version.is_some()
            || !self.webhook_tls_sni_cert_key.is_empty();
        ignored(webhooks, "--webhook-*", "there are no webhooks");
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
            "--disable-http2-serving",
            "--enable-leader-migration",
            "--log-flush-frequency=5s",
            "--vmodule=controller*=4",
            "--webhook-bind-address=0.0.0.0",
        ])
        .unwrap();
        let notices = args.upstream.notices();
        assert_eq!(notices.len(), 27, "{notices:?}");
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
