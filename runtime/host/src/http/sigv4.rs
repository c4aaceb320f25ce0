//! AWS Signature Version 4, computed by the host so that the secret key
//! never enters the guest: the provider names the credentials, the host
//! reads and applies them.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;

use crate::bindings::http::AwsSigv4;
use crate::credentials::Credentials;

/// The headers that sign a request: `authorization`, `x-amz-date` and, with
/// a session token, `x-amz-security-token`.
///
/// # Errors
/// When a named credential is not bound to the provider, or the request
/// cannot be signed.
pub(crate) fn signature_headers(
    params: &AwsSigv4,
    credentials: &Credentials,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<(String, String)>, String> {
    let credential = |name: &str| {
        credentials.get_text(name).ok_or_else(|| format!("credential {name:?} is not bound to this provider"))
    };
    let access_key_id = credential(&params.access_key_id)?;
    let secret_access_key = credential(&params.secret_access_key)?;
    let session_token = params.session_token.as_deref().map(credential).transpose()?;
    let identity = aws_credential_types::Credentials::new(
        access_key_id,
        secret_access_key,
        session_token,
        None,
        "wasm-ccm-provider-credentials",
    )
    .into();
    let signing_params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&params.region)
        .name(&params.service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| format!("cannot sign the request: {err}"))?
        .into();
    let signable = SignableRequest::new(
        method,
        url,
        headers.iter().map(|(name, value)| (name.as_str(), value.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|err| format!("cannot sign the request: {err}"))?;
    let (instructions, _signature) =
        sign(signable, &signing_params).map_err(|err| format!("cannot sign the request: {err}"))?.into_parts();
    Ok(instructions.headers().map(|(name, value)| (name.to_owned(), value.to_owned())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(session_token: Option<&str>) -> AwsSigv4 {
        AwsSigv4 {
            region: "us-east-1".into(),
            service: "ec2".into(),
            access_key_id: "key-id".into(),
            secret_access_key: "secret".into(),
            session_token: session_token.map(Into::into),
        }
    }

    #[test]
    fn signs_with_named_credentials() {
        let credentials =
            Credentials::from_pairs([("key-id", "AKIDEXAMPLE"), ("secret", "wJalrXUtnFEMI"), ("token", "session")]);
        let headers = signature_headers(
            &params(Some("token")),
            &credentials,
            "POST",
            "https://ec2.us-east-1.amazonaws.com/",
            &[],
            b"Action=DescribeInstances",
        )
        .unwrap();
        let names: Vec<&str> = headers.iter().map(|(name, _)| name.as_str()).collect();
        assert!(names.contains(&"authorization"), "{names:?}");
        assert!(names.contains(&"x-amz-date"));
        assert!(names.contains(&"x-amz-security-token"));
        let authorization = &headers.iter().find(|(name, _)| name == "authorization").unwrap().1;
        assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), "{authorization}");
        assert!(authorization.contains("/us-east-1/ec2/aws4_request"));
        assert!(!authorization.contains("wJalrXUtnFEMI"), "the secret is never sent");
    }

    #[test]
    fn refuses_unbound_credentials() {
        let credentials = Credentials::from_pairs([("key-id", "AKIDEXAMPLE")]);
        let err =
            signature_headers(&params(None), &credentials, "GET", "https://ec2.amazonaws.com/", &[], b"").unwrap_err();
        assert!(err.contains("\"secret\" is not bound"), "{err}");
    }
}
