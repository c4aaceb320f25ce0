//! The steps of `providers/build.sh` that turn a Go `wasip1` module into a
//! provider component and that no installed tool does:
//!
//! - `adapter OUT`: writes the WASI preview1 reactor adapter;
//! - `pack-data IN OUT`: packs the module's data into few segments.

mod adapter;
mod pack_data;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

const USAGE: &str = "usage: go-component-tools adapter OUT.wasm\n       go-component-tools pack-data IN.wasm OUT.wasm";

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let done = match args.iter().map(|arg| arg.to_str()).collect::<Vec<_>>().as_slice() {
        [Some("adapter"), _] => adapter::write(&args[1]),
        [Some("pack-data"), _, _] => pack(&args[1], &args[2]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("go-component-tools: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn pack(input: &PathBuf, output: &PathBuf) -> anyhow::Result<()> {
    let wasm = std::fs::read(input).with_context(|| format!("cannot read {}", input.display()))?;
    let packed = pack_data::pack(&wasm).with_context(|| format!("cannot pack {}", input.display()))?;
    std::fs::write(output, packed).with_context(|| format!("cannot write {}", output.display()))
}
