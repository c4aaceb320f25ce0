//! AWS error answers: EC2's `<Response><Errors><Error>`, ELBv2's
//! `<ErrorResponse><Error>`, and a bare `<Error>`.

use serde::Deserialize;

#[derive(Deserialize)]
struct Body {
    #[serde(rename = "Errors")]
    errors: Option<Errors>,
    #[serde(rename = "Error")]
    error: Option<Detail>,
    #[serde(rename = "Code")]
    code: Option<String>,
    #[serde(rename = "Message")]
    message: Option<String>,
}

#[derive(Deserialize)]
struct Errors {
    #[serde(rename = "Error", default)]
    error: Vec<Detail>,
}

#[derive(Deserialize)]
struct Detail {
    #[serde(rename = "Code")]
    code: Option<String>,
    #[serde(rename = "Message")]
    message: Option<String>,
}

/// The code and message of an AWS error answer; `None` when `body` is not
/// one (an HTML page from a proxy, an empty body, broken XML).
pub fn parse(body: &str) -> Option<(String, String)> {
    let body: Body = quick_xml::de::from_str(body).ok()?;
    let first = body.errors.and_then(|errors| errors.error.into_iter().next());
    let (code, message) = match (first.or(body.error), body.code) {
        (Some(detail), _) => (detail.code, detail.message),
        (None, Some(code)) => (Some(code), body.message),
        (None, None) => return None,
    };
    let code = code.filter(|code| !code.trim().is_empty())?;
    Some((code.trim().to_owned(), message.unwrap_or_default().trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ec2_errors() {
        let body = r#"<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>InvalidInstanceID.NotFound</Code><Message>The instance ID 'i-1' does not exist</Message></Error></Errors><RequestID>r</RequestID></Response>"#;
        assert_eq!(
            parse(body),
            Some(("InvalidInstanceID.NotFound".into(), "The instance ID 'i-1' does not exist".into()))
        );
    }

    #[test]
    fn reads_elbv2_errors() {
        let body = r#"<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>"#;
        assert_eq!(parse(body), Some(("Throttling".into(), "Rate exceeded".into())));
    }

    #[test]
    fn reads_bare_errors_without_a_message() {
        assert_eq!(parse("<Error><Code>InternalError</Code></Error>"), Some(("InternalError".into(), String::new())));
    }

    #[test]
    fn anything_else_is_not_an_aws_error() {
        for body in [
            "",
            "<html><head><title>502 Bad Gateway</title></head><body><center>nginx</center><br></body></html>",
            "<Response><Errors><Error><Code>Unfinished",
            "<Response><Errors/></Response>",
            "<Error><Code> </Code></Error>",
            "upstream connect error",
        ] {
            assert_eq!(parse(body), None, "{body}");
        }
    }
}
