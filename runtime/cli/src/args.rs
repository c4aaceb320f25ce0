//! The command line.

use clap::{Parser, Subcommand};

use crate::completions::CompletionsArgs;
#[cfg(feature = "local")]
use crate::local::LocalArgs;
use crate::logging::LogArgs;
use crate::man::ManArgs;
use crate::provider::call::CallArgs;
use crate::provider::conformance::ConformanceArgs;
use crate::provider::inspect::InspectArgs;
use crate::provider::new::NewArgs;
use crate::provider::push::PushArgs;
use crate::provider::status::StatusArgs;
use crate::provider::verify::VerifyArgs;
use crate::run::RunArgs;

/// A Kubernetes cloud-controller-manager whose cloud provider is a
/// WebAssembly component.
#[derive(Debug, Parser)]
#[command(name = "wasm-ccm", version, about, max_term_width = 100)]
pub struct Args {
    /// How to log.
    #[command(flatten)]
    pub logging: LogArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the cloud controllers against a cluster.
    Run(Box<RunArgs>),
    /// Run wasm-ccm on an embedded local cluster with the fake provider,
    /// with sample nodes and Services, until Ctrl-C.
    #[cfg(feature = "local")]
    Local(LocalArgs),
    /// Work with provider components.
    #[command(subcommand)]
    Provider(Box<ProviderCommand>),
    /// Print the completion script of a shell, such as
    /// `source <(wasm-ccm completions bash)`.
    Completions(CompletionsArgs),
    /// Print wasm-ccm's man page, or write one page per command into a
    /// directory.
    Man(ManArgs),
    /// Compile one provider for a parent `wasm-ccm`, from standard input to
    /// standard output, under the limits it sets (not for people).
    #[command(name = "compile-worker", hide = true)]
    CompileWorker,
}

/// The `provider` commands.
#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// Load a provider and call one of its functions; prints the result as JSON.
    Call(CallArgs),
    /// Push a component to a registry as a CNCF WebAssembly artifact,
    /// optionally signing it as `cosign sign --key` does.
    Push(PushArgs),
    /// Describe a component, from a file or a registry: its world's imports
    /// and exports, digest and size, and whether this host can load it.
    Inspect(InspectArgs),
    /// Check a component's sha256 pin and signature, from a file or a
    /// registry; fails when it does not verify.
    Verify(VerifyArgs),
    /// Check that a provider behaves as the controllers expect, over every
    /// part it supports, with the nodes and Services of a fixture; fails
    /// when a check fails.
    Conformance(Box<ConformanceArgs>),
    /// Write a provider crate to start from: the SDK skeleton of the chosen
    /// parts, a native unit test and a README.
    New(NewArgs),
    /// Show each provider of a running controller manager: its version,
    /// what it serves, its limits and usage, from the admin server.
    Status(StatusArgs),
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// The arguments of upstream's cloud-controller-manager manifests, but
    /// for the provider.
    const UPSTREAM: &[&str] = &[
        "wasm-ccm",
        "run",
        "--provider=/etc/wasm-ccm/provider.wasm",
        "--cloud-provider=external",
        "--cloud-config=/etc/kubernetes/cloud.conf",
        "--use-service-account-credentials=true",
        "--allocate-node-cidrs=false",
        "--cidr-allocator-type=RangeAllocator",
        "--configure-cloud-routes=false",
        "--controllers=*,-route",
        "--leader-elect=true",
        "--leader-elect-resource-lock=leases",
        "--authentication-kubeconfig=/etc/kubernetes/ccm.conf",
        "--authorization-kubeconfig=/etc/kubernetes/ccm.conf",
        "--kubeconfig=/etc/kubernetes/ccm.conf",
        "--master=https://10.0.0.1:6443",
        "--bind-address=0.0.0.0",
        "--secure-port=10258",
        "--feature-gates=CloudDualStackNodeIPs=true",
        "--profiling=false",
        "--v=2",
    ];

    /// Argument lists modelled on Hetzner's hcloud-cloud-controller-manager
    /// manifest and a k3s external cloud provider example, with the
    /// provider added.
    const PUBLIC_MANIFESTS: [&[&str]; 2] = [
        &[
            "wasm-ccm",
            "run",
            "--provider=/etc/wasm-ccm/provider.wasm",
            "--allow-untagged-cloud",
            "--cloud-provider=hcloud",
            "--route-reconciliation-period=30s",
            "--webhook-secure-port=0",
            "--leader-elect=false",
        ],
        &[
            "wasm-ccm",
            "run",
            "--provider=/etc/wasm-ccm/provider.wasm",
            "--cloud-provider=aws",
            "--v=2",
            "--controllers=cloud-node-controller,cloud-node-lifecycle-controller,service-lb-controller",
            "--configure-cloud-routes=false",
            "--node-sync-period=1m",
            "--authentication-kubeconfig=/etc/kubernetes/ccm.conf",
            "--authorization-kubeconfig=/etc/kubernetes/ccm.conf",
            "--bind-address=127.0.0.1",
            "--secure-port=10258",
        ],
    ];

    #[test]
    fn public_manifests_flags_are_accepted() {
        for manifest in PUBLIC_MANIFESTS {
            let args = Args::try_parse_from(manifest).unwrap_or_else(|err| panic!("{manifest:?}: {err}"));
            assert!(matches!(args.command, Command::Run(_)), "{manifest:?}");
        }
    }

    #[test]
    fn an_upstream_manifest_s_flags_are_accepted() {
        let args = Args::try_parse_from(UPSTREAM).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(args.logging.verbosity, Some(2));
        let Command::Run(run) = args.command else { panic!("run") };
        assert!(run.use_service_account_credentials);
        assert_eq!(run.master.as_deref(), Some("https://10.0.0.1:6443"));
        assert_eq!(run.upstream.cloud_provider.as_deref(), Some("external"));
    }

    #[test]
    fn only_lease_locks_are_accepted() {
        let mut endpoints = UPSTREAM.to_vec();
        endpoints[11] = "--leader-elect-resource-lock=endpoints";
        let err = Args::try_parse_from(endpoints).unwrap_err().to_string();
        assert!(err.contains("coordination.k8s.io Lease"), "{err}");
    }

    #[test]
    fn the_log_format_is_taken_as_upstream_spells_it() {
        use crate::logging::LogFormat;
        let cases: [(&[&str], LogFormat); 5] = [
            (&["wasm-ccm", "run", "--provider=p.wasm", "--logging-format=json"], LogFormat::Json),
            (&["wasm-ccm", "--logging-format", "text", "run", "--provider=p.wasm"], LogFormat::Text),
            (&["wasm-ccm", "run", "--provider=p.wasm", "--log-format=json"], LogFormat::Json),
            (&["wasm-ccm", "provider", "verify", "p.wasm", "--logging-format=json"], LogFormat::Json),
            (&["wasm-ccm", "run", "--provider=p.wasm"], LogFormat::Text),
        ];
        for (args, expected) in cases {
            let parsed = Args::try_parse_from(args).unwrap_or_else(|err| panic!("{args:?}: {err}"));
            assert_eq!(parsed.logging.log_format, expected, "{args:?}");
        }
        let err = Args::try_parse_from(["wasm-ccm", "run", "--provider=p.wasm", "--logging-format=klog"]).unwrap_err();
        assert!(err.to_string().contains("[possible values: text, json]"), "{err}");
    }

    /// The flags of upstream's cloud-controller-manager at the newest
    /// release, one a line, as its `--help` lists them (less `--help` and
    /// `--version`); an integration test checks the list against the binary.
    const UPSTREAM_FLAGS: &str = include_str!("options/upstream-flags.txt");

    #[test]
    fn every_flag_of_upstream_s_newest_release_is_accepted() {
        use clap::CommandFactory;
        let command = Args::command();
        let run = command.find_subcommand("run").expect("the run command");
        let known: std::collections::BTreeSet<&str> = command
            .get_arguments()
            .chain(run.get_arguments())
            .flat_map(|arg| arg.get_long().into_iter().chain(arg.get_all_aliases().into_iter().flatten()))
            .collect();
        let missing: Vec<&str> = UPSTREAM_FLAGS.lines().filter(|flag| !known.contains(flag)).collect();
        assert!(UPSTREAM_FLAGS.lines().count() > 80, "the list is upstream's");
        assert_eq!(missing, Vec::<&str>::new(), "upstream's flags that `wasm-ccm run` refuses");
    }
}
