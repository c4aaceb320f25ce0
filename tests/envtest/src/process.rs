//! A server process of the control plane, its output in a log file, killed
//! when dropped.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::error::EnvtestError;

/// Lines of a log shown when a process fails to start.
const LOG_TAIL: usize = 20;

/// A running server.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    pub(crate) name: &'static str,
    child: Child,
    log: PathBuf,
}

impl ServerProcess {
    /// Starts `program` with `args`, its output appended to `log`.
    pub(crate) fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        log: PathBuf,
    ) -> Result<Self, EnvtestError> {
        let output = File::options().create(true).append(true).open(&log).map_err(EnvtestError::file(&log))?;
        let errors = output.try_clone().map_err(EnvtestError::file(&log))?;
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .spawn()
            .map_err(|source| EnvtestError::Spawn { program: program.to_owned(), source })?;
        Ok(ServerProcess { name, child, log })
    }

    /// Its process ID.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// The error for a process that exited while starting.
    pub(crate) fn exited(&mut self) -> Option<EnvtestError> {
        match self.child.try_wait() {
            Ok(None) => None,
            _ => Some(EnvtestError::Exited { name: self.name, log: self.log_tail() }),
        }
    }

    /// The last lines of its log.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n")
    }

    /// Kills it at once and reaps it.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
