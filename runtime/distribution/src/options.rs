//! How to reach a registry: credentials, TLS, plain HTTP, limits.

use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::{Auth, DistributionError, Reference};

/// The default cap on a provider's size: 64 MiB.
pub const DEFAULT_MAX_SIZE: u64 = 64 << 20;

/// The default connect and read timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach a registry.
///
/// TLS is the default, verified against the system's trusted roots plus
/// [`RegistryOptions::extra_ca_pem`]; plain HTTP is used only when
/// [`RegistryOptions::plain_http`] is set or the registry is listed in
/// [`RegistryOptions::plain_http_registries`].
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// The credentials.
    pub auth: Auth,
    /// Speak plain HTTP to every registry of this call.
    pub plain_http: bool,
    /// Speak plain HTTP to these registries (`host[:port]`) only.
    pub plain_http_registries: Vec<String>,
    /// PEM certificates trusted besides the system's roots, for a private
    /// registry's CA.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// The largest provider accepted, in bytes.
    pub max_size: u64,
    /// Connect and read timeout of each request.
    pub timeout: Duration,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            auth: Auth::Anonymous,
            plain_http: false,
            plain_http_registries: Vec::new(),
            extra_ca_pem: None,
            max_size: DEFAULT_MAX_SIZE,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl RegistryOptions {
    /// A client for these options, holding the credentials for
    /// `reference`'s registry.
    pub(crate) async fn client(&self, reference: &Reference) -> Result<oci_client::Client, DistributionError> {
        let client = self.build()?;
        client.store_auth_if_needed(reference.to_oci().resolve_registry(), &self.auth.to_oci()).await;
        Ok(client)
    }

    /// A client for these options.
    ///
    /// The HTTP stack is rustls with the `ring` provider, which is installed
    /// as the process's default when none is (the client library asks rustls
    /// for the default).
    fn build(&self) -> Result<oci_client::Client, DistributionError> {
        install_crypto_provider();
        let protocol = if self.plain_http {
            ClientProtocol::Http
        } else if self.plain_http_registries.is_empty() {
            ClientProtocol::Https
        } else {
            ClientProtocol::HttpsExcept(self.plain_http_registries.clone())
        };
        let extra_root_certificates = self
            .extra_roots()?
            .into_iter()
            .map(|data| Certificate { encoding: CertificateEncoding::Der, data })
            .collect();
        let config = ClientConfig {
            protocol,
            extra_root_certificates,
            connect_timeout: Some(self.timeout),
            read_timeout: Some(self.timeout),
            // One request at a time: a provider is one layer.
            max_concurrent_download: 1,
            max_concurrent_upload: 1,
            ..ClientConfig::default()
        };
        oci_client::Client::try_from(config).map_err(|err| DistributionError::Client(err.to_string()))
    }

    /// The DER certificates of [`RegistryOptions::extra_ca_pem`].
    pub(crate) fn extra_roots(&self) -> Result<Vec<Vec<u8>>, DistributionError> {
        self.extra_ca_pem.as_deref().map_or(Ok(Vec::new()), extra_roots)
    }
}

/// Installs rustls's `ring` provider as the process's default when none
/// is: both HTTP clients ask rustls for the default.
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Every certificate of a PEM bundle, checked here so that a bad file is
/// named rather than silently ignored.
fn extra_roots(pem: &[u8]) -> Result<Vec<Vec<u8>>, DistributionError> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .map(|certificate| {
            certificate
                .map(|der| der.to_vec())
                .map_err(|err| DistributionError::Client(format!("the extra CA is not PEM: {err}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if certificates.is_empty() {
        return Err(DistributionError::Client("the extra CA holds no PEM certificate".to_owned()));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_ca_must_hold_certificates() {
        let err = extra_roots(b"not a certificate").unwrap_err().to_string();
        assert_eq!(err, "cannot set up the registry client: the extra CA holds no PEM certificate");
        let broken = b"-----BEGIN CERTIFICATE-----\n%%%%\n-----END CERTIFICATE-----\n";
        assert!(extra_roots(broken).unwrap_err().to_string().contains("the extra CA is not PEM"));
    }

    #[test]
    fn defaults_are_anonymous_tls_with_a_cap() {
        let options = RegistryOptions::default();
        assert_eq!(options.auth, Auth::Anonymous);
        assert!(!options.plain_http && options.plain_http_registries.is_empty());
        assert_eq!(options.max_size, 64 * 1024 * 1024);
        assert!(options.build().is_ok());
    }
}
