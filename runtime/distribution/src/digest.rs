//! `sha256:<hex>` digests: computing, parsing and comparing them.

use sha2::{Digest as _, Sha256};

use crate::DistributionError;

/// The digest of `bytes`: `sha256:` and 64 lowercase hex digits.
///
/// ```
/// assert_eq!(
///     wasm_ccm_distribution::sha256_digest(b""),
///     "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
/// );
/// ```
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// Checks `sha256:<64 hex digits>` and returns it with lowercase hex.
pub(crate) fn parse(digest: &str) -> Result<String, DistributionError> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
        }
        _ => Err(DistributionError::InvalidDigest(digest.to_owned())),
    }
}

/// A pin as users write it: `sha256:<hex>` or the 64 hex digits alone.
pub(crate) fn parse_pin(pin: &str) -> Result<String, DistributionError> {
    let pin = pin.trim();
    if pin.contains(':') { parse(pin) } else { parse(&format!("sha256:{pin}")) }
}

/// Refuses `bytes` unless they hash to `expected`; returns their digest.
pub(crate) fn check(what: &'static str, bytes: &[u8], expected: &str) -> Result<String, DistributionError> {
    let actual = sha256_digest(bytes);
    if actual == parse(expected)? {
        Ok(actual)
    } else {
        Err(DistributionError::DigestMismatch { what, expected: expected.to_owned(), actual })
    }
}

/// Refuses `digest` unless it equals the pin, if there is one.
pub(crate) fn check_pin(digest: &str, pin: Option<&str>) -> Result<(), DistributionError> {
    let Some(pin) = pin else { return Ok(()) };
    let pin = parse_pin(pin)?;
    if digest == pin { Ok(()) } else { Err(DistributionError::PinMismatch { actual: digest.to_owned(), pin }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn digest_of_known_bytes() {
        assert_eq!(sha256_digest(b""), format!("sha256:{EMPTY}"));
        assert_eq!(sha256_digest(b"abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn parsing_normalises_case_and_refuses_the_rest() {
        assert_eq!(parse(&format!("sha256:{}", EMPTY.to_uppercase())).unwrap(), format!("sha256:{EMPTY}"));
        for bad in ["", "sha256:", "sha256:abc", &format!("sha512:{EMPTY}"), &format!("sha256:{EMPTY}0"), EMPTY] {
            let err = parse(bad).expect_err(bad).to_string();
            assert_eq!(err, format!("invalid digest {bad:?}: expected sha256: and 64 hex digits"));
        }
        assert_eq!(parse_pin(EMPTY).unwrap(), format!("sha256:{EMPTY}"));
        assert_eq!(parse_pin(&format!(" sha256:{EMPTY}\n")).unwrap(), format!("sha256:{EMPTY}"));
    }

    #[test]
    fn check_compares_the_bytes_hash() {
        assert_eq!(check("the layer", b"", &format!("sha256:{EMPTY}")).unwrap(), format!("sha256:{EMPTY}"));
        let err = check("the layer", b"x", &format!("sha256:{EMPTY}")).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("the layer hashes to {}, not to sha256:{EMPTY} as its reference states", sha256_digest(b"x"))
        );
    }

    #[test]
    fn pins() {
        let digest = sha256_digest(b"wasm");
        assert!(check_pin(&digest, None).is_ok());
        assert!(check_pin(&digest, Some(&digest)).is_ok());
        assert!(check_pin(&digest, Some(digest.trim_start_matches("sha256:"))).is_ok());
        let err = check_pin(&digest, Some(EMPTY)).unwrap_err().to_string();
        assert_eq!(err, format!("digest {digest} does not match the pin sha256:{EMPTY}"));
        assert!(matches!(check_pin(&digest, Some("nope")), Err(DistributionError::InvalidDigest(_))));
    }
}
