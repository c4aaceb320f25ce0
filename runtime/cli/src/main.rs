//! The `wasm-ccm` command.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = wasm_ccm::Args::parse();
    if let wasm_ccm::Command::CompileWorker = args.command {
        return wasm_ccm_host::compiler::serve_child();
    }
    match wasm_ccm::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", report(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each said once: many errors repeat their
/// cause in their own message.
fn report(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain().map(ToString::to_string) {
        if !text.contains(&cause) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause);
        }
    }
    text
}
