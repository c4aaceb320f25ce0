//! `--provider-trust`: what the operator trusts each provider of a
//! providers file with, from a file the operator owns apart from the
//! providers file: the key its versions must be signed with, the oldest
//! version it may run, which of its credentials are sealed and where they
//! may go, and its credentials directory. The providers file may narrow
//! each of these, never widen it ([`Trust::narrow`]).
//!
//! The trust file also says which providers may run at all: a provider it
//! does not name is refused, unless the file has an entry `"*"`, which is
//! then what every provider it does not name is trusted with. Such a
//! provider may not read a credentials directory a named one is trusted
//! with, and its versions are not recorded for roll-back protection, so
//! that no name can be given a high version before the operator trusts it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use wasm_ccm_distribution::PublicKey;
use wasm_ccm_host::{MAX_INPUT_FILE, Seal};

use crate::OptionError;

/// One provider's entry of the trust file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TrustEntry {
    /// The cosign public key (PEM) every version must be signed with.
    #[serde(default)]
    public_key: Option<PathBuf>,
    /// The oldest version it may run (a signed OCI provider).
    #[serde(default)]
    minimum_version: Option<semver::Version>,
    /// Its sealed credentials, `NAME=ROLE@ORIGIN`.
    #[serde(default)]
    sealed_credentials: Vec<String>,
    /// Its credentials directory, read wherever it is.
    #[serde(default)]
    credentials: Option<PathBuf>,
}

/// What the operator trusts one provider with.
#[derive(Clone, Default)]
pub struct Trust {
    /// The key every version must be signed with.
    pub public_key: Option<PublicKey>,
    /// The oldest version it may run.
    pub minimum_version: Option<semver::Version>,
    /// Its sealed credentials.
    pub sealed_credentials: Vec<Seal>,
    /// Its credentials directory, which the providers file cannot change.
    pub credentials: Option<PathBuf>,
}

/// The trust file's entry for the providers it does not name.
pub const UNLISTED: &str = "*";

/// What the operator trusts every provider with, by name. Without a trust
/// file ([`TrustFile::default`]) every provider may run, trusted with
/// nothing: no key, minimum version or seal required of it.
#[derive(Clone)]
pub struct TrustFile {
    providers: BTreeMap<String, Trust>,
    /// What a provider not named is trusted with; `None`: it is refused.
    unlisted: Option<Trust>,
}

impl Default for TrustFile {
    fn default() -> Self {
        TrustFile { providers: BTreeMap::new(), unlisted: Some(Trust::default()) }
    }
}

/// What one provider of the providers file is trusted with, and how.
#[derive(Clone)]
pub struct Trusted {
    /// What it is trusted with.
    pub trust: Trust,
    /// Whether the trust file names it: only then are its versions
    /// recorded for roll-back protection.
    pub by_name: bool,
}

impl std::fmt::Debug for TrustFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.providers.keys()).finish()
    }
}

impl TrustFile {
    /// Reads the trust file at `path` (YAML or JSON, keyed by provider
    /// name), and the keys it names.
    ///
    /// # Errors
    /// When it or a key cannot be read, or an entry is invalid.
    pub fn read(path: &Path) -> Result<Self, OptionError> {
        let bytes =
            wasm_ccm_host::files::read(path, MAX_INPUT_FILE).map_err(OptionError::reading("--provider-trust", path))?;
        let entries: BTreeMap<String, TrustEntry> = serde_norway::from_slice(&bytes)
            .map_err(|source| OptionError::NotATrustFile { path: path.to_owned(), source })?;
        let mut providers: BTreeMap<String, Trust> = entries
            .into_iter()
            .map(|(provider, entry)| match Trust::from_entry(entry) {
                Ok(trust) => Ok((provider, trust)),
                Err(err) => Err(OptionError::TrustEntry { path: path.to_owned(), provider, source: Box::new(err) }),
            })
            .collect::<Result<_, _>>()?;
        let unlisted = providers.remove(UNLISTED);
        Ok(TrustFile { providers, unlisted })
    }

    /// What the provider `name` is trusted with.
    ///
    /// # Errors
    /// When the trust file names neither it nor [`UNLISTED`].
    pub fn of(&self, name: &str) -> Result<Trusted, OptionError> {
        if let Some(trust) = self.providers.get(name) {
            return Ok(Trusted { trust: trust.clone(), by_name: true });
        }
        match &self.unlisted {
            Some(trust) => Ok(Trusted { trust: trust.clone(), by_name: false }),
            None => Err(OptionError::NotTrusted { provider: name.to_owned() }),
        }
    }

    /// Whether a provider the trust file names is trusted with the
    /// credentials directory `path`.
    pub fn names_credentials(&self, path: &Path) -> bool {
        self.providers.values().any(|trust| trust.credentials.as_deref() == Some(path))
    }
}

impl Trust {
    fn from_entry(entry: TrustEntry) -> Result<Self, OptionError> {
        let public_key = match &entry.public_key {
            Some(path) => {
                let pem = wasm_ccm_host::files::read(path, MAX_INPUT_FILE)
                    .map_err(OptionError::reading("publicKey", path))?;
                let key = PublicKey::from_pem(&pem).map_err(|source| OptionError::NotAKey {
                    option: "publicKey",
                    path: path.clone(),
                    source,
                })?;
                Some(key)
            }
            None => None,
        };
        let sealed_credentials = entry
            .sealed_credentials
            .iter()
            .map(|seal| seal.parse().map_err(|source| OptionError::Seal { option: "sealedCredentials", source }))
            .collect::<Result<_, _>>()?;
        Ok(Trust {
            public_key,
            minimum_version: entry.minimum_version,
            sealed_credentials,
            credentials: entry.credentials,
        })
    }

    /// What the provider runs with once the providers file's own fields
    /// narrowed this trust:
    ///
    /// - `publicKey`: the file may add one when the trust sets none, never
    ///   replace one;
    /// - `minimumVersion`: the file may raise it, never lower it;
    /// - `sealedCredentials`: the file may seal more credentials, and
    ///   narrow a trusted seal to some of its origins (in its role), never
    ///   unseal one or send it elsewhere;
    /// - `credentials`: the file may set it only when the trust does not.
    ///
    /// # Errors
    /// Every field the file would widen, each naming it.
    pub fn narrow(&self, asked: Trust) -> Result<Trust, OptionError> {
        let mut problems = Vec::new();
        let public_key = match (&self.public_key, asked.public_key) {
            (Some(_), Some(_)) => {
                problems.push("publicKey: the trust file sets this provider's key; leave it out here".to_owned());
                None
            }
            (trusted, asked) => trusted.clone().or(asked),
        };
        let minimum_version = match (&self.minimum_version, asked.minimum_version) {
            (Some(trusted), Some(asked)) if asked < *trusted => {
                problems
                    .push(format!("minimumVersion: {asked} is below {trusted}, the trust file's; it may only rise"));
                None
            }
            (trusted, asked) => asked.or_else(|| trusted.clone()),
        };
        for seal in &asked.sealed_credentials {
            let trusted: Vec<&Seal> =
                self.sealed_credentials.iter().filter(|trusted| trusted.name == seal.name).collect();
            if !trusted.is_empty() && !trusted.contains(&seal) {
                let trusted: Vec<String> = trusted.iter().map(|seal| written(seal)).collect();
                problems.push(format!(
                    "sealedCredentials: {} widens the trust file's {}; the providers file may only narrow a trusted seal",
                    written(seal),
                    trusted.join(", ")
                ));
            }
        }
        let narrowed: BTreeSet<&str> = asked.sealed_credentials.iter().map(|seal| seal.name.as_str()).collect();
        let sealed_credentials = self
            .sealed_credentials
            .iter()
            .filter(|trusted| !narrowed.contains(trusted.name.as_str()))
            .chain(&asked.sealed_credentials)
            .cloned()
            .collect();
        if self.credentials.is_some() && asked.credentials.is_some() {
            problems.push("credentials: the trust file sets this provider's directory; leave it out here".to_owned());
        }
        let credentials = self.credentials.clone().or(asked.credentials);
        match problems.is_empty() {
            true => Ok(Trust { public_key, minimum_version, sealed_credentials, credentials }),
            false => Err(OptionError::Widens { problems }),
        }
    }
}

/// A seal as it is written: `NAME=ROLE@ORIGIN`.
fn written(seal: &Seal) -> String {
    format!("{}={}@{}", seal.name, seal.role, seal.origin)
}

#[cfg(test)]
mod tests {
    use wasm_ccm_distribution::SigningKey;

    use super::*;
    use wasm_ccm_fleet::error_chain;

    fn seal(entry: &str) -> Seal {
        entry.parse().unwrap()
    }

    fn key() -> PublicKey {
        SigningKey::generate().unwrap().public_key().unwrap()
    }

    fn trusted() -> Trust {
        Trust {
            public_key: Some(key()),
            minimum_version: Some(semver::Version::new(2, 0, 0)),
            sealed_credentials: vec![
                seal("secret=aws-sigv4-secret-access-key@https://ec2.example"),
                seal("secret=aws-sigv4-secret-access-key@https://elb.example"),
            ],
            credentials: Some("/etc/wasm-ccm/credentials".into()),
        }
    }

    #[test]
    fn the_providers_file_may_narrow_trust() {
        let asked = Trust {
            minimum_version: Some(semver::Version::new(2, 1, 0)),
            sealed_credentials: vec![
                seal("secret=aws-sigv4-secret-access-key@https://ec2.example"),
                seal("token=bearer@https://api.example"),
            ],
            ..Trust::default()
        };
        let narrowed = trusted().narrow(asked).unwrap();
        assert!(narrowed.public_key.is_some(), "the trusted key stays required");
        assert_eq!(narrowed.minimum_version, Some(semver::Version::new(2, 1, 0)));
        let seals: Vec<String> = narrowed.sealed_credentials.iter().map(written).collect();
        assert_eq!(
            seals,
            ["secret=aws-sigv4-secret-access-key@https://ec2.example", "token=bearer@https://api.example"]
        );
        assert_eq!(narrowed.credentials.as_deref(), Some(Path::new("/etc/wasm-ccm/credentials")));

        let kept = trusted().narrow(Trust::default()).unwrap();
        assert_eq!(kept.sealed_credentials.len(), 2, "leaving a seal out keeps it");
        assert_eq!(kept.minimum_version, Some(semver::Version::new(2, 0, 0)));
        let added = Trust::default().narrow(Trust { public_key: Some(key()), ..Trust::default() }).unwrap();
        assert!(added.public_key.is_some(), "a key where the trust file has none is a requirement more");
    }

    #[test]
    fn the_providers_file_cannot_widen_trust() {
        let asked = Trust {
            public_key: Some(key()),
            minimum_version: Some(semver::Version::new(1, 0, 0)),
            sealed_credentials: vec![
                seal("secret=aws-sigv4-secret-access-key@https://echo.example"),
                seal("secret=bearer@https://ec2.example"),
            ],
            credentials: Some("/etc/wasm-ccm/providers/other".into()),
        };
        let Err(OptionError::Widens { problems }) = trusted().narrow(asked) else { panic!("refused") };
        let expected = [
            "publicKey: the trust file sets this provider's key",
            "minimumVersion: 1.0.0 is below 2.0.0, the trust file's",
            "sealedCredentials: secret=aws-sigv4-secret-access-key@https://echo.example widens",
            "sealedCredentials: secret=bearer@https://ec2.example widens",
            "credentials: the trust file sets this provider's directory",
        ];
        assert_eq!(problems.len(), expected.len(), "{problems:#?}");
        for (problem, expected) in problems.iter().zip(expected) {
            assert!(problem.starts_with(expected), "{problem}");
        }
    }

    #[test]
    fn a_trust_file_is_keyed_by_provider_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cosign.pub"), SigningKey::generate().unwrap().public_key_pem().unwrap())
            .unwrap();
        let file = dir.path().join("trust.yaml");
        let text = format!(
            "vendor-a:\n  publicKey: {}\n  minimumVersion: 1.2.0\n  sealedCredentials: [\"token=bearer@https://api.example\"]\n",
            dir.path().join("cosign.pub").display()
        );
        std::fs::write(&file, text).unwrap();
        let trust = TrustFile::read(&file).unwrap();
        let vendor_a = trust.of("vendor-a").unwrap();
        assert!(vendor_a.by_name);
        let vendor_a = vendor_a.trust;
        assert!(vendor_a.public_key.is_some());
        assert_eq!(vendor_a.minimum_version, Some(semver::Version::new(1, 2, 0)));
        assert_eq!(vendor_a.sealed_credentials.len(), 1);
        let Err(refused) = trust.of("vendor-x") else { panic!("a provider not named is refused") };
        assert!(refused.to_string().contains("vendor-x"), "{refused}");
        let nothing = TrustFile::default().of("vendor-x").unwrap();
        assert!(!nothing.by_name && nothing.trust.public_key.is_none(), "without a trust file, trusted with nothing");

        std::fs::write(&file, "vendor-a: {credentials: /etc/a}\n\"*\": {minimumVersion: 3.0.0}\n").unwrap();
        let trust = TrustFile::read(&file).unwrap();
        let unlisted = trust.of("vendor-x").unwrap();
        assert!(!unlisted.by_name, "the entry for providers not named");
        assert_eq!(unlisted.trust.minimum_version, Some(semver::Version::new(3, 0, 0)));
        assert!(trust.names_credentials(Path::new("/etc/a")) && !trust.names_credentials(Path::new("/etc/x")));
        std::fs::write(&file, "vendor-a: {publicKey: /nowhere.pub}").unwrap();
        let err = error_chain(&TrustFile::read(&file).expect_err("refused"));
        assert!(err.contains("provider vendor-a: cannot read publicKey /nowhere.pub"), "{err}");
    }
}
