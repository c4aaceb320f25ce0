//! `wasm-ccm provider status`: each provider of a running controller
//! manager, from its admin server's `/providers`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use bytesize::ByteSize;

use crate::run::providers_view::ProviderView;

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// A table for people.
    Table,
    /// `/providers` as it came.
    Json,
}

/// `provider status` flags.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The admin server's URL.
    #[arg(long, default_value = "https://127.0.0.1:10258")]
    pub server: String,
    /// A file holding a bearer token allowed to `get` `/providers`.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The certificate authority (PEM) of the admin server's certificate.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure_skip_tls_verify")]
    pub certificate_authority: Option<PathBuf>,
    /// Do not verify the admin server's certificate, which is self-signed
    /// unless one was given.
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
    /// How to print the report.
    #[arg(long, value_enum, default_value = "table")]
    pub output: Output,
}

/// Prints each provider's version, what it serves, its limits and usage.
///
/// # Errors
/// When the admin server cannot be reached or refuses the request.
pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let mut client = reqwest::Client::builder().danger_accept_invalid_certs(args.insecure_skip_tls_verify);
    if let Some(path) = &args.certificate_authority {
        let pem = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        client = client.tls_certs_merge([reqwest::Certificate::from_pem(&pem)?]);
    }
    let url = format!("{}/providers", args.server.trim_end_matches('/'));
    let mut request = client.build()?.get(&url);
    if let Some(path) = &args.token_file {
        let token = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        request = request.bearer_auth(token.trim());
    }
    let response = request.send().await.with_context(|| format!("cannot reach {url}"))?;
    let code = response.status();
    let body = response.text().await?;
    anyhow::ensure!(code.is_success(), "{url} answered {code}: {}", body.trim());
    match args.output {
        Output::Json => println!("{body}"),
        Output::Table => {
            let views: Vec<ProviderView> =
                serde_json::from_str(&body).with_context(|| format!("{url} did not answer a list of providers"))?;
            print!("{}", table(&views));
        }
    }
    Ok(())
}

/// The providers as a table, a row each.
fn table(views: &[ProviderView]) -> String {
    let mut rows = vec![
        [
            "NAME",
            "DIGEST",
            "SERVES",
            "CODE",
            "MEMORY",
            "CPU",
            "DEADLINE",
            "CALLS",
            "HTTP/S",
            "IN FLIGHT",
            "WAITING",
            "IN USE",
            "RELOADS",
            "REJECTED",
        ]
        .map(str::to_owned),
    ];
    for view in views {
        let mut serves: Vec<String> = view.serves.load_balancer_classes.clone();
        for (served, what) in [
            (view.serves.default_load_balancer, "(no class)"),
            (view.serves.nodes, "nodes"),
            (view.serves.routes, "routes"),
        ] {
            if served {
                serves.push(what.to_owned());
            }
        }
        let digest = view.status.digest.strip_prefix("sha256:").unwrap_or(&view.status.digest);
        let limits = &view.limits;
        let mut calls = match limits.calls_per_second {
            Some(rate) => format!("{} ({rate}/s)", limits.concurrent_calls),
            None => limits.concurrent_calls.to_string(),
        };
        if limits.kept_instances > 0 {
            let _ = write!(calls, " ({} kept)", limits.kept_instances);
        }
        let http = match (limits.http_requests_per_second, limits.http_burst) {
            (Some(rate), Some(burst)) => format!("{rate} (burst {burst})"),
            _ => "-".to_owned(),
        };
        rows.push([
            view.status.name.clone(),
            digest.chars().take(12).collect(),
            serves.join(","),
            if view.code.is_empty() { "-".to_owned() } else { view.code.clone() },
            ByteSize(limits.memory_bytes).to_string(),
            format!("{}m", limits.cpu_millicores),
            format!("{}s", limits.deadline_seconds),
            calls,
            http,
            view.usage.calls_in_flight.to_string(),
            view.usage.calls_waiting.to_string(),
            ByteSize(view.usage.memory_bytes).to_string(),
            view.status.reloads.to_string(),
            view.status.rejections.to_string(),
        ]);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_per_provider_with_what_it_serves_and_uses() {
        let json = r#"[{
            "name": "vendor-a", "providerName": "fake", "digest": "sha256:0123456789abcdef0123",
            "source": "/a.wasm", "configDigest": "sha256:00", "loadedAt": "2026-11-22T00:00:00Z",
            "reloads": 2, "rejections": 1, "lastRejection": null,
            "serves": {"loadBalancerClasses": ["a.example/lb"], "defaultLoadBalancer": true, "nodes": false, "routes": false},
            "limits": {"memoryBytes": 33554432, "deadlineSeconds": 5.0, "concurrentCalls": 8, "callsPerSecond": 50,
                       "httpRequestsPerSecond": 10, "httpBurst": 20, "cpuMillicores": 250},
            "usage": {"callsInFlight": 3, "callsWaiting": 1, "memoryBytes": 2097152},
            "code": "baseline"
        }]"#;
        let views: Vec<ProviderView> = serde_json::from_str(json).unwrap();
        let table = table(&views);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("NAME"), "{table}");
        let row: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(&row[..3], ["vendor-a", "0123456789ab", "a.example/lb,(no"], "{table}");
        assert_eq!(row[4], "baseline", "{table}");
        assert!(lines[1].contains("8 (50/s)") && lines[1].contains("10 (burst 20)"), "{table}");
        assert!(lines[1].contains(" 250m "), "{table}");
        let kept = json.replace(r#""concurrentCalls": 8,"#, r#""concurrentCalls": 8, "keptInstances": 1,"#);
        let kept: Vec<ProviderView> = serde_json::from_str(&kept).unwrap();
        let kept = super::table(&kept);
        assert!(kept.contains("8 (50/s) (1 kept)"), "{kept}");
        assert!(lines[1].contains("2.0 MiB") || lines[1].contains("2.1 MB"), "{table}");
    }
}
