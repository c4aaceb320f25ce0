//! The WASI preview1 reactor adapter of the host's wasmtime, for
//! `wasm-tools component new --adapt`: Go builds WASI preview1 modules, and
//! the adapter maps their imports onto the WASI 0.2 interfaces the host
//! provides.

use std::path::Path;

use anyhow::Context as _;
use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER as ADAPTER;

/// Writes the adapter to `path`, leaving the file alone when it already
/// holds these bytes, so that builds depending on it stay cached.
pub fn write(path: &Path) -> anyhow::Result<()> {
    if std::fs::read(path).is_ok_and(|existing| existing == ADAPTER) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, ADAPTER).with_context(|| format!("cannot write {}", path.display()))
}
