//! The command-line tools some tests run, as `tests/setup.sh` installs them
//! (`tests/tools/install-helm-promtool.sh`): found on the `PATH` or through
//! an environment variable, which `make test` sets. A missing tool fails
//! the test that needs it, saying how to install it.

use std::path::PathBuf;

/// A tool: its command, and the variable naming it or its directory.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// The command, as on the `PATH`.
    pub command: &'static str,
    /// The environment variable that names it (a file, or for data a
    /// directory), which wins over the `PATH`.
    pub variable: &'static str,
}

/// `helm`, built from its Go module.
pub const HELM: Tool = Tool { command: "helm", variable: "HELM" };

/// The Prometheus Operator's CustomResourceDefinitions of `ServiceMonitor`
/// and `PrometheusRule`, from its Go module: a directory, named only by
/// its variable.
pub const PROMETHEUS_OPERATOR_CRDS: Tool = Tool { command: "", variable: "PROMETHEUS_OPERATOR_CRDS" };

impl Tool {
    /// Where the tool is.
    ///
    /// # Panics
    /// When it is not found: the test cannot run without it.
    pub fn path(&self) -> PathBuf {
        if let Some(path) = std::env::var_os(self.variable).filter(|path| !path.is_empty()).map(PathBuf::from) {
            assert!(path.exists(), "{} names {}, which does not exist", self.variable, path.display());
            return path;
        }
        let on_path = std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(self.command))
            .find(|path| !self.command.is_empty() && path.is_file());
        on_path.unwrap_or_else(|| {
            let what = if self.command.is_empty() { self.variable } else { self.command };
            panic!(
                "{what} is missing: install it with tests/setup.sh, then set {}=$(tests/tools/install-helm-promtool.sh \
                 --print {}) as make test does",
                self.variable, self.variable
            )
        })
    }
}
