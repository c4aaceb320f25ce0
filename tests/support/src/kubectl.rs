//! The `kubectl` the tests run.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

/// The `kubectl` of the control plane's release: `TEST_ASSET_KUBECTL`, else
/// `kubectl` in `KUBEBUILDER_ASSETS` (where
/// `tests/envtest/control-plane/build.sh` puts it, as envtest's assets have
/// it), else the one on the `PATH`.
pub fn kubectl() -> PathBuf {
    std::env::var_os("TEST_ASSET_KUBECTL")
        .map(PathBuf::from)
        .or_else(|| {
            let beside = PathBuf::from(std::env::var_os("KUBEBUILDER_ASSETS")?).join("kubectl");
            let executable = std::fs::metadata(&beside)
                .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0);
            executable.then_some(beside)
        })
        .unwrap_or_else(|| PathBuf::from("kubectl"))
}
