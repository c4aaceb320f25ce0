//! Provider IDs: `aws:///<zone>/<instance-id>` as this provider issues them,
//! and the other forms upstream accepts.

use wasm_ccm_sdk::Error;

/// The scheme and separator of every AWS provider ID.
const PREFIX: &str = "aws://";

/// The provider ID of an instance in `zone`.
pub fn format(zone: &str, instance_id: &str) -> String {
    format!("{PREFIX}/{zone}/{instance_id}")
}

/// The instance ID a provider ID names: `aws:///<zone>/<id>`,
/// `aws://<zone>/<id>`, `aws:///<id>` or a bare `i-…` ID.
///
/// # Errors
/// When it is none of those.
pub fn instance_id(provider_id: &str) -> Result<&str, Error> {
    let invalid =
        || Error::other(format_args!("provider ID {provider_id:?} is not of the form aws:///<zone>/<instance-id>"));
    let path = match provider_id.strip_prefix(PREFIX) {
        // What follows `aws://` up to the next slash is a host, which names nothing.
        Some(rest) => rest.split_once('/').map(|(_host, path)| path).ok_or_else(invalid)?,
        None if provider_id.contains("://") => return Err(invalid()),
        None => provider_id,
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let id = match segments.as_slice() {
        [id] | [_, id] => *id,
        _ => return Err(invalid()),
    };
    if id.len() > 2 && id.starts_with("i-") && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        Ok(id)
    } else {
        Err(invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_an_empty_host() {
        assert_eq!(format("eu-west-1a", "i-0abc"), "aws:///eu-west-1a/i-0abc");
    }

    #[test]
    fn accepts_upstream_forms() {
        for provider_id in
            ["aws:///eu-west-1a/i-0abc", "aws://eu-west-1a/i-0abc", "aws:///i-0abc", "aws:////i-0abc", "i-0abc"]
        {
            assert_eq!(instance_id(provider_id).unwrap(), "i-0abc", "{provider_id}");
        }
    }

    #[test]
    fn refuses_others() {
        for provider_id in [
            "",
            "aws://",
            "aws:///",
            "gce://project/zone/i-0abc",
            "aws:///zone/vol-0abc",
            "aws:///a/b/i-0abc",
            "aws:///zone/i-",
            "aws:///zone/i-0abc?x",
        ] {
            let Err(Error::Other(message)) = instance_id(provider_id) else { panic!("accepted {provider_id:?}") };
            assert!(message.contains("aws:///<zone>/<instance-id>"), "{message}");
        }
    }
}
