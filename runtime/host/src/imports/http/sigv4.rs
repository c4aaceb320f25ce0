//! AWS Signature Version 4, computed by the host so that the secret key
//! never enters the guest: the provider names the credentials, the host
//! reads and applies them.
//!
//! A provider whose SDK signs its own requests (aws-sdk-go-v2 does) runs
//! with placeholders: its access key ID is the name of the credential
//! holding the real one, its session token (if any) the name of the one
//! holding the token, and its secret key anything. When a secret key is
//! sealed for the request's origin, the host throws that signature away
//! and signs the request again with the sealed one ([`self_signed`]).

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use reqwest::header::HeaderMap;

use url::Url;

use crate::bindings::http::AwsSigv4;
use crate::imports::credentials::{Credentials, Role, UseRefused};

/// The longest region or service name accepted.
const MAX_SCOPE_PART: usize = 64;

/// Why a request cannot be signed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SigningError {
    /// A named credential cannot be used in its slot.
    #[error(transparent)]
    Refused(#[from] UseRefused),
    /// The region or service is not a name.
    #[error(
        "the {part} {value:?} is not a region or service name (letters, digits, '-', '_' or '.', at most {MAX_SCOPE_PART})"
    )]
    BadScope {
        /// `region` or `service`.
        part: &'static str,
        /// What the provider gave, cut short.
        value: String,
    },
    /// aws-sigv4 refused the request.
    #[error("cannot sign the request: {0}")]
    Sign(String),
    /// The provider's own signature does not say which key and scope it
    /// was made for.
    #[error("the request's own AWS signature cannot be read: {0}")]
    Unreadable(&'static str),
    /// More than one secret key is sealed for the origin.
    #[error("secret access keys {0} are all sealed for this origin: the host cannot tell which signs the request")]
    Ambiguous(String),
}

/// The headers of a provider's own signature, which the host's replaces.
const OWN_SIGNATURE: [&str; 3] = ["authorization", "x-amz-date", "x-amz-security-token"];
/// How a Signature Version 4 `authorization` header starts.
const ALGORITHM: &str = "AWS4-HMAC-SHA256 ";

/// What signs again a request the provider signed itself, when a secret
/// key is sealed for its origin and `headers` carry a Signature Version 4
/// `authorization`: its access key ID and `x-amz-security-token` name the
/// credentials, its scope gives the region and service. The provider's
/// signature headers are removed. `None` leaves the request as it is: no
/// secret key is sealed there, or it is not signed that way.
///
/// # Errors
/// When the signature cannot be read, or several secret keys are sealed
/// for the origin.
pub(crate) fn self_signed(
    headers: &mut HeaderMap,
    credentials: &Credentials,
    url: &Url,
) -> Result<Option<AwsSigv4>, SigningError> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let Some(authorization) = header("authorization").and_then(|value| value.strip_prefix(ALGORITHM)) else {
        return Ok(None);
    };
    let sealed: Vec<&str> = credentials.sealed_for(Role::AwsSecretAccessKey, url).collect();
    let secret_access_key = match sealed[..] {
        [] => return Ok(None),
        [one] => one.to_owned(),
        _ => return Err(SigningError::Ambiguous(format!("{sealed:?}"))),
    };
    let credential = authorization
        .split(',')
        .find_map(|part| part.trim().strip_prefix("Credential="))
        .ok_or(SigningError::Unreadable("no Credential"))?;
    // `KEY-ID/DATE/REGION/SERVICE/aws4_request`.
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key_id, _date, region, service, "aws4_request"] = scope[..] else {
        return Err(SigningError::Unreadable("the Credential is not KEY-ID/DATE/REGION/SERVICE/aws4_request"));
    };
    let params = AwsSigv4 {
        region: scope_part("region", region)?.to_owned(),
        service: scope_part("service", service)?.to_owned(),
        access_key_id: access_key_id.to_owned(),
        secret_access_key,
        session_token: header("x-amz-security-token").map(str::to_owned),
    };
    for own in OWN_SIGNATURE {
        headers.remove(own);
    }
    Ok(Some(params))
}

/// The headers that sign a request: `authorization`, `x-amz-date` and, with
/// a session token, `x-amz-security-token`. Each credential is used in its
/// slot's role only, see [`Credentials::for_role`].
///
/// # Errors
/// When a named credential cannot be used in its slot, the region or
/// service is not a name, or the request cannot be signed.
pub(crate) fn signature_headers(
    params: &AwsSigv4,
    credentials: &Credentials,
    method: &str,
    url: &Url,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<(String, String)>, SigningError> {
    let region = scope_part("region", &params.region)?;
    let service = scope_part("service", &params.service)?;
    let access_key_id = credentials.for_role(&params.access_key_id, Role::AwsAccessKeyId, url)?;
    let secret_access_key = credentials.for_role(&params.secret_access_key, Role::AwsSecretAccessKey, url)?;
    let session_token = params
        .session_token
        .as_deref()
        .map(|name| credentials.for_role(name, Role::AwsSessionToken, url))
        .transpose()?;
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
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| SigningError::Sign(err.to_string()))?
        .into();
    let signable = SignableRequest::new(
        method,
        url.as_str(),
        headers.iter().map(|(name, value)| (name.as_str(), value.as_str())),
        SignableBody::Bytes(body),
    )
    .map_err(|err| SigningError::Sign(err.to_string()))?;
    let (instructions, _signature) =
        sign(signable, &signing_params).map_err(|err| SigningError::Sign(err.to_string()))?.into_parts();
    Ok(instructions.headers().map(|(name, value)| (name.to_owned(), value.to_owned())).collect())
}

/// A region or service name, which the signature's scope carries in the
/// clear: nothing but a name may go there.
fn scope_part<'a>(part: &'static str, value: &'a str) -> Result<&'a str, SigningError> {
    let valid = !value.is_empty()
        && value.len() <= MAX_SCOPE_PART
        && value.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'));
    if valid {
        Ok(value)
    } else {
        Err(SigningError::BadScope { part, value: value.chars().take(MAX_SCOPE_PART).collect() })
    }
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
            &Url::parse("https://ec2.us-east-1.amazonaws.com/").unwrap(),
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

    fn sign_with(params: &AwsSigv4, credentials: &Credentials) -> Result<Vec<(String, String)>, SigningError> {
        signature_headers(params, credentials, "GET", &Url::parse("http://ec2.amazonaws.com/").unwrap(), &[], b"")
    }

    #[test]
    fn refuses_unbound_credentials() {
        let credentials = Credentials::from_pairs([("key-id", "AKIDEXAMPLE")]);
        let err = sign_with(&params(None), &credentials).unwrap_err().to_string();
        assert!(err.contains("\"secret\" is not bound"), "{err}");
    }

    #[test]
    fn a_sealed_secret_key_never_fills_a_slot_that_is_sent() {
        let credentials = Credentials::from_pairs([("key-id", "AKIDEXAMPLE"), ("secret", "wJalrXUtnFEMI")])
            .seal(["secret=aws-sigv4-secret-access-key@http://ec2.amazonaws.com".parse().unwrap()])
            .unwrap();
        assert!(sign_with(&params(None), &credentials).is_ok());
        let mut as_key_id = params(None);
        as_key_id.access_key_id = "secret".into();
        let err = sign_with(&as_key_id, &credentials).unwrap_err().to_string();
        assert!(
            err.contains("sealed as aws-sigv4-secret-access-key and cannot be used as aws-sigv4-access-key-id"),
            "{err}"
        );
        let mut as_token = params(Some("secret"));
        as_token.secret_access_key = "key-id".into();
        assert!(matches!(sign_with(&as_token, &credentials), Err(SigningError::Refused(UseRefused::WrongRole { .. }))));
    }

    /// Headers as aws-sdk-go-v2 signs a request with the placeholder key
    /// ID `key-id` and the session token `token`.
    fn own_signature(credential: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let authorization =
            format!("{ALGORITHM}Credential={credential}, SignedHeaders=host;x-amz-date, Signature=00ff");
        headers.insert("authorization", authorization.parse().unwrap());
        headers.insert("x-amz-date", "20261128T000000Z".parse().unwrap());
        headers.insert("x-amz-security-token", "token".parse().unwrap());
        headers.insert("content-type", "application/x-www-form-urlencoded".parse().unwrap());
        headers
    }

    #[test]
    fn a_provider_s_own_signature_is_replaced_where_a_secret_key_is_sealed() {
        let url = Url::parse("https://ec2.us-east-1.amazonaws.com/").unwrap();
        let pairs = [("key-id", "AKIDEXAMPLE"), ("secret", "wJalrXUtnFEMI"), ("other", "wJalrXUtnFEMJ")];
        let seal = |name: &str| format!("{name}=aws-sigv4-secret-access-key@https://ec2.us-east-1.amazonaws.com");
        let credentials = Credentials::from_pairs(pairs).seal([seal("secret").parse().unwrap()]).unwrap();

        let mut headers = own_signature("key-id/20261128/us-east-1/ec2/aws4_request");
        let params = self_signed(&mut headers, &credentials, &url).unwrap().expect("signed again");
        assert_eq!(
            (&*params.access_key_id, &*params.secret_access_key, params.session_token.as_deref()),
            ("key-id", "secret", Some("token"))
        );
        assert_eq!((&*params.region, &*params.service), ("us-east-1", "ec2"));
        let left: Vec<&str> = headers.keys().map(|name| name.as_str()).collect();
        assert_eq!(left, ["content-type"], "the provider's signature is gone");

        let elsewhere = Url::parse("https://api.example/").unwrap();
        let mut headers = own_signature("key-id/20261128/us-east-1/ec2/aws4_request");
        assert!(self_signed(&mut headers, &credentials, &elsewhere).unwrap().is_none(), "nothing sealed there");
        assert_eq!(headers.len(), 4, "left as the provider signed it");
        let mut unsigned = HeaderMap::new();
        unsigned.insert("authorization", "Bearer abc".parse().unwrap());
        assert!(self_signed(&mut unsigned, &credentials, &url).unwrap().is_none(), "not signed that way");

        for credential in ["key-id/20261128/us-east-1/ec2", "key-id/20261128/us east/ec2/aws4_request"] {
            let mut headers = own_signature(credential);
            let err = self_signed(&mut headers, &credentials, &url).unwrap_err();
            assert!(matches!(err, SigningError::Unreadable(_) | SigningError::BadScope { .. }), "{credential}: {err}");
        }
        let two =
            Credentials::from_pairs(pairs).seal([seal("secret"), seal("other")].map(|s| s.parse().unwrap())).unwrap();
        let mut headers = own_signature("key-id/20261128/us-east-1/ec2/aws4_request");
        let err = self_signed(&mut headers, &two, &url).unwrap_err().to_string();
        assert!(err.contains("cannot tell which signs"), "{err}");
    }

    #[test]
    fn regions_and_services_are_names() {
        let credentials = Credentials::from_pairs([("key-id", "AKIDEXAMPLE"), ("secret", "wJalrXUtnFEMI")]);
        for (region, service) in
            [("us-east-1 x", "ec2"), ("us-east-1", "ec2\r\nx-evil: 1"), ("", "ec2"), ("us-east-1", &"s".repeat(65))]
        {
            let mut bad = params(None);
            bad.region = region.into();
            bad.service = service.into();
            assert!(
                matches!(sign_with(&bad, &credentials), Err(SigningError::BadScope { .. })),
                "{region:?} {service:?}"
            );
        }
    }
}
