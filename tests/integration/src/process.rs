//! The `wasm-ccm` binary as a child process, and plain HTTP requests to its
//! admin server.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a run of the binary printed, and whether it succeeded.
pub struct Run {
    /// Whether it exited with success.
    pub success: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Run {
    /// Runs `command` to its end.
    ///
    /// # Panics
    /// When it cannot be started.
    pub fn of(command: &mut Command) -> Run {
        let output = command.env("RUST_LOG", "warn").output().expect("wasm-ccm runs");
        Run {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The value of a `name  value` line of the output.
    ///
    /// # Panics
    /// When there is none.
    pub fn field(&self, name: &str) -> &str {
        self.stdout
            .lines()
            .find_map(|line| line.strip_prefix(name).filter(|rest| rest.starts_with(' ')))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name} line in:\n{}", self.stdout))
    }

    /// The run, which succeeded.
    ///
    /// # Panics
    /// When it failed.
    pub fn ok(self) -> Run {
        assert!(self.success, "wasm-ccm failed:\n{}\n{}", self.stdout, self.stderr);
        self
    }

    /// The error line of a failed run.
    ///
    /// # Panics
    /// When it succeeded or printed no error line.
    pub fn error(self) -> String {
        assert!(!self.success, "wasm-ccm succeeded:\n{}", self.stdout);
        let line = self.stderr.lines().find(|line| line.starts_with("error: ")).unwrap_or_else(|| {
            panic!("no error line in:\n{}", self.stderr);
        });
        line.to_owned()
    }
}

/// A running `wasm-ccm`; killed when dropped.
pub struct Process {
    child: Child,
}

impl Process {
    /// Starts the `wasm-ccm` binary at `binary` with `args` and extra
    /// environment variables.
    pub fn start(binary: &Path, args: &[String], env: &[(&str, &str)]) -> Self {
        Self::spawn(Self::command(binary, args, env))
    }

    /// Starts the `wasm-ccm` binary at `binary` with `args` and extra
    /// environment variables, writing its output (logs go to stderr) to the
    /// file `log`.
    pub fn start_logged(binary: &Path, args: &[String], env: &[(&str, &str)], log: &Path) -> Self {
        let file = std::fs::File::create(log).expect("the log file");
        let mut command = Self::command(binary, args, env);
        command.stdout(file.try_clone().expect("the log file")).stderr(file);
        Self::spawn(command)
    }

    fn command(binary: &Path, args: &[String], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(binary);
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

/// `GET path` over HTTPS on loopback `port`, with `bearer` as the
/// `Authorization: Bearer` token when given, trusting any certificate as
/// the kubelet's probes do: the status and the body; `None` when nothing
/// answers.
pub fn https_get(port: u16, path: &str, bearer: Option<&str>) -> Option<(u16, String)> {
    use std::io::{Read as _, Write as _};
    use std::sync::Arc;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").ok()?;
    let mut connection = rustls::ClientConnection::new(Arc::new(config), name).ok()?;
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    socket.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut tls = rustls::Stream::new(&mut connection, &mut socket);
    let authorization = bearer.map(|token| format!("Authorization: Bearer {token}\r\n")).unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    // The server may close without a TLS close_notify; what came is enough.
    let _ = tls.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    Some((status, body))
}

/// A TLS verifier that accepts any certificate.
#[derive(Debug)]
struct AnyCertificate(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
