//! Credentials bound to one provider: the files of a directory shaped like a
//! mounted Kubernetes Secret, read into memory when the provider is loaded.
//!
//! A provider can read exactly these, by file name; it has no file system
//! access, so no other name, path or directory can reach anything.
//!
//! A credential can also be *sealed* in a [`Role`]: the host still uses it
//! to sign or authenticate the provider's requests (`request-auth`), in that
//! role only, but the `credentials` import refuses to hand it to the guest,
//! so a secret never enters guest memory or leaves the host in another
//! shape whatever the provider does.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::bindings::credentials;
use crate::log::clip;

/// The largest credential accepted, in bytes.
const MAX_CREDENTIAL: u64 = 1 << 20;
/// How much of a name the provider asked for the host logs.
const MAX_NAME_LOGGED: usize = 256;

/// Why credentials could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The directory or one of its files could not be read.
    #[error("cannot read credentials from {path}: {source}")]
    Read {
        /// The file or directory.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is larger than a credential can be.
    #[error("credential file {path} is larger than {MAX_CREDENTIAL} bytes")]
    TooLarge {
        /// The file.
        path: String,
    },
    /// A credential to seal does not exist.
    #[error("cannot seal the credential {name}: there is no credential of that name (there are: {present})")]
    SealUnknown {
        /// The name asked for.
        name: String,
        /// The names there are, comma-separated.
        present: String,
    },
    /// A role is not one the host knows.
    #[error("unknown credential role {role:?} (roles: {roles})")]
    UnknownRole {
        /// The role asked for.
        role: String,
        /// The roles there are, comma-separated.
        roles: String,
    },
}

/// What the host may do with a sealed credential on the provider's behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sent as `Authorization: Bearer`, over HTTPS only.
    Bearer,
    /// AWS Signature Version 4's access key ID, sent in the signature's
    /// `Credential=` field.
    AwsAccessKeyId,
    /// AWS Signature Version 4's secret key: it signs, and is never sent.
    AwsSecretAccessKey,
    /// AWS Signature Version 4's session token, sent as
    /// `x-amz-security-token`, over HTTPS only.
    AwsSessionToken,
}

impl Role {
    const NAMES: [(&'static str, Role); 4] = [
        ("bearer", Role::Bearer),
        ("aws-sigv4-access-key-id", Role::AwsAccessKeyId),
        ("aws-sigv4-secret-access-key", Role::AwsSecretAccessKey),
        ("aws-sigv4-session-token", Role::AwsSessionToken),
    ];

    /// Whether the credential goes over the wire as it is, so only over TLS.
    fn needs_tls(self) -> bool {
        matches!(self, Role::Bearer | Role::AwsSessionToken)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Role::NAMES.iter().find(|(_, role)| role == self).map_or("?", |(name, _)| name);
        f.write_str(name)
    }
}

impl FromStr for Role {
    type Err = CredentialsError;

    fn from_str(text: &str) -> Result<Self, CredentialsError> {
        Role::NAMES.iter().find(|(name, _)| *name == text).map(|(_, role)| *role).ok_or_else(|| {
            CredentialsError::UnknownRole {
                role: text.to_owned(),
                roles: Role::NAMES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", "),
            }
        })
    }
}

/// Why the host refuses to use a credential for a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UseRefused {
    /// No credential of that name is bound to the provider.
    #[error("credential {0:?} is not bound to this provider")]
    NotBound(String),
    /// The credential is sealed in another role.
    #[error("credential {name:?} is sealed as {sealed_as} and cannot be used as {asked}")]
    WrongRole {
        /// The credential.
        name: String,
        /// Its role.
        sealed_as: Role,
        /// The role the request asked for.
        asked: Role,
    },
    /// The credential would cross the network in the clear.
    #[error("credential {name:?} is sealed as {role}, which is sent only over https")]
    PlainHttp {
        /// The credential.
        name: String,
        /// Its role.
        role: Role,
    },
}

/// A provider's credentials, by name, and the roles of the sealed ones.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    values: BTreeMap<String, Vec<u8>>,
    sealed: BTreeMap<String, Role>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: values are secrets.
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl Credentials {
    /// Credentials from name-value pairs.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<Vec<u8>>,
    {
        let values = pairs.into_iter().map(|(key, value)| (key.into(), value.into())).collect();
        Credentials { values, sealed: BTreeMap::new() }
    }

    /// Reads every regular file directly in `dir`, following symbolic links
    /// as a mounted Secret has them, and skipping names that start with a
    /// dot (a mounted Secret's `..data` bookkeeping).
    ///
    /// # Errors
    /// When the directory or a file cannot be read, or a file is too large.
    pub fn from_dir(dir: &Path) -> Result<Self, CredentialsError> {
        let read_error = |path: &Path, source| CredentialsError::Read { path: path.display().to_string(), source };
        let mut values = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(|err| read_error(dir, err))? {
            let entry = entry.map_err(|err| read_error(dir, err))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with('.') {
                continue;
            }
            let metadata = std::fs::metadata(&path).map_err(|err| read_error(&path, err))?;
            if !metadata.is_file() {
                continue;
            }
            if metadata.len() > MAX_CREDENTIAL {
                return Err(CredentialsError::TooLarge { path: path.display().to_string() });
            }
            values.insert(name, std::fs::read(&path).map_err(|err| read_error(&path, err))?);
        }
        Ok(Credentials { values, sealed: BTreeMap::new() })
    }

    /// Seals each credential of `roles` in its role: usable by the host for
    /// the provider's requests in that role only, never readable by the
    /// provider.
    ///
    /// # Errors
    /// When a name is not a credential, which is likely a typo.
    pub fn seal<I, S>(mut self, roles: I) -> Result<Self, CredentialsError>
    where
        I: IntoIterator<Item = (S, Role)>,
        S: Into<String>,
    {
        for (name, role) in roles.into_iter().map(|(name, role)| (name.into(), role)) {
            if !self.values.contains_key(&name) {
                let present = self.values.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
                return Err(CredentialsError::SealUnknown { name, present });
            }
            self.sealed.insert(name, role);
        }
        Ok(self)
    }

    /// Whether the provider is refused the credential `name`.
    pub fn is_sealed(&self, name: &str) -> bool {
        self.sealed.contains_key(name)
    }

    /// The credential `name` as text, for the host to use in `role` on a
    /// request over TLS or not: a credential the provider can read serves
    /// any role, a sealed one only its own.
    ///
    /// # Errors
    /// When there is no such credential, it is sealed in another role, or
    /// its role sends it as it is and the request is not over TLS.
    pub fn for_role(&self, name: &str, role: Role, over_tls: bool) -> Result<String, UseRefused> {
        let value = self.get_text(name).ok_or_else(|| UseRefused::NotBound(name.to_owned()))?;
        match self.sealed.get(name) {
            None => Ok(value),
            Some(&sealed_as) if sealed_as != role => {
                Err(UseRefused::WrongRole { name: name.to_owned(), sealed_as, asked: role })
            }
            Some(_) if role.needs_tls() && !over_tls => Err(UseRefused::PlainHttp { name: name.to_owned(), role }),
            Some(_) => Ok(value),
        }
    }

    /// The credential `name`.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.values.get(name).map(Vec::as_slice)
    }

    /// The credential `name` as text without surrounding white space.
    pub fn get_text(&self, name: &str) -> Option<String> {
        self.get(name).and_then(|value| std::str::from_utf8(value).ok()).map(|text| text.trim().to_owned())
    }

    /// The names of the credentials.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

/// The `credentials` import of one call.
pub(crate) struct CredentialsImport {
    pub(crate) credentials: std::sync::Arc<Credentials>,
}

impl credentials::Host for CredentialsImport {
    fn get(&mut self, name: String) -> wasmtime::Result<Result<Vec<u8>, credentials::Error>> {
        let logged = clip(&name, MAX_NAME_LOGGED);
        let _span = tracing::debug_span!("credentials.get", name = %logged).entered();
        if self.credentials.is_sealed(&name) {
            tracing::warn!(name = %logged, "provider asked for a sealed credential, which only the host may read");
            return Ok(Err(credentials::Error::NotFound(name)));
        }
        Ok(match self.credentials.get(&name) {
            Some(value) => Ok(value.to_vec()),
            None => {
                tracing::warn!(name = %logged, "provider asked for a credential that is not bound to it");
                Err(credentials::Error::NotFound(name))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_secret_shaped_directory() {
        let dir = std::env::temp_dir().join(format!("wasm-ccm-credentials-{}", std::process::id()));
        let data = dir.join("..2024_01_01");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("token"), b"s3cret\n").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("..2024_01_01", dir.join("..data")).unwrap();
            std::os::unix::fs::symlink("..data/token", dir.join("token")).unwrap();
        }
        std::fs::create_dir_all(dir.join("nested")).unwrap();
        let credentials = Credentials::from_dir(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(credentials.names().collect::<Vec<_>>(), ["token"]);
        assert_eq!(credentials.get_text("token").as_deref(), Some("s3cret"));
        assert_eq!(credentials.get("../token"), None);
        assert_eq!(format!("{credentials:?}"), r#"{"token"}"#, "values never reach logs");
    }

    #[test]
    fn a_sealed_credential_serves_its_role_only() {
        let credentials = Credentials::from_pairs([("secret", "s3cret"), ("token", "t0ken"), ("region", "eu-west-1")])
            .seal([("secret", Role::AwsSecretAccessKey), ("token", Role::Bearer)])
            .unwrap();
        assert_eq!(credentials.for_role("secret", Role::AwsSecretAccessKey, false).as_deref(), Ok("s3cret"));
        for role in [Role::Bearer, Role::AwsAccessKeyId, Role::AwsSessionToken] {
            let refused = credentials.for_role("secret", role, true).unwrap_err();
            assert!(matches!(refused, UseRefused::WrongRole { .. }), "{role}: {refused}");
        }
        assert_eq!(credentials.for_role("token", Role::Bearer, true).as_deref(), Ok("t0ken"));
        let refused = credentials.for_role("token", Role::Bearer, false).unwrap_err();
        assert_eq!(refused.to_string(), r#"credential "token" is sealed as bearer, which is sent only over https"#);
        assert_eq!(credentials.for_role("region", Role::Bearer, false).as_deref(), Ok("eu-west-1"), "not sealed");
        assert_eq!(credentials.for_role("other", Role::Bearer, true), Err(UseRefused::NotBound("other".into())));
    }

    #[test]
    fn roles_parse_by_name() {
        assert_eq!("aws-sigv4-secret-access-key".parse::<Role>().unwrap(), Role::AwsSecretAccessKey);
        assert_eq!(Role::AwsSessionToken.to_string(), "aws-sigv4-session-token");
        let unknown = "secret".parse::<Role>().unwrap_err().to_string();
        assert!(unknown.contains("bearer, aws-sigv4-access-key-id"), "{unknown}");
    }
}
