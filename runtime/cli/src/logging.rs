//! Logging: human-readable by default, JSON on request, filtered by
//! `--log-level` or `RUST_LOG`.

use std::io::IsTerminal as _;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per record.
    Text,
    /// One JSON object per record.
    Json,
}

/// Logging flags.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// The log format; `--logging-format`, as upstream spells it, too.
    #[arg(
        long,
        alias = "logging-format",
        global = true,
        value_enum,
        default_value = "text",
        env = "WASM_CCM_LOG_FORMAT"
    )]
    pub log_format: LogFormat,
    /// What to log, as `RUST_LOG` directives (`info`, `wasm_ccm=debug,provider=trace`);
    /// `info` by default, `warn` for `local`.
    #[arg(long, global = true, env = "RUST_LOG")]
    pub log_level: Option<String>,
    /// Upstream's klog verbosity, used when `--log-level` is not given:
    /// up to 2 is `info`, 3 and 4 `debug`, 5 and more `trace`.
    #[arg(short = 'v', long = "v", global = true, value_name = "LEVEL")]
    pub verbosity: Option<u8>,
}

/// The log level of klog's verbosity `v`.
fn klog_level(verbosity: u8) -> &'static str {
    match verbosity {
        0..=2 => "info",
        3..=4 => "debug",
        _ => "trace",
    }
}

/// kube's client and watcher log every failed request and every watch retry;
/// the controllers log each failure once with its context, and an API server
/// outage once, so those are off unless `--log-level` asks for them.
const KUBE_QUIET: &str = "kube_client::client=error,kube_runtime::watcher=error";

/// Installs the process's log subscriber, writing to stderr, at
/// `--log-level` or else `default_level`.
pub fn init(args: &LogArgs, default_level: &str) -> anyhow::Result<()> {
    let default_level = match args.verbosity {
        Some(verbosity) => klog_level(verbosity),
        None => default_level,
    };
    let default_level = format!("{default_level},{KUBE_QUIET}");
    let level = args.log_level.as_deref().unwrap_or(&default_level);
    let filter = EnvFilter::try_new(level).map_err(|err| anyhow::anyhow!("invalid --log-level {level:?}: {err}"))?;
    // Colours only on a terminal: a pod's log is a pipe.
    let ansi = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let installed = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).try_init(),
    };
    installed.map_err(|err| anyhow::anyhow!("cannot install the logger: {err}"))
}
