//! Calls to AWS Query APIs through the host: a form-encoded POST that the
//! host signs with Signature Version 4, an XML answer, and AWS's errors
//! turned into the contract's.

use std::time::Duration;

use serde::de::DeserializeOwned;
use wasm_ccm_sdk::Error;
use wasm_ccm_sdk::http::{AwsSigv4, Request, RequestAuth};

use crate::config::{Config, CredentialNames};
use crate::error_body;
use crate::query::Query;

/// How long the controllers wait before retrying a throttled call.
pub const THROTTLE_RETRY_DELAY: Duration = Duration::from_secs(5);

/// AWS error codes that mean "slow down".
const THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "RequestThrottledException",
    "RequestLimitExceeded",
    "EC2ThrottledException",
    "TooManyRequestsException",
    "BandwidthLimitExceeded",
];

/// An AWS API the provider calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// EC2, API version 2016-11-15.
    Ec2,
    /// Elastic Load Balancing v2, API version 2015-12-01.
    Elb,
}

impl Service {
    /// The name requests are signed for.
    fn signing_name(self) -> &'static str {
        match self {
            Service::Ec2 => "ec2",
            Service::Elb => "elasticloadbalancing",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Service::Ec2 => "2016-11-15",
            Service::Elb => "2015-12-01",
        }
    }
}

/// An error AWS answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsError {
    /// The action that failed.
    pub action: String,
    /// AWS's error code, such as `InvalidSubnet`.
    pub code: String,
    /// AWS's message.
    pub message: String,
}

/// Why a call failed: AWS's answer, which callers may expect, or anything
/// else (the host refused, the answer was unreadable), already an [`Error`].
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// AWS answered with an error.
    Aws(AwsError),
    /// The call failed otherwise.
    Failed(Error),
}

impl ApiError {
    /// Whether AWS answered with the error `code`.
    pub fn is(&self, code: &str) -> bool {
        matches!(self, ApiError::Aws(err) if err.code == code)
    }
}

impl From<ApiError> for Error {
    fn from(err: ApiError) -> Self {
        match err {
            ApiError::Aws(err) if THROTTLING_CODES.contains(&err.code.as_str()) => Error::retry(
                THROTTLE_RETRY_DELAY,
                format_args!("AWS throttled {}: {}: {}", err.action, err.code, err.message),
            ),
            ApiError::Aws(err) => Error::other(format_args!("AWS {}: {} ({})", err.code, err.message, err.action)),
            ApiError::Failed(err) => err,
        }
    }
}

/// The result of a call.
pub type ApiResult<T> = Result<T, ApiError>;

/// `Ok(None)` for the AWS error `code`, which means what was asked for is
/// not there; other errors as they are.
pub fn absent_on<T>(result: ApiResult<T>, code: &str) -> Result<Option<T>, Error> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.is(code) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Sends Query API calls for one region with the host signing them.
#[derive(Debug)]
pub struct Client {
    region: String,
    ec2_endpoint: String,
    elb_endpoint: String,
    credentials: CredentialNames,
}

impl Client {
    /// A client for the configured region and endpoints.
    pub fn new(config: &Config) -> Self {
        Client {
            region: config.region.clone(),
            ec2_endpoint: config.ec2_endpoint(),
            elb_endpoint: config.elb_endpoint(),
            credentials: config.credentials.clone(),
        }
    }

    /// The region.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// Calls `query` on `service` and parses the answer as `T`.
    pub fn call<T: DeserializeOwned>(&self, service: Service, query: &Query) -> ApiResult<T> {
        let body = self.send(service, query)?;
        quick_xml::de::from_str(&body).map_err(|err| {
            ApiError::Failed(Error::other(format_args!(
                "cannot read the answer to AWS {}: {err}; it starts with {:?}",
                query.action(),
                excerpt(&body)
            )))
        })
    }

    /// Calls `query` on `service`, expecting nothing of the answer but
    /// success.
    pub fn call_unit(&self, service: Service, query: &Query) -> ApiResult<()> {
        self.send(service, query).map(drop)
    }

    fn send(&self, service: Service, query: &Query) -> ApiResult<String> {
        let endpoint = match service {
            Service::Ec2 => &self.ec2_endpoint,
            Service::Elb => &self.elb_endpoint,
        };
        let auth = RequestAuth::AwsSigv4(AwsSigv4 {
            region: self.region.clone(),
            service: service.signing_name().to_owned(),
            access_key_id: self.credentials.access_key_id.clone(),
            secret_access_key: self.credentials.secret_access_key.clone(),
            session_token: self.credentials.session_token.clone(),
        });
        let response = Request::post(format!("{endpoint}/"))
            .header("content-type", "application/x-www-form-urlencoded; charset=utf-8")
            .body(query.encode(service.version()))
            .auth(auth)
            .send()
            .map_err(|err| ApiError::Failed(Error::from(err)))?;
        let body = response.text();
        if response.is_success() {
            return Ok(body);
        }
        match error_body::parse(&body) {
            Some((code, message)) => Err(ApiError::Aws(AwsError { action: query.action().to_owned(), code, message })),
            None if response.status() == 429 => Err(ApiError::Aws(AwsError {
                action: query.action().to_owned(),
                code: "Throttling".to_owned(),
                message: "HTTP 429 Too Many Requests".to_owned(),
            })),
            None => Err(ApiError::Failed(Error::other(format_args!(
                "AWS {} failed with HTTP {} and no AWS error in the answer, which starts with {:?}",
                query.action(),
                response.status(),
                excerpt(&body)
            )))),
        }
    }
}

/// The start of a body for an error message, white space collapsed.
fn excerpt(body: &str) -> String {
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(200) {
        Some((end, _)) => format!("{}…", &collapsed[..end]),
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use wasm_ccm_sdk::native;

    use super::*;

    fn aws(code: &str) -> ApiError {
        ApiError::Aws(AwsError { action: "DescribeInstances".into(), code: code.into(), message: "slow down".into() })
    }

    #[test]
    fn throttling_becomes_a_retry() {
        for code in ["Throttling", "RequestLimitExceeded", "ThrottlingException"] {
            let Error::Retry(retry) = Error::from(aws(code)) else { panic!("{code} is not a retry") };
            assert_eq!(retry.delay_ms, 5000);
            assert!(retry.message.contains(code), "{}", retry.message);
        }
    }

    #[test]
    fn other_codes_keep_code_and_message() {
        let err = ApiError::Aws(AwsError {
            action: "CreateLoadBalancer".into(),
            code: "InvalidSubnet".into(),
            message: "subnet-1 is not in the VPC".into(),
        });
        assert!(err.is("InvalidSubnet") && !err.is("Throttling"));
        assert_eq!(
            Error::from(err),
            Error::other("AWS InvalidSubnet: subnet-1 is not in the VPC (CreateLoadBalancer)")
        );
    }

    #[test]
    fn absent_on_maps_only_its_code() {
        assert_eq!(absent_on::<()>(Err(aws("LoadBalancerNotFound")), "LoadBalancerNotFound"), Ok(None));
        assert_eq!(absent_on(Ok(1), "LoadBalancerNotFound"), Ok(Some(1)));
        assert!(matches!(absent_on::<()>(Err(aws("AccessDenied")), "LoadBalancerNotFound"), Err(Error::Other(_))));
    }

    /// Answers canned responses in order and records what the provider did.
    #[derive(Default)]
    struct FakeHost {
        answers: Mutex<VecDeque<(u16, &'static str)>>,
        requests: Mutex<Vec<native::Request>>,
        credentials_read: Mutex<Vec<String>>,
    }

    impl native::Host for FakeHost {
        fn send(&self, request: &native::Request) -> Result<native::Response, native::HttpError> {
            self.requests.lock().unwrap().push(request.clone());
            let (status, body) = self.answers.lock().unwrap().pop_front().expect("an answer for every request");
            Ok(native::Response { status, headers: Vec::new(), body: body.as_bytes().to_vec() })
        }

        fn credential(&self, name: &str) -> Result<Vec<u8>, native::CredentialError> {
            self.credentials_read.lock().unwrap().push(name.to_owned());
            Ok(b"value".to_vec())
        }
    }

    /// The only test that sends requests: the native host is global.
    #[test]
    fn sends_signed_form_posts_and_reads_answers_and_errors() {
        let host = Arc::new(FakeHost::default());
        host.answers.lock().unwrap().extend([
            (200, "<R><DescribeLoadBalancersResult><LoadBalancers/></DescribeLoadBalancersResult></R>"),
            (
                400,
                "<ErrorResponse><Error><Code>Throttling</Code><Message>Rate exceeded</Message></Error></ErrorResponse>",
            ),
            (503, "<html><body><h1>503 Service Unavailable</h1></body></html>"),
            (200, "<R><Unclosed>"),
        ]);
        native::set_host(host.clone());
        let config = Config::parse(
            br#"{"region": "eu-west-1", "endpoints": {"elasticloadbalancing": "http://elb.test/"},
                "credentials": {"sessionToken": "session-token"}}"#,
        )
        .unwrap();
        let client = Client::new(&config);
        let query = Query::new("DescribeLoadBalancers").param("Names.member.1", "a1");

        client.call_unit(Service::Elb, &query).unwrap();
        let requests = host.requests.lock().unwrap().clone();
        let request = &requests[0];
        assert_eq!(request.method, native::Method::Post);
        assert_eq!(request.url, "http://elb.test/");
        assert_eq!(request.body, b"Action=DescribeLoadBalancers&Version=2015-12-01&Names.member.1=a1");
        assert!(
            request
                .headers
                .contains(&("content-type".to_owned(), "application/x-www-form-urlencoded; charset=utf-8".to_owned()))
        );
        assert_eq!(
            request.auth,
            Some(RequestAuth::AwsSigv4(AwsSigv4 {
                region: "eu-west-1".into(),
                service: "elasticloadbalancing".into(),
                access_key_id: "access-key-id".into(),
                secret_access_key: "secret-access-key".into(),
                session_token: Some("session-token".into()),
            }))
        );

        let throttled = client.call_unit(Service::Elb, &query).unwrap_err();
        assert!(throttled.is("Throttling"), "{throttled:?}");
        let Error::Other(html) = Error::from(client.call_unit(Service::Elb, &query).unwrap_err()) else {
            panic!("an HTML page is not an AWS error")
        };
        assert!(html.contains("HTTP 503") && html.contains("503 Service Unavailable"), "{html}");
        #[derive(Debug, serde::Deserialize)]
        struct Answer {
            #[serde(rename = "Unclosed")]
            _unclosed: String,
        }
        let Error::Other(malformed) = Error::from(client.call::<Answer>(Service::Elb, &query).unwrap_err()) else {
            panic!("malformed XML is an error")
        };
        assert!(malformed.contains("cannot read the answer to AWS DescribeLoadBalancers"), "{malformed}");
        assert!(host.credentials_read.lock().unwrap().is_empty(), "the provider reads no credential");
    }

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        assert_eq!(excerpt("<html>\n  <body>  oops </body>\n</html>"), "<html> <body> oops </body> </html>");
        let long = "é".repeat(500);
        assert_eq!(excerpt(&long).chars().count(), 201);
    }
}
