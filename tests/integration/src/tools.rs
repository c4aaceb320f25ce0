//! The tools some tests run for real, at the versions their installer
//! scripts pin and install (`tests/setup.sh` runs both):
//! `tests/tools/install-helm-promtool.sh` for helm and the Prometheus
//! Operator's CRDs, `tests/tools/install-signing-tools.sh` for cosign v3,
//! oras and wkg. Each is found where its script says (`--print`), unless an
//! environment variable of its name names another. A missing tool fails the
//! test that needs it, saying how to install it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, bail};

use crate::repository;

/// A tool an installer script pins and installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// helm, `helm.sh/helm/v4/cmd/helm`.
    Helm,
    /// The Prometheus Operator's CustomResourceDefinitions of
    /// `ServiceMonitor` and `PrometheusRule`: a directory.
    PrometheusOperatorCrds,
    /// cosign v3, `github.com/sigstore/cosign/v3/cmd/cosign`.
    Cosign,
    /// oras, `oras.land/oras/cmd/oras`.
    Oras,
    /// wkg, the `wkg` crate.
    Wkg,
}

impl Tool {
    /// The command's name, as its output and errors say it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Helm => "helm",
            Tool::PrometheusOperatorCrds => "the Prometheus Operator's CRDs",
            Tool::Cosign => "cosign",
            Tool::Oras => "oras",
            Tool::Wkg => "wkg",
        }
    }

    /// Its name in its script (`--print NAME`, `NAME_VERSION=`) and the
    /// environment variable that names another copy.
    fn variable(self) -> &'static str {
        match self {
            Tool::Helm => "HELM",
            Tool::PrometheusOperatorCrds => "PROMETHEUS_OPERATOR_CRDS",
            Tool::Cosign => "COSIGN",
            Tool::Oras => "ORAS",
            Tool::Wkg => "WKG",
        }
    }

    /// The script that pins and installs it.
    fn installer(self) -> &'static str {
        match self {
            Tool::Helm | Tool::PrometheusOperatorCrds => "tests/tools/install-helm-promtool.sh",
            Tool::Cosign | Tool::Oras | Tool::Wkg => "tests/tools/install-signing-tools.sh",
        }
    }

    /// The version its script pins.
    ///
    /// # Panics
    /// When the script pins none.
    pub fn version(self) -> String {
        let pin = format!("{}_VERSION=", self.variable());
        let script = std::fs::read_to_string(repository().join(self.installer())).expect("the installer script");
        script
            .lines()
            .find_map(|line| line.strip_prefix(&pin))
            .map(|version| version.trim().to_owned())
            .unwrap_or_else(|| panic!("{} pins no {pin}", self.installer()))
    }

    /// Where it is: the environment variable of its name, or where its
    /// script installs it.
    ///
    /// # Panics
    /// When it is not there, saying how to install it: the tests that run
    /// it need it, as others need `docker-registry`.
    pub fn path(self) -> PathBuf {
        let variable = self.variable();
        let path = match std::env::var_os(variable).filter(|path| !path.is_empty()) {
            Some(path) => PathBuf::from(path),
            None => {
                let printed = Command::new(repository().join(self.installer()))
                    .args(["--print", variable])
                    .output()
                    .unwrap_or_else(|err| panic!("cannot run {}: {err}", self.installer()));
                assert!(printed.status.success(), "{} --print {variable} failed", self.installer());
                PathBuf::from(String::from_utf8_lossy(&printed.stdout).trim())
            }
        };
        assert!(
            path.exists(),
            "{} {} is not at {}: install it with tests/setup.sh (or {}), or name it with {variable}",
            self.name(),
            self.version(),
            path.display(),
            self.installer()
        );
        path
    }

    /// Runs the tool with `args` in `dir`, with `env`, and returns its
    /// output when it succeeds. No user configuration of the tool reaches
    /// it: its home and configuration directories are `dir`.
    ///
    /// # Errors
    /// When it cannot start or exits unsuccessfully, with what it printed.
    pub fn run(self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Output> {
        let output = Command::new(self.path())
            .args(args)
            .current_dir(dir)
            .envs(env.iter().copied())
            .env("HOME", dir)
            .env("DOCKER_CONFIG", dir.join(".docker"))
            .env("XDG_CONFIG_HOME", dir.join(".config"))
            .output()
            .with_context(|| format!("cannot run {}", self.name()))?;
        if !output.status.success() {
            bail!(
                "{} {} exited with {}:\n{}{}",
                self.name(),
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output)
    }
}
