//! Credentials bound to one provider: the files of a directory shaped like a
//! mounted Kubernetes Secret, read into memory when the provider is loaded.
//!
//! A provider can read exactly these, by file name; it has no file system
//! access, so no other name, path or directory can reach anything.
//!
//! A credential can also be *sealed*: the host still uses it to sign or
//! authenticate the provider's requests (`request-auth`), but the
//! `credentials` import refuses to hand it to the guest, so a secret key
//! never enters guest memory whatever the provider does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::bindings::credentials;

/// The largest credential accepted, in bytes.
const MAX_CREDENTIAL: u64 = 1 << 20;

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
}

/// A provider's credentials, by name.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    values: BTreeMap<String, Vec<u8>>,
    sealed: BTreeSet<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
        Credentials { values, sealed: BTreeSet::new() }
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
        Ok(Credentials { values, sealed: BTreeSet::new() })
    }

    /// Seals the credentials `names`: usable by the host to sign the
    /// provider's requests, never readable by the provider.
    ///
    /// # Errors
    /// When a name is not a credential, which is likely a typo.
    pub fn seal<I, S>(mut self, names: I) -> Result<Self, CredentialsError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for name in names.into_iter().map(Into::into) {
            if !self.values.contains_key(&name) {
                let present = self.values.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
                return Err(CredentialsError::SealUnknown { name, present });
            }
            self.sealed.insert(name);
        }
        Ok(self)
    }

    /// Whether the provider is refused the credential `name`.
    pub fn is_sealed(&self, name: &str) -> bool {
        self.sealed.contains(name)
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
        let _span = tracing::debug_span!("credentials.get", name = %name).entered();
        if self.credentials.is_sealed(&name) {
            tracing::warn!(name = %name, "provider asked for a sealed credential, which only the host may read");
            return Ok(Err(credentials::Error::NotFound(name)));
        }
        Ok(match self.credentials.get(&name) {
            Some(value) => Ok(value.to_vec()),
            None => {
                tracing::warn!(name = %name, "provider asked for a credential that is not bound to it");
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
}
