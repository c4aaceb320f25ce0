//! A real OCI registry for the distribution tests: Debian's
//! `docker-registry` (CNCF Distribution) on a free loopback port, storing in
//! a temporary directory, optionally behind htpasswd basic auth and TLS with
//! a certificate from a CA made for it; killed when dropped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine as _;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use wasm_ccm_distribution::{Auth, Reference, RegistryOptions, sha256_digest};
use wasm_ccm_envtest::pki::LoopbackTls;

use crate::{Exited, free_port};

/// The registry binary Debian's `docker-registry` package installs.
const BINARY: &str = "docker-registry";

/// How long the registry may take to answer after it starts.
const STARTUP: Duration = Duration::from_secs(20);

/// How the registry is set up.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Serve HTTPS with a certificate for `127.0.0.1` from a fresh CA.
    pub tls: bool,
    /// Require these credentials (htpasswd basic auth).
    pub basic_auth: Option<(String, String)>,
}

/// A request the registry served, from its access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// `GET`, `HEAD`, `PUT`, ...
    pub method: String,
    /// The path and query, such as `/v2/acme/manifests/v1`.
    pub path: String,
    /// The HTTP status.
    pub status: u16,
}

/// A running registry; it is killed and its storage removed when dropped.
pub struct Registry {
    child: Child,
    address: SocketAddr,
    dir: tempfile::TempDir,
    ca_pem: Option<String>,
    settings: Settings,
}

impl Registry {
    /// A plain HTTP registry without authentication.
    ///
    /// # Errors
    /// As [`Registry::start`].
    pub fn plain() -> anyhow::Result<Self> {
        Self::start(Settings::default())
    }

    /// Starts a registry and waits until it answers `/v2/`; tries another
    /// port if another process took the one it was given.
    ///
    /// # Errors
    /// When it cannot be set up or started (install it with
    /// `tests/setup.sh`), or does not answer in time.
    pub fn start(settings: Settings) -> anyhow::Result<Self> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match Self::start_once(settings.clone()) {
                Err(err) if attempts < 3 && err.downcast_ref::<Exited>().is_some() => continue,
                started => return started,
            }
        }
    }

    fn start_once(settings: Settings) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir().context("cannot make the registry's directory")?;
        let port = free_port()?;
        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: info\n  formatter: text\n\
             storage:\n  filesystem:\n    rootdirectory: {storage}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n  secret: wasm-ccm-tests\n",
            storage = dir.path().join("storage").display(),
        );
        let mut ca_pem = None;
        if settings.tls {
            let tls = LoopbackTls::generate("wasm-ccm test registry")?;
            std::fs::write(dir.path().join("cert.pem"), tls.certificate_pem)?;
            std::fs::write(dir.path().join("key.pem"), tls.key_pem)?;
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                dir.path().join("cert.pem").display(),
                dir.path().join("key.pem").display()
            ));
            ca_pem = Some(tls.ca_pem);
        }
        if let Some((username, password)) = &settings.basic_auth {
            // The lowest cost: the registry checks the hash on every request.
            let hash = bcrypt::hash(password, 4).context("cannot hash the password")?;
            std::fs::write(dir.path().join("htpasswd"), format!("{username}:{hash}\n"))?;
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: wasm-ccm-tests\n    path: {}\n",
                dir.path().join("htpasswd").display()
            ));
        }
        std::fs::write(dir.path().join("config.yml"), config)?;
        let child = Command::new(BINARY)
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.path().join("access.log"))?)
            .stderr(std::fs::File::create(dir.path().join("registry.log"))?)
            .spawn()
            .with_context(|| format!("cannot start {BINARY} (install it with tests/setup.sh)"))?;
        let mut registry = Registry { child, address: SocketAddr::from(([127, 0, 0, 1], port)), dir, ca_pem, settings };
        let deadline = Instant::now() + STARTUP;
        loop {
            if let Some(status) = registry.child.try_wait()? {
                return Err(Exited(format!("{BINARY} exited with {status}: {}", registry.log())).into());
            }
            match registry.probe() {
                Ok(()) => return Ok(registry),
                Err(err) if Instant::now() > deadline => {
                    bail!("{BINARY} did not answer /v2/ within {STARTUP:?}: {err:#}; its log: {}", registry.log())
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Sends `GET /v2/` and reads the status line: any HTTP answer will do
    /// (401 when credentials are required).
    fn probe(&self) -> anyhow::Result<()> {
        let stream = TcpStream::connect_timeout(&self.address, Duration::from_millis(200))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        let request = format!("GET /v2/ HTTP/1.0\r\nHost: {}\r\n\r\n", self.address);
        let mut answer = [0u8; 12];
        match &self.ca_pem {
            None => {
                let mut stream = stream;
                stream.write_all(request.as_bytes())?;
                stream.read_exact(&mut answer)?;
            }
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for certificate in
                    <rustls::pki_types::CertificateDer as rustls::pki_types::pem::PemObject>::pem_slice_iter(
                        ca.as_bytes(),
                    )
                {
                    roots.add(certificate?)?;
                }
                let config =
                    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                        .with_safe_default_protocol_versions()?
                        .with_root_certificates(roots)
                        .with_no_client_auth();
                let name = rustls::pki_types::ServerName::IpAddress(self.address.ip().into());
                let connection = rustls::ClientConnection::new(Arc::new(config), name)?;
                let mut stream = rustls::StreamOwned::new(connection, stream);
                stream.write_all(request.as_bytes())?;
                stream.read_exact(&mut answer)?;
            }
        }
        if answer.starts_with(b"HTTP/1.") { Ok(()) } else { bail!("not an HTTP answer: {answer:?}") }
    }

    /// `127.0.0.1:<port>`.
    pub fn host(&self) -> String {
        self.address.to_string()
    }

    /// `oci://127.0.0.1:<port>/<path>`, `path` being `repository[:tag]` or
    /// `repository@digest`.
    ///
    /// # Panics
    /// When that is not a valid reference.
    pub fn reference(&self, path: &str) -> Reference {
        format!("oci://{}/{path}", self.host()).parse().expect("a valid reference")
    }

    /// Options that reach this registry: plain HTTP unless it serves TLS,
    /// then its CA as the extra CA; its credentials if it has some.
    pub fn options(&self) -> RegistryOptions {
        RegistryOptions {
            auth: match &self.settings.basic_auth {
                Some((username, password)) => Auth::Basic { username: username.clone(), password: password.clone() },
                None => Auth::Anonymous,
            },
            plain_http_registries: if self.settings.tls { Vec::new() } else { vec![self.host()] },
            extra_ca_pem: self.ca_pem.clone().map(String::into_bytes),
            ..RegistryOptions::default()
        }
    }

    /// The CA that signed the registry's certificate, when it serves TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// Where the registry stores the blob `digest`, to tamper with it.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage().join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }

    fn storage(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// The requests served so far, oldest first, from the access log.
    ///
    /// The registry writes a request's line as it completes the response,
    /// so this waits until the log has been still for 100 ms.
    pub fn served(&self) -> Vec<Served> {
        let path = self.dir.path().join("access.log");
        let mut size = std::fs::metadata(&path).map_or(0, |m| m.len());
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = std::fs::metadata(&path).map_or(0, |m| m.len());
            if now == size {
                break;
            }
            size = now;
        }
        std::fs::read_to_string(&path).unwrap_or_default().lines().filter_map(parse_access_line).collect()
    }

    /// The registry's own log, for error messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// Pushes a manifest built by hand, bypassing the library under test:
    /// the blobs `config` and `layers` as `(media type, bytes)`, then an
    /// OCI image manifest listing them at `repository:tag`. Returns the
    /// manifest's digest.
    ///
    /// # Errors
    /// When the registry refuses a blob or the manifest.
    pub async fn push_by_hand(
        &self,
        path: &str,
        config: (&str, &[u8]),
        layers: &[(&str, &[u8], Option<serde_json::Value>)],
    ) -> anyhow::Result<String> {
        let reference = self.reference(path);
        let target = oci_client::Reference::with_tag(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            reference.tag().context("a tag to push to")?.to_owned(),
        );
        let client = self.raw_client()?;
        let auth = match &self.settings.basic_auth {
            Some((username, password)) => RegistryAuth::Basic(username.clone(), password.clone()),
            None => RegistryAuth::Anonymous,
        };
        client.store_auth_if_needed(target.resolve_registry(), &auth).await;
        let descriptor = |media_type: &str, bytes: &[u8], annotations: Option<serde_json::Value>| {
            let mut descriptor =
                serde_json::json!({"mediaType": media_type, "digest": sha256_digest(bytes), "size": bytes.len()});
            if let Some(annotations) = annotations {
                descriptor["annotations"] = annotations;
            }
            descriptor
        };
        let mut blobs = vec![config.1];
        blobs.extend(layers.iter().map(|(_, bytes, _)| *bytes));
        for blob in blobs {
            client.push_blob(&target, blob.to_vec(), &sha256_digest(blob)).await?;
        }
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": descriptor(config.0, config.1, None),
            "layers": layers.iter().map(|(media_type, bytes, annotations)| descriptor(media_type, bytes, annotations.clone())).collect::<Vec<_>>(),
        }))?;
        let digest = sha256_digest(&manifest);
        client
            .push_manifest_raw(
                &target,
                manifest,
                http::HeaderValue::from_static("application/vnd.oci.image.manifest.v1+json"),
            )
            .await?;
        Ok(digest)
    }

    /// Puts `manifest` (of `media_type`) at `repository:tag` and `blobs`
    /// in `repository`, bypassing the library under test, as a registry's
    /// other writers can: an index under a referrers tag, a referrer.
    /// Returns the manifest's digest.
    ///
    /// # Errors
    /// When the registry refuses a blob or the manifest.
    pub async fn put_by_hand(
        &self,
        path: &str,
        media_type: &'static str,
        manifest: &[u8],
        blobs: &[&[u8]],
    ) -> anyhow::Result<String> {
        let reference = self.reference(path);
        let target = oci_client::Reference::with_tag(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            reference.tag().context("a tag to put the manifest at")?.to_owned(),
        );
        let client = self.raw_client()?;
        for blob in blobs {
            client.push_blob(&target, blob.to_vec(), &sha256_digest(blob)).await?;
        }
        client.push_manifest_raw(&target, manifest.to_vec(), http::HeaderValue::from_static(media_type)).await?;
        Ok(sha256_digest(manifest))
    }

    /// The bytes of the blob or manifest `digest` as the registry stores
    /// them.
    ///
    /// # Errors
    /// When it has no such content.
    pub fn stored(&self, digest: &str) -> anyhow::Result<Vec<u8>> {
        std::fs::read(self.blob_path(digest)).with_context(|| format!("the registry stores no {digest}"))
    }

    fn raw_client(&self) -> anyhow::Result<oci_client::Client> {
        crate::install_crypto_provider();
        let config = ClientConfig {
            protocol: if self.settings.tls { ClientProtocol::Https } else { ClientProtocol::Http },
            extra_root_certificates: self
                .ca_pem
                .iter()
                .map(|pem| Certificate { encoding: CertificateEncoding::Pem, data: pem.clone().into_bytes() })
                .collect(),
            ..ClientConfig::default()
        };
        Ok(oci_client::Client::try_from(config)?)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Docker config JSON (`~/.docker/config.json`, a Secret's
/// `.dockerconfigjson`) holding `username:password` for `registry`.
pub fn docker_config(registry: &str, username: &str, password: &str) -> Vec<u8> {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    serde_json::to_vec(&serde_json::json!({"auths": {registry: {"auth": auth}}})).expect("JSON")
}

/// `127.0.0.1 - - [date] "GET /v2/ HTTP/1.1" 200 2 "" "agent"`.
fn parse_access_line(line: &str) -> Option<Served> {
    let (_, request) = line.split_once("] \"")?;
    let (request, rest) = request.split_once('"')?;
    let mut words = request.split(' ');
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let status = rest.split_whitespace().next()?.parse().ok()?;
    Some(Served { method, path, status })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_lines() {
        let line = r#"127.0.0.1 - - [21/Nov/2026:00:59:04 +0000] "HEAD /v2/acme/manifests/v1 HTTP/1.1" 200 0 "" "ua""#;
        assert_eq!(
            parse_access_line(line),
            Some(Served { method: "HEAD".into(), path: "/v2/acme/manifests/v1".into(), status: 200 })
        );
        assert_eq!(parse_access_line("time=... level=info msg=\"x\""), None);
    }
}
