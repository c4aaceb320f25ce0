//! The components `providers/build.sh` builds into `target/wasm`.

use std::path::PathBuf;
use std::sync::Arc;

/// The repository's root.
pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The component `providers/build.sh` builds of the guest crate `crate_name`
/// (`provider-fake`: `target/wasm/provider_fake.wasm`).
///
/// # Panics
/// When it has not been built, saying how to build it.
pub fn guest_path(crate_name: &str) -> PathBuf {
    let path = repository().join("target/wasm").join(format!("{}.wasm", crate_name.replace('-', "_")));
    assert!(path.exists(), "{} is missing; {}", path.display(), how_to_build());
    path
}

/// The bytes of the component of the guest crate `crate_name` (see
/// [`guest_path`]).
///
/// # Panics
/// When it has not been built, saying how to build it.
pub fn guest(crate_name: &str) -> Arc<[u8]> {
    let path = guest_path(crate_name);
    match std::fs::read(&path) {
        Ok(bytes) => bytes.into(),
        Err(err) => panic!("cannot read {}: {err}; {}", path.display(), how_to_build()),
    }
}

fn how_to_build() -> String {
    let root = repository();
    let root = root.canonicalize().unwrap_or(root);
    format!("build every guest with `providers/build.sh` (or `make guests`) in {}", root.display())
}
