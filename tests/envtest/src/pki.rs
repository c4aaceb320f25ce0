//! Certificates and keys for servers on loopback: a throwaway CA and a
//! serving certificate for `127.0.0.1` and `localhost` signed by it, and the
//! key pair the API server signs service account tokens with.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};

/// A serving certificate for `127.0.0.1` and `localhost`, with the CA that
/// signed it; all PEM.
#[derive(Debug, Clone)]
pub struct LoopbackTls {
    /// The CA certificate clients trust.
    pub ca_pem: String,
    /// The server's certificate.
    pub certificate_pem: String,
    /// The server's private key.
    pub key_pem: String,
}

impl LoopbackTls {
    /// A new CA named `name` and a certificate it signed.
    ///
    /// # Errors
    /// When rcgen fails.
    pub fn generate(name: &str) -> Result<Self, rcgen::Error> {
        let ca_key = KeyPair::generate()?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name.push(DnType::CommonName, format!("{name} CA"));
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_certificate = ca.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate()?;
        let mut server = CertificateParams::new(vec!["localhost".to_owned()])?;
        server.distinguished_name.push(DnType::CommonName, "127.0.0.1");
        server.subject_alt_names.push(SanType::IpAddress([127, 0, 0, 1].into()));
        let certificate = server.signed_by(&key, &issuer)?;
        Ok(LoopbackTls {
            ca_pem: ca_certificate.pem(),
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// An ECDSA P-256 key pair, PEM: `(private PKCS #8, public SPKI)`.
///
/// # Errors
/// When rcgen fails.
pub fn signing_key_pair() -> Result<(String, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}
