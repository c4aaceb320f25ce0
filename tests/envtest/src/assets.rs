//! Where the envtest binaries are, by controller-runtime's conventions.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::EnvtestError;

/// Set (to anything but empty or `0`) where the real API server must run:
/// missing binaries are then an error rather than a skip.
pub const REQUIRE: &str = "WASM_CCM_REQUIRE_ENVTEST";

/// The binaries a control plane runs.
#[derive(Debug, Clone)]
pub struct Assets {
    /// `kube-apiserver`.
    pub kube_apiserver: PathBuf,
    /// `etcd`.
    pub etcd: PathBuf,
}

impl Assets {
    /// The binaries named by `TEST_ASSET_KUBE_APISERVER` and
    /// `TEST_ASSET_ETCD`, each falling back to `KUBEBUILDER_ASSETS`;
    /// `Err` with what is missing.
    fn locate() -> Result<Assets, String> {
        let directory = std::env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from);
        let find = |variable: &str, binary: &str| -> Result<PathBuf, String> {
            let path = std::env::var_os(variable)
                .map(PathBuf::from)
                .or_else(|| directory.as_ref().map(|directory| directory.join(binary)))
                .ok_or_else(|| format!("neither {variable} nor KUBEBUILDER_ASSETS is set"))?;
            if is_executable(&path) { Ok(path) } else { Err(format!("{} is not an executable", path.display())) }
        };
        Ok(Assets {
            kube_apiserver: find("TEST_ASSET_KUBE_APISERVER", "kube-apiserver")?,
            etcd: find("TEST_ASSET_ETCD", "etcd")?,
        })
    }

    /// The binaries, or `None` after saying on the terminal (not in the
    /// test's captured output) that `what` did not run for want of them.
    ///
    /// # Errors
    /// When they are missing and [`REQUIRE`] is set.
    pub fn find_or_skip(what: &str) -> Result<Option<Assets>, EnvtestError> {
        match Self::locate() {
            Ok(assets) => Ok(Some(assets)),
            Err(missing) if required() => Err(EnvtestError::Missing(missing)),
            Err(missing) => {
                // Straight to the terminal: the test harness captures only
                // the print macros.
                let _ =
                    writeln!(std::io::stderr(), "WARNING: {what} did NOT run against the real API server: {missing}");
                Ok(None)
            }
        }
    }
}

impl Assets {
    /// Upstream's cloud-controller-manager with its fake provider:
    /// `UPSTREAM_CCM`, else `cloud-controller-manager` beside kube-apiserver,
    /// where `tests/envtest/control-plane/build.sh` puts it; `None` when it
    /// is not an executable.
    pub fn upstream_ccm(&self) -> Option<PathBuf> {
        let path = std::env::var_os("UPSTREAM_CCM")
            .map_or_else(|| self.kube_apiserver.with_file_name("cloud-controller-manager"), PathBuf::from);
        is_executable(&path).then_some(path)
    }
}

fn required() -> bool {
    std::env::var(REQUIRE).is_ok_and(|value| !value.is_empty() && value != "0")
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}
