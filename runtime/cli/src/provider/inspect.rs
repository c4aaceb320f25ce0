//! `wasm-ccm provider inspect`: what a component is, without compiling it:
//! its world's imports and exports, its digest and size, whether it is a
//! provider this host can load, and whether a ConfigMap can hold it.

use clap::ValueEnum;
use serde::Serialize;
use wasm_ccm_config::RegistryArgs;
use wasm_ccm_distribution::{Inspection, Verification, inspect as inspect_bytes, pull};
use wasm_ccm_host::compile::component::{CONTRACT, WORLD, provides_import, required_exports};

use crate::options::target::{Target, read, refuse_registry_flags};

/// How `provider inspect` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned text.
    Text,
    /// One JSON object.
    Json,
}

/// `provider inspect` flags.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// A component file, or `oci://registry[:port]/repository[:tag|@sha256:<hex>]`.
    pub target: Target,
    /// How to print.
    #[arg(long, short, value_enum, default_value = "text")]
    pub output: Output,
    /// How to reach the registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// What `provider inspect` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    /// The file, or the reference pinned to the manifest digest read.
    source: String,
    /// The manifest's digest, for a registry provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    manifest_digest: Option<String>,
    #[serde(flatten)]
    inspection: Inspection,
    /// The component against this host's provider world.
    world: World,
    /// Whether a ConfigMap's `binaryData` can hold it.
    fits_config_map: bool,
}

/// The most a ConfigMap holds, its keys' values together: larger
/// components ship as OCI artifacts or files.
const CONFIG_MAP_BYTES: usize = 1 << 20;

/// A component against the provider world.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct World {
    /// The world this host loads.
    name: &'static str,
    /// Whether the component exports all of it and imports only what this
    /// host provides.
    provider: bool,
    /// What keeps it from being one.
    problems: Vec<String>,
}

impl World {
    fn of(inspection: &Inspection) -> World {
        let mut problems = Vec::new();
        if !inspection.component {
            problems.push("a core module, not a component".to_owned());
        } else {
            for export in required_exports() {
                if !inspection.exports.contains(&export) {
                    problems.push(format!("missing export {export}"));
                }
            }
            for import in inspection.imports.iter().filter(|import| !provides_import(import)) {
                problems.push(format!("imports {import}, which this host does not provide"));
            }
        }
        World { name: WORLD, provider: problems.is_empty(), problems }
    }
}

/// Reads the component from the file or the registry and prints it.
///
/// # Errors
/// When it cannot be read or pulled, or is not WebAssembly.
pub async fn inspect(args: InspectArgs) -> anyhow::Result<()> {
    let (source, manifest_digest, wasm) = match &args.target {
        Target::File(path) => {
            refuse_registry_flags(&args.registry, &args.target)?;
            (path.display().to_string(), None, read(path)?)
        }
        Target::Oci(reference) => {
            let options = args.registry.options(reference)?;
            let pulled = pull(reference, &options, &Verification::none()).await?;
            (pulled.reference.to_string(), Some(pulled.manifest_digest), pulled.wasm)
        }
    };
    let inspection = inspect_bytes(&wasm).map_err(|err| anyhow::anyhow!("{source}: {err}"))?;
    let world = World::of(&inspection);
    let fits_config_map = wasm.len() <= CONFIG_MAP_BYTES;
    let report = Report { source, manifest_digest, inspection, world, fits_config_map };
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Output::Text => print!("{}", text(&report)),
    }
    Ok(())
}

fn text(report: &Report) -> String {
    let mut text = format!("source   {}\n", report.source);
    if let Some(digest) = &report.manifest_digest {
        text.push_str(&format!("manifest {digest}\n"));
    }
    text.push_str(&report.inspection.to_string());
    if report.fits_config_map {
        text.push_str(
            "ships    as a file, an OCI artifact or a ConfigMap key
",
        );
    } else {
        text.push_str(
            "ships    as a file or an OCI artifact: a ConfigMap holds 1 MiB at most
",
        );
    }
    if report.world.provider {
        text.push_str(&format!("world    {}: a provider of contract {CONTRACT}\n", report.world.name));
    } else {
        for (i, problem) in report.world.problems.iter().enumerate() {
            let title = if i == 0 { "world" } else { "" };
            let prefix = if i == 0 { format!("{}: not a provider: ", report.world.name) } else { String::new() };
            text.push_str(&format!("{title:<8} {prefix}{problem}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspection(exports: Vec<String>, imports: Vec<String>) -> Inspection {
        Inspection { component: true, size: 1, digest: "sha256:x".into(), imports, exports }
    }

    #[test]
    fn the_world_is_checked() {
        let complete = World::of(&inspection(required_exports(), vec!["wasm-ccm:provider/http@0.2.2".into()]));
        assert!(complete.provider && complete.problems.is_empty(), "{complete:?}");

        let mut exports = required_exports();
        exports.retain(|export| !export.contains("/routes@"));
        let partial = World::of(&inspection(exports, vec!["wasi:sockets/tcp@0.2.6".into()]));
        assert!(!partial.provider);
        assert_eq!(
            partial.problems,
            [
                "missing export wasm-ccm:provider/routes@0.2.2",
                "imports wasi:sockets/tcp@0.2.6, which this host does not provide"
            ]
        );
        let report = Report {
            source: "p.wasm".into(),
            manifest_digest: None,
            inspection: inspection(vec![], vec![]),
            world: partial,
            fits_config_map: false,
        };
        let text = text(&report);
        assert!(
            text.ends_with(
                "world    wasm-ccm:provider/cloud-provider@0.2.2: not a provider: missing export \
                 wasm-ccm:provider/routes@0.2.2\n         imports wasi:sockets/tcp@0.2.6, which this host does not provide\n"
            ),
            "{text}"
        );
    }
}
