//! Credentials bound to one provider: the files of a directory shaped like a
//! mounted Kubernetes Secret, read into memory when the provider is loaded.
//!
//! A provider can read exactly these, by file name; it has no file system
//! access, so no other name, path or directory can reach anything.
//!
//! A credential can also be *sealed* ([`Seal`]): in a [`Role`], for the
//! origins it is bound to. The host still uses it to sign or authenticate
//! the provider's requests (`request-auth`), in that role only and on
//! requests to those origins only, but the `credentials` import refuses to
//! hand it to the guest, so a secret never enters guest memory, and never
//! goes to a server its operator did not name, whatever the provider does.
//! What a server echoes of it is scrubbed from the answer before the guest
//! sees it (see the `http` import).
//!
//! Every sealed credential names its origins: one sealed without would go
//! to whatever the allow-list allows, an echoing server among them, so
//! [`Seal`] has no form without one. A sealed value is at least
//! [`MIN_SEALED`] bytes long, so that it can be told apart in the answers it
//! is scrubbed from and cannot be guessed through them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use url::Url;

use crate::bindings::credentials;
use crate::clip::clip;
use crate::files::{Confinement, FileError, MAX_INPUT_FILE};
use crate::imports::log::Origin;

/// The most a directory's credentials hold together: 4 MiB.
pub const MAX_CREDENTIALS: u64 = 4 << 20;
/// How much of a name the provider asked for the host logs.
const MAX_NAME_LOGGED: usize = 256;
/// The shortest value a sealed credential may have, in bytes.
pub const MIN_SEALED: usize = 8;

/// Why credentials could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The directory or one of its files could not be read; which file is
    /// not said, as its name is the directory's business.
    #[error("cannot read credentials from {path}: {source}")]
    Read {
        /// The directory.
        path: String,
        /// Why.
        #[source]
        source: FileError,
    },
    /// The directory's files hold more than [`MAX_CREDENTIALS`] together.
    #[error("the credentials of {path} are larger than 4 MiB together")]
    TooMuch {
        /// The directory.
        path: String,
    },
    /// A credential to seal does not exist.
    #[error("cannot seal the credential {name}: there is no credential of that name")]
    SealUnknown {
        /// The name asked for.
        name: String,
    },
    /// A role is not one the host knows.
    #[error("unknown credential role {role:?} (roles: {roles})")]
    UnknownRole {
        /// The role asked for.
        role: String,
        /// The roles there are, comma-separated.
        roles: String,
    },
    /// A sealed credential's entry is not `NAME=ROLE@ORIGIN`.
    #[error(
        "{entry:?} is not a sealed credential: {reason}; a sealed credential is NAME=ROLE@https://host[:port], \
         used by the host in that role, on requests to that origin only (repeat it for more origins)"
    )]
    BadSeal {
        /// The entry.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A credential is sealed in two roles.
    #[error("cannot seal the credential {name} as {role}: it is sealed as {sealed_as} already")]
    TwoRoles {
        /// The credential.
        name: String,
        /// The second role.
        role: Role,
        /// The first role.
        sealed_as: Role,
    },
    /// A sealed credential is too short to be scrubbed from answers.
    #[error(
        "cannot seal the credential {name}: it is {length} bytes long, and a sealed credential has at least \
         {MIN_SEALED}, so that it can be told apart in the answers it is scrubbed from and not guessed"
    )]
    TooShort {
        /// The credential.
        name: String,
        /// Its length, surrounding white space left out.
        length: usize,
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

/// One origin a sealed credential may be sent to: `https://host[:port]`,
/// or `http://` for the roles that never cross the network as they are.
/// A name or an IP address, never a wildcard or a network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedOrigin(url::Origin);

impl fmt::Display for SealedOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.ascii_serialization())
    }
}

impl FromStr for SealedOrigin {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let url = Url::parse(text).map_err(|err| format!("the origin {text:?} is not a URL: {err}"))?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err(format!("the origin {text:?} is not https:// or http://"));
        }
        let bare = url.username().is_empty()
            && url.password().is_none()
            && url.path() == "/"
            && url.query().is_none()
            && url.fragment().is_none();
        if !bare || url.host_str().is_none_or(|host| host.contains('*')) {
            return Err(format!("the origin {text:?} is not one host and port: no wildcard, network or path"));
        }
        Ok(SealedOrigin(url.origin()))
    }
}

/// A sealed credential: `name`, used by the host in `role` only, on
/// requests to `origin` only. Written `NAME=ROLE@ORIGIN`; a credential
/// sealed for several origins is one [`Seal`] per origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seal {
    /// The credential.
    pub name: String,
    /// What the host may do with it.
    pub role: Role,
    /// Where it may be sent.
    pub origin: SealedOrigin,
}

impl FromStr for Seal {
    type Err = CredentialsError;

    fn from_str(entry: &str) -> Result<Self, CredentialsError> {
        let bad = |reason: String| CredentialsError::BadSeal { entry: entry.to_owned(), reason };
        let (name, rest) = entry.trim().split_once('=').ok_or_else(|| bad("it names no role".to_owned()))?;
        let (role, origin) = rest.split_once('@').ok_or_else(|| bad("it names no origin".to_owned()))?;
        let role: Role = role.trim().parse()?;
        let origin: SealedOrigin = origin.trim().parse().map_err(bad)?;
        if role.needs_tls() && origin.0.ascii_serialization().starts_with("http:") {
            return Err(bad(format!("{role} is sent only over https, and {origin} is not")));
        }
        Ok(Seal { name: name.trim().to_owned(), role, origin })
    }
}

/// What a sealed credential may serve: its role, on requests to its
/// origins.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sealing {
    role: Role,
    origins: Vec<url::Origin>,
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
    /// The request goes to an origin the credential is not sealed for.
    #[error("credential {name:?} is sealed for {origins} only, not {asked}")]
    OtherOrigin {
        /// The credential.
        name: String,
        /// Its origins, comma-separated.
        origins: String,
        /// The request's origin.
        asked: String,
    },
}

/// A provider's credentials, by name, and how the sealed ones may serve.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    values: BTreeMap<String, Vec<u8>>,
    sealed: BTreeMap<String, Sealing>,
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
    /// as a mounted Secret has them within `confinement`, and skipping
    /// names that start with a dot (a mounted Secret's `..data`
    /// bookkeeping). Each file holds at most [`MAX_INPUT_FILE`] bytes, all
    /// of them at most [`MAX_CREDENTIALS`].
    ///
    /// # Errors
    /// When the directory or a file cannot be read or is not let through,
    /// or they are too large.
    pub fn from_dir(dir: &Path, confinement: &Confinement) -> Result<Self, CredentialsError> {
        let read_error = |source: FileError| CredentialsError::Read { path: dir.display().to_string(), source };
        let io_error = |err: std::io::Error| read_error(FileError::Io(err));
        let resolved = confinement.resolve(dir).map_err(read_error)?;
        let (mut values, mut total) = (BTreeMap::new(), 0);
        for entry in std::fs::read_dir(&resolved).map_err(io_error)? {
            let name = entry.map_err(io_error)?.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = dir.join(&name);
            if !std::fs::metadata(&path).map_err(io_error)?.is_file() {
                continue;
            }
            let value = confinement.read(&path, MAX_INPUT_FILE).map_err(read_error)?;
            total += value.len() as u64;
            if total > MAX_CREDENTIALS {
                return Err(CredentialsError::TooMuch { path: dir.display().to_string() });
            }
            values.insert(name, value);
        }
        Ok(Credentials { values, sealed: BTreeMap::new() })
    }

    /// Seals each credential of `seals`: usable by the host for the
    /// provider's requests in its role and to its origins only, never
    /// readable by the provider.
    ///
    /// # Errors
    /// When a name is not a credential (likely a typo), a credential is
    /// given two roles, or its value is shorter than [`MIN_SEALED`].
    pub fn seal(mut self, seals: impl IntoIterator<Item = Seal>) -> Result<Self, CredentialsError> {
        for Seal { name, role, origin } in seals {
            let Some(value) = self.get_text(&name) else {
                return Err(CredentialsError::SealUnknown { name });
            };
            if value.len() < MIN_SEALED {
                return Err(CredentialsError::TooShort { name, length: value.len() });
            }
            let sealing = self.sealed.entry(name.clone()).or_insert(Sealing { role, origins: Vec::new() });
            if sealing.role != role {
                return Err(CredentialsError::TwoRoles { name, role, sealed_as: sealing.role });
            }
            sealing.origins.push(origin.0);
        }
        Ok(self)
    }

    /// Whether the provider is refused the credential `name`.
    pub fn is_sealed(&self, name: &str) -> bool {
        self.sealed.contains_key(name)
    }

    /// The names of the credentials sealed in `role` for `url`'s origin.
    pub(crate) fn sealed_for(&self, role: Role, url: &Url) -> impl Iterator<Item = &str> {
        let origin = url.origin();
        self.sealed
            .iter()
            .filter(move |(_, sealing)| sealing.role == role && sealing.origins.contains(&origin))
            .map(|(name, _)| name.as_str())
    }

    /// The values of the sealed credentials, as the host sends them: what
    /// an answer must not carry back to the provider.
    pub(crate) fn sealed_values(&self) -> impl Iterator<Item = String> + '_ {
        self.sealed.keys().filter_map(|name| self.get_text(name))
    }

    /// The credential `name` as text, for the host to use in `role` on a
    /// request to `url`: a credential the provider can read serves any
    /// role and origin, a sealed one only its own.
    ///
    /// # Errors
    /// When there is no such credential, or it is sealed in another role
    /// or for other origins.
    pub fn for_role(&self, name: &str, role: Role, url: &Url) -> Result<String, UseRefused> {
        let value = self.get_text(name).ok_or_else(|| UseRefused::NotBound(name.to_owned()))?;
        let Some(sealing) = self.sealed.get(name) else {
            return Ok(value);
        };
        if sealing.role != role {
            return Err(UseRefused::WrongRole { name: name.to_owned(), sealed_as: sealing.role, asked: role });
        }
        let asked = url.origin();
        if !sealing.origins.contains(&asked) {
            return Err(UseRefused::OtherOrigin {
                name: name.to_owned(),
                origins: sealing.origins.iter().map(url::Origin::ascii_serialization).collect::<Vec<_>>().join(", "),
                asked: asked.ascii_serialization(),
            });
        }
        Ok(value)
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
    /// The call, whose line budget the refusals' warnings take from.
    pub(crate) origin: Origin,
}

impl credentials::Host for CredentialsImport {
    fn get(&mut self, name: String) -> wasmtime::Result<Result<Vec<u8>, credentials::Error>> {
        let logged = clip(&name, MAX_NAME_LOGGED);
        let _span = tracing::debug_span!("credentials.get", name = %logged).entered();
        if self.credentials.is_sealed(&name) {
            if self.origin.take_line() {
                tracing::warn!(name = %logged, "provider asked for a sealed credential, which only the host may read");
            }
            return Ok(Err(credentials::Error::NotFound(name)));
        }
        Ok(match self.credentials.get(&name) {
            Some(value) => Ok(value.to_vec()),
            None => {
                if self.origin.take_line() {
                    tracing::warn!(name = %logged, "provider asked for a credential that is not bound to it");
                }
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
        let credentials = Credentials::from_dir(&dir, &Confinement::default()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(credentials.names().collect::<Vec<_>>(), ["token"]);
        assert_eq!(credentials.get_text("token").as_deref(), Some("s3cret"));
        assert_eq!(credentials.get("../token"), None);
        assert_eq!(format!("{credentials:?}"), r#"{"token"}"#, "values never reach logs");
    }

    #[test]
    fn a_confined_directory_gives_nothing_from_outside_its_root_and_names_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("secret")).unwrap();
        std::fs::write(dir.path().join("elsewhere"), b"not yours").unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), root.join("secret/hidden-name")).unwrap();
        let confinement = Confinement::beneath(std::slice::from_ref(&root)).unwrap();
        let escape = Credentials::from_dir(&root.join("secret"), &confinement).unwrap_err().to_string();
        assert!(escape.ends_with("secret: it resolves out of its root through a symbolic link"), "{escape}");
        assert!(!escape.contains("hidden-name"), "{escape}");
        let token = Path::new("/var/run/secrets/kubernetes.io/serviceaccount");
        let err = Credentials::from_dir(token, &confinement).unwrap_err().to_string();
        assert!(err.contains("never read for a provider"), "{err}");

        std::fs::remove_file(root.join("secret/hidden-name")).unwrap();
        for part in 0..5 {
            std::fs::write(root.join(format!("secret/part-{part}")), vec![b'x'; 1 << 20]).unwrap();
        }
        let err = Credentials::from_dir(&root.join("secret"), &confinement).unwrap_err();
        assert!(matches!(err, CredentialsError::TooMuch { .. }), "{err}");
        std::fs::write(root.join("secret/part-0"), vec![b'x'; (1 << 20) + 1]).unwrap();
        let err = Credentials::from_dir(&root.join("secret"), &Confinement::default()).unwrap_err().to_string();
        assert!(err.ends_with("secret: it is larger than 1 MiB, the most read"), "{err}");
    }

    fn seal(entry: &str) -> Seal {
        entry.parse().unwrap_or_else(|err| panic!("{err}"))
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn a_sealed_credential_serves_its_role_and_origins_only() {
        let credentials =
            Credentials::from_pairs([("secret", "s3cret-key"), ("token", "t0ken-value"), ("region", "eu-west-1")])
                .seal([
                    seal("secret=aws-sigv4-secret-access-key@http://ec2.example"),
                    seal("token=bearer@https://api.example"),
                    seal("token=bearer@https://API.example:8443/"),
                ])
                .unwrap();
        let ec2 = url("http://ec2.example/");
        assert_eq!(credentials.for_role("secret", Role::AwsSecretAccessKey, &ec2).as_deref(), Ok("s3cret-key"));
        for role in [Role::Bearer, Role::AwsAccessKeyId, Role::AwsSessionToken] {
            let refused = credentials.for_role("secret", role, &ec2).unwrap_err();
            assert!(matches!(refused, UseRefused::WrongRole { .. }), "{role}: {refused}");
        }
        for allowed in ["https://api.example/v1", "https://api.example:443/", "https://api.example:8443/x"] {
            assert_eq!(credentials.for_role("token", Role::Bearer, &url(allowed)).as_deref(), Ok("t0ken-value"));
        }
        for other in ["http://api.example/", "https://api.example:444/", "https://echo.example/", "https://127.0.0.1/"]
        {
            let refused = credentials.for_role("token", Role::Bearer, &url(other)).unwrap_err();
            assert!(matches!(refused, UseRefused::OtherOrigin { .. }), "{other}: {refused}");
        }
        assert_eq!(
            credentials.for_role("token", Role::Bearer, &url("https://echo.example/")).unwrap_err().to_string(),
            r#"credential "token" is sealed for https://api.example, https://api.example:8443 only, not https://echo.example"#
        );
        let anywhere = url("http://echo.example/");
        assert_eq!(credentials.for_role("region", Role::Bearer, &anywhere).as_deref(), Ok("eu-west-1"), "not sealed");
        assert_eq!(credentials.for_role("other", Role::Bearer, &anywhere), Err(UseRefused::NotBound("other".into())));
        assert_eq!(credentials.sealed_values().collect::<Vec<_>>(), ["s3cret-key", "t0ken-value"]);
    }

    #[test]
    fn a_seal_names_its_role_and_one_origin() {
        let parsed = seal(" token = bearer @ https://api.example:8443 ");
        assert_eq!((parsed.name.as_str(), parsed.role), ("token", Role::Bearer));
        assert_eq!(parsed.origin.to_string(), "https://api.example:8443");
        assert_eq!(seal("t=bearer@https://[fd00::1]").origin.to_string(), "https://[fd00::1]");
        for (entry, expected) in [
            ("token", "it names no role"),
            ("token=bearer", "it names no origin"),
            ("token=signing@https://api.example", "unknown credential role \"signing\""),
            ("token=bearer@https://*.example", "no wildcard, network or path"),
            ("token=bearer@https://*", "no wildcard, network or path"),
            ("token=bearer@https://10.0.0.0/8", "no wildcard, network or path"),
            ("token=bearer@https://api.example/v1", "no wildcard, network or path"),
            ("token=bearer@https://user@api.example", "no wildcard, network or path"),
            ("token=bearer@api.example", "is not a URL"),
            ("token=bearer@ftp://api.example", "is not https:// or http://"),
            ("token=bearer@http://api.example", "bearer is sent only over https, and http://api.example is not"),
            ("t=aws-sigv4-session-token@http://a.example", "sent only over https"),
        ] {
            let err = entry.parse::<Seal>().unwrap_err().to_string();
            assert!(err.contains(expected), "{entry}: {err}");
        }
        let err = "token=bearer".parse::<Seal>().unwrap_err().to_string();
        assert!(err.contains("NAME=ROLE@https://host[:port]"), "{err}");
    }

    #[test]
    fn sealing_refuses_typos_two_roles_and_short_values() {
        let credentials = || Credentials::from_pairs([("token", "t0ken-value"), ("pin", "1234\n")]);
        let typo = credentials().seal([seal("tokn=bearer@https://a.example")]).unwrap_err();
        assert_eq!(typo.to_string(), "cannot seal the credential tokn: there is no credential of that name");
        let twice = credentials()
            .seal([seal("token=bearer@https://a.example"), seal("token=aws-sigv4-session-token@https://b.example")])
            .unwrap_err();
        assert!(matches!(twice, CredentialsError::TwoRoles { .. }), "{twice}");
        let short = credentials().seal([seal("pin=bearer@https://a.example")]).unwrap_err();
        assert!(matches!(short, CredentialsError::TooShort { length: 4, .. }), "{short}");
    }

    #[test]
    fn roles_parse_by_name() {
        assert_eq!("aws-sigv4-secret-access-key".parse::<Role>().unwrap(), Role::AwsSecretAccessKey);
        assert_eq!(Role::AwsSessionToken.to_string(), "aws-sigv4-session-token");
        let unknown = "secret".parse::<Role>().unwrap_err().to_string();
        assert!(unknown.contains("bearer, aws-sigv4-access-key-id"), "{unknown}");
    }
}
