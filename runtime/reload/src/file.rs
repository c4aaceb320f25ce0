//! A provider in a file, polled for changes.
//!
//! Each poll reads the file (and its signature file) and hashes it: cheap
//! for a provider, and robust where modification times are not, such as a
//! ConfigMap or Secret mounted by kubelet, which is replaced by swapping a
//! symbolic link to a new directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wasm_ccm_distribution::{DEFAULT_MAX_SIZE, Verification, sha256_digest, verify_bytes};
use wasm_ccm_host::{Confinement, MAX_INPUT_FILE};

use crate::{Candidate, SourceError};

/// What a poll saw: the digests of the component and of its signature.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    wasm: String,
    signature: Option<String>,
}

/// A provider read from a file, with an optional detached signature file
/// (`cosign sign-blob` output).
#[derive(Debug)]
pub struct FileSource {
    path: PathBuf,
    signature: Option<PathBuf>,
    verification: Verification,
    confinement: Confinement,
    interval: Duration,
    seen: Option<Seen>,
    polled: bool,
}

impl FileSource {
    /// A source reading `path` (at most
    /// [`DEFAULT_MAX_SIZE`](wasm_ccm_distribution::DEFAULT_MAX_SIZE)) and
    /// `signature`, when given (at most [`MAX_INPUT_FILE`]), within
    /// `confinement`, every `interval`.
    pub fn new(
        path: PathBuf,
        signature: Option<PathBuf>,
        verification: Verification,
        confinement: Confinement,
        interval: Duration,
    ) -> Self {
        FileSource { path, signature, verification, confinement, interval, seen: None, polled: false }
    }

    /// Where it reads from.
    pub fn origin(&self) -> String {
        self.path.display().to_string()
    }

    /// The next version: at once on the first call, then when the file or
    /// its signature changes.
    ///
    /// # Errors
    /// [`SourceError::Unavailable`] when a file cannot be read,
    /// [`SourceError::Verification`] when a changed file fails the pin or
    /// signature check (it is not offered again until it changes again).
    pub async fn next(&mut self) -> Result<Candidate, SourceError> {
        loop {
            if self.polled {
                tokio::time::sleep(self.interval).await;
            }
            self.polled = true;
            if let Some(found) = self.poll().await? {
                return Ok(found);
            }
        }
    }

    async fn poll(&mut self) -> Result<Option<Candidate>, SourceError> {
        let wasm = self.read(&self.path, DEFAULT_MAX_SIZE).await?;
        let signature = match &self.signature {
            Some(path) => Some(self.read(path, MAX_INPUT_FILE).await?),
            None => None,
        };
        let seen = Seen { wasm: sha256_digest(&wasm), signature: signature.as_deref().map(sha256_digest) };
        if self.seen.as_ref() == Some(&seen) {
            return Ok(None);
        }
        let digest = seen.wasm.clone();
        self.seen = Some(seen);
        match verify_bytes(&wasm, signature.as_deref(), &self.verification) {
            Ok(digest) => Ok(Some(Candidate { wasm: Arc::from(wasm), digest, origin: self.origin(), version: None })),
            Err(source) => Err(SourceError::Verification { origin: self.origin(), digest: Some(digest), source }),
        }
    }

    async fn read(&self, path: &Path, cap: u64) -> Result<Vec<u8>, SourceError> {
        let (path, confinement) = (path.to_owned(), self.confinement.clone());
        let origin = path.display().to_string();
        tokio::task::spawn_blocking(move || confinement.read(&path, cap))
            .await
            .map_err(|err| err.to_string())
            .and_then(|read| read.map_err(|err| err.to_string()))
            .map_err(|reason| SourceError::Unavailable { origin, reason })
    }
}

#[cfg(test)]
mod tests {
    use wasm_ccm_distribution::{SigningKey, sign_bytes};

    use super::*;

    #[tokio::test]
    async fn offers_each_change_once_and_verifies_it() {
        let dir = tempfile::tempdir().unwrap();
        let (wasm, signature) = (dir.path().join("p.wasm"), dir.path().join("p.wasm.sig"));
        let key = SigningKey::generate().unwrap();
        std::fs::write(&wasm, b"v1").unwrap();
        std::fs::write(&signature, sign_bytes(b"v1", &key).unwrap()).unwrap();
        let verification =
            Verification { pin: None, public_key: Some(key.public_key().unwrap()), ..Verification::none() };
        let mut source = FileSource::new(
            wasm.clone(),
            Some(signature.clone()),
            verification,
            Confinement::default(),
            Duration::from_millis(10),
        );

        let first = source.next().await.unwrap();
        assert_eq!((&*first.wasm, first.digest.as_str()), (&b"v1"[..], sha256_digest(b"v1").as_str()));
        assert!(tokio::time::timeout(Duration::from_millis(100), source.next()).await.is_err(), "nothing changed");

        std::fs::write(&wasm, b"v2").unwrap();
        let err = source.next().await.unwrap_err();
        assert!(
            matches!(&err, SourceError::Verification { digest: Some(digest), .. } if *digest == sha256_digest(b"v2")),
            "{err}"
        );
        assert!(tokio::time::timeout(Duration::from_millis(100), source.next()).await.is_err(), "rejected once");

        std::fs::write(&signature, sign_bytes(b"v2", &key).unwrap()).unwrap();
        assert_eq!(&*source.next().await.unwrap().wasm, b"v2");

        std::fs::remove_file(&wasm).unwrap();
        assert!(matches!(source.next().await, Err(SourceError::Unavailable { .. })));
    }
}
