//! The AWS provider's configuration file, in JSON: the region, the endpoints,
//! where load balancers and routes go, and the names of the credentials.

use serde::Deserialize;
use wasm_ccm_sdk::Error;

/// The configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// The AWS region, such as `eu-west-1`: where the endpoints are and what
    /// requests are signed for.
    pub region: String,
    /// Endpoint URLs that replace the regional defaults.
    #[serde(default)]
    pub endpoints: Endpoints,
    /// The cluster's VPC. Without it, the VPC of the load balancer's subnets.
    pub vpc_id: Option<String>,
    /// Subnets for load balancers. Without them, the subnets tagged for the
    /// cluster, one per availability zone.
    pub subnets: Option<Vec<String>>,
    /// The route table for pod routes. Without it, the one tagged for the
    /// cluster.
    pub route_table_id: Option<String>,
    /// The names of the credentials the host signs requests with.
    #[serde(default)]
    pub credentials: CredentialNames,
}

/// Endpoint URLs by service; unset ones are the region's public endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoints {
    /// The EC2 endpoint.
    pub ec2: Option<String>,
    /// The Elastic Load Balancing (v2) endpoint.
    pub elasticloadbalancing: Option<String>,
}

/// The keys of the provider's Secret that hold its AWS credentials.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialNames {
    /// The access key ID.
    #[serde(default = "default_access_key_id")]
    pub access_key_id: String,
    /// The secret access key.
    #[serde(default = "default_secret_access_key")]
    pub secret_access_key: String,
    /// The session token of temporary credentials; none unless named.
    #[serde(default)]
    pub session_token: Option<String>,
}

impl Default for CredentialNames {
    fn default() -> Self {
        CredentialNames {
            access_key_id: default_access_key_id(),
            secret_access_key: default_secret_access_key(),
            session_token: None,
        }
    }
}

fn default_access_key_id() -> String {
    "access-key-id".to_owned()
}

fn default_secret_access_key() -> String {
    "secret-access-key".to_owned()
}

impl Config {
    /// Parses and checks the configuration.
    ///
    /// # Errors
    /// When it is not valid JSON of this shape, or a value is unusable.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let invalid = |why: &dyn std::fmt::Display| Error::other(format_args!("invalid AWS provider config: {why}"));
        let config: Config = serde_json::from_slice(bytes).map_err(|err| invalid(&err))?;
        if config.region.is_empty() || !config.region.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(invalid(&format_args!("region {:?} is not an AWS region", config.region)));
        }
        for url in [&config.endpoints.ec2, &config.endpoints.elasticloadbalancing].into_iter().flatten() {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(invalid(&format_args!("endpoint {url:?} is not an http or https URL")));
            }
        }
        if config.subnets.as_ref().is_some_and(Vec::is_empty) {
            return Err(invalid(&"subnets is empty; leave it out to find the cluster's subnets by tag"));
        }
        Ok(config)
    }

    /// The EC2 endpoint: configured, or `https://ec2.<region>.amazonaws.com`.
    pub fn ec2_endpoint(&self) -> String {
        endpoint(self.endpoints.ec2.as_deref(), "ec2", &self.region)
    }

    /// The Elastic Load Balancing endpoint: configured, or
    /// `https://elasticloadbalancing.<region>.amazonaws.com`.
    pub fn elb_endpoint(&self) -> String {
        endpoint(self.endpoints.elasticloadbalancing.as_deref(), "elasticloadbalancing", &self.region)
    }
}

fn endpoint(configured: Option<&str>, service: &str, region: &str) -> String {
    match configured {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!("https://{service}.{region}.amazonaws.com"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_region() {
        let config = Config::parse(br#"{"region": "eu-west-1"}"#).unwrap();
        assert_eq!(config.ec2_endpoint(), "https://ec2.eu-west-1.amazonaws.com");
        assert_eq!(config.elb_endpoint(), "https://elasticloadbalancing.eu-west-1.amazonaws.com");
        assert_eq!(config.credentials, CredentialNames::default());
        assert_eq!(config.credentials.session_token, None);
        assert_eq!((config.vpc_id, config.subnets, config.route_table_id), (None, None, None));
    }

    #[test]
    fn reads_every_key() {
        let config = Config::parse(
            br#"{
                "region": "us-east-2",
                "endpoints": {"ec2": "http://127.0.0.1:5000/", "elasticloadbalancing": "http://127.0.0.1:5000"},
                "vpcId": "vpc-1",
                "subnets": ["subnet-a", "subnet-b"],
                "routeTableId": "rtb-1",
                "credentials": {"accessKeyId": "id", "secretAccessKey": "secret", "sessionToken": "token"}
            }"#,
        )
        .unwrap();
        assert_eq!(config.ec2_endpoint(), "http://127.0.0.1:5000");
        assert_eq!(config.elb_endpoint(), "http://127.0.0.1:5000");
        assert_eq!(config.vpc_id.as_deref(), Some("vpc-1"));
        assert_eq!(config.subnets.unwrap(), ["subnet-a", "subnet-b"]);
        assert_eq!(config.route_table_id.as_deref(), Some("rtb-1"));
        assert_eq!(config.credentials.access_key_id, "id");
        assert_eq!(config.credentials.secret_access_key, "secret");
        assert_eq!(config.credentials.session_token.as_deref(), Some("token"));
    }

    #[test]
    fn refuses_what_cannot_work() {
        for (config, why) in [
            (&br#"{}"#[..], "missing field `region`"),
            (br#"{"region": "eu west"}"#, "not an AWS region"),
            (br#"{"region": "eu-west-1", "endpoints": {"ec2": "ftp://x"}}"#, "not an http or https URL"),
            (br#"{"region": "eu-west-1", "subnets": []}"#, "subnets is empty"),
            (br#"{"region": "eu-west-1", "zone": "a"}"#, "unknown field `zone`"),
        ] {
            let Err(Error::Other(message)) = Config::parse(config) else { panic!("accepted {config:?}") };
            assert!(message.contains(why), "{message}");
        }
    }
}
