//! The `wasm-ccm` binary as a child process, and plain HTTP requests to its
//! admin server.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The `wasm-ccm` binary next to the test binaries.
///
/// # Panics
/// When it has not been built.
pub fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let binary = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps").join("wasm-ccm");
    assert!(binary.exists(), "build the binary first: cargo build -p wasm-ccm ({} is missing)", binary.display());
    binary
}

/// A free port on loopback.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()).expect("a free port").port()
}

/// A running `wasm-ccm`; killed when dropped.
pub struct Process {
    child: Child,
}

impl Process {
    /// Starts `wasm-ccm` with `args` and extra environment variables.
    pub fn start(args: &[String], env: &[(&str, &str)]) -> Self {
        Self::spawn(Self::command(args, env))
    }

    /// Starts `wasm-ccm` with `args`, writing its output (logs go to stderr)
    /// to the file `log`.
    pub fn start_logged(args: &[String], log: &Path) -> Self {
        let file = std::fs::File::create(log).expect("the log file");
        let mut command = Self::command(args, &[]);
        command.stdout(file.try_clone().expect("the log file")).stderr(file);
        Self::spawn(command)
    }

    fn command(args: &[String], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(binary());
        command.args(args).stdin(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        command
    }

    fn spawn(mut command: Command) -> Self {
        Process { child: command.spawn().expect("wasm-ccm starts") }
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("the child's status").is_none()
    }

    /// Its process ID.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends it a signal (`TERM`, `INT`, `KILL`).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill").arg(format!("-{signal}")).arg(self.id().to_string()).status();
        assert!(status.is_ok_and(|status| status.success()), "kill -{signal} {}", self.id());
    }

    /// Waits up to `timeout` for it to exit.
    pub async fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = tokio::time::Instant::now() + timeout;
        while tokio::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the child's status") {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` over plain HTTP; the status and body, or `None` when nothing
/// answers.
pub async fn http_get(address: SocketAddr, path: &str) -> Option<(u16, String)> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.ok()?;
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text.split_whitespace().nth(1)?.parse().ok()?;
        let body = text.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
        Some((status, body))
    };
    tokio::time::timeout(Duration::from_secs(5), exchange).await.ok().flatten()
}
