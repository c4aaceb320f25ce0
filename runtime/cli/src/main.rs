//! The `wasm-ccm` command.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match wasm_ccm::run(wasm_ccm::Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
