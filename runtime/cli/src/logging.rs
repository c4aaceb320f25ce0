//! Logging: human-readable by default, JSON on request, filtered by
//! `--log-level` or `RUST_LOG`.

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
    /// The log format.
    #[arg(long, global = true, value_enum, default_value = "text", env = "WASM_CCM_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// What to log, as `RUST_LOG` directives (`info`, `wasm_ccm=debug,provider=trace`).
    #[arg(long, global = true, default_value = "info", env = "RUST_LOG")]
    pub log_level: String,
}

/// Installs the process's log subscriber, writing to stderr.
pub fn init(args: &LogArgs) -> anyhow::Result<()> {
    let filter = EnvFilter::try_new(&args.log_level)
        .map_err(|err| anyhow::anyhow!("invalid --log-level {:?}: {err}", args.log_level))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let installed = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).try_init(),
    };
    installed.map_err(|err| anyhow::anyhow!("cannot install the logger: {err}"))
}
