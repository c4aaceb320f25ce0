//! The `wasm-ccm` command.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = wasm_ccm::Args::parse();
    if let wasm_ccm::Command::CompileWorker = args.command {
        return wasm_ccm_host::compile::compiler::serve_child();
    }
    match wasm_ccm::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", wasm_ccm_fleet::error_chain(err.as_ref()));
            ExitCode::FAILURE
        }
    }
}
