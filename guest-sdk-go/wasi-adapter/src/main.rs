//! Writes the WASI preview1 reactor adapter of the host's wasmtime to the
//! path given, for `wasm-tools component new --adapt`: Go builds WASI
//! preview1 modules, and the adapter maps their imports onto the WASI 0.2
//! interfaces the host provides. The file is left alone when it already
//! holds these bytes, so that builds depending on it stay cached.

use std::path::PathBuf;
use std::process::ExitCode;

use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER as ADAPTER;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: wasi-adapter OUT.wasm");
        return ExitCode::FAILURE;
    };
    if std::fs::read(&path).is_ok_and(|existing| existing == ADAPTER) {
        return ExitCode::SUCCESS;
    }
    let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, ADAPTER));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("wasi-adapter: cannot write {}: {err}", path.display());
            ExitCode::FAILURE
        }
    }
}
