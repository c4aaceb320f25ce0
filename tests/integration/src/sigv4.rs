//! Checks an AWS Signature Version 4 as a cloud API would, for the
//! servers the tests sign requests to.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use axum::http::{HeaderMap, Method, Uri};
use k8s_openapi::jiff;

/// The secret access key the echo server's `/sigv4` checks signatures
/// with.
pub const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

/// The access key ID of a request to `uri` whose body is empty, when it is
/// signed with `secret_access_key` (and the `x-amz-security-token` it
/// carries); why not otherwise.
pub fn verify(method: &Method, uri: &Uri, headers: &HeaderMap, secret_access_key: &str) -> Result<String, String> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let authorization = header("authorization").ok_or("no authorization")?;
    let fields = authorization.strip_prefix("AWS4-HMAC-SHA256 ").ok_or("not AWS4-HMAC-SHA256")?;
    let field =
        |name: &str| fields.split(',').find_map(|part| part.trim().strip_prefix(name)).ok_or(format!("no {name}"));
    let (credential, signed_headers, signature) =
        (field("Credential=")?, field("SignedHeaders=")?, field("Signature=")?);
    let scope: Vec<&str> = credential.split('/').collect();
    let [access_key_id, _, region, service, "aws4_request"] = scope[..] else {
        return Err(format!("bad credential {credential}"));
    };
    let date = header("x-amz-date").ok_or("no x-amz-date")?;
    let time = jiff::civil::DateTime::strptime("%Y%m%dT%H%M%SZ", date)
        .and_then(|time| time.to_zoned(jiff::tz::TimeZone::UTC))
        .map_err(|err| format!("bad x-amz-date {date}: {err}"))?;
    let identity = aws_credential_types::Credentials::new(
        access_key_id,
        secret_access_key,
        header("x-amz-security-token").map(str::to_owned),
        None,
        "test",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(SystemTime::from(time.timestamp()))
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| err.to_string())?
        .into();
    // The signer adds the host, date and token itself.
    let signed: Vec<(&str, &str)> = signed_headers
        .split(';')
        .filter(|name| !matches!(*name, "host" | "x-amz-date" | "x-amz-security-token"))
        .map(|name| (name, header(name).unwrap_or_default()))
        .collect();
    // The scheme is not signed; HTTP/2 carries the host in the URI.
    let host = header("host").or(uri.authority().map(|authority| authority.as_str())).ok_or("no host")?;
    let path = uri.path_and_query().map_or("/", |path| path.as_str());
    let url = format!("http://{host}{path}");
    let request = SignableRequest::new(method.as_str(), &url, signed.into_iter(), SignableBody::Bytes(b""))
        .map_err(|err| err.to_string())?;
    let (_, expected) = sign(request, &params).map_err(|err| err.to_string())?.into_parts();
    if expected == signature {
        Ok(access_key_id.to_owned())
    } else {
        Err(format!("signature {signature} is not {expected}"))
    }
}
