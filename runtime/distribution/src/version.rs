//! A provider's version, as its manifest states it: the
//! `org.opencontainers.image.version` annotation. A signature signs the
//! manifest's digest, so a signed provider's version is signed too; this is
//! what roll-back protection compares.

use crate::DistributionError;
use crate::artifact::Manifest;

/// The manifest annotation holding a provider's version (semantic
/// versioning).
pub const VERSION_ANNOTATION: &str = "org.opencontainers.image.version";

/// The version the manifest `raw` states, if it states one.
pub(crate) fn of_manifest(raw: &[u8]) -> Option<String> {
    let manifest: Manifest = serde_json::from_slice(raw).ok()?;
    manifest.annotations?.remove(VERSION_ANNOTATION)
}

/// Checks that `version` (the one a pulled provider states) is at least
/// `minimum`.
///
/// # Errors
/// [`DistributionError::NoVersion`] when there is none or it is not a
/// semantic version, [`DistributionError::VersionTooOld`] when it is older.
pub fn check_minimum_version(
    reference: &str,
    version: Option<&str>,
    minimum: &semver::Version,
) -> Result<semver::Version, DistributionError> {
    let no_version = |reason: String| DistributionError::NoVersion { reference: reference.to_owned(), reason };
    let text = version.ok_or_else(|| no_version(format!("its manifest has no {VERSION_ANNOTATION} annotation")))?;
    let parsed = semver::Version::parse(text.trim_start_matches('v'))
        .map_err(|err| no_version(format!("its version {text:?} is not a semantic version: {err}")))?;
    if parsed < *minimum {
        return Err(DistributionError::VersionTooOld { version: parsed.to_string(), minimum: minimum.to_string() });
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_the_manifest_and_compared() {
        let raw = br#"{"schemaVersion":2,"annotations":{"org.opencontainers.image.version":"1.4.0"}}"#;
        assert_eq!(of_manifest(raw).as_deref(), Some("1.4.0"));
        assert_eq!(of_manifest(br#"{"schemaVersion":2}"#), None);
        let minimum = semver::Version::new(1, 2, 0);
        assert_eq!(check_minimum_version("r", Some("v1.4.0"), &minimum).unwrap(), semver::Version::new(1, 4, 0));
        let err = check_minimum_version("r", Some("1.1.9"), &minimum).unwrap_err();
        assert_eq!(err.to_string(), "version 1.1.9 is older than 1.2.0, the oldest allowed: a roll-back is refused");
        assert!(matches!(check_minimum_version("r", None, &minimum), Err(DistributionError::NoVersion { .. })));
        assert!(matches!(
            check_minimum_version("r", Some("latest"), &minimum),
            Err(DistributionError::NoVersion { .. })
        ));
    }
}
