//! The Elastic Load Balancing v2 API as the provider uses it: network load
//! balancers, their listeners, target groups and targets, and tags.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use wasm_ccm_sdk::Error;

use crate::api::{ApiError, ApiResult, Client, Service, absent_on};
use crate::query::Query;
use crate::xml::{Answer, Members};

/// Targets per RegisterTargets or DeregisterTargets request.
const TARGETS_PER_REQUEST: usize = 100;
/// How long to wait before retrying when AWS still counts a deleted
/// listener as using its target group.
const IN_USE_RETRY_DELAY: Duration = Duration::from_secs(5);
/// Resources per DescribeTags request.
const ARNS_PER_DESCRIBE_TAGS: usize = 20;

/// A load balancer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LoadBalancer {
    /// Its ARN.
    pub load_balancer_arn: String,
    /// `internet-facing` or `internal`.
    #[serde(default)]
    pub scheme: String,
    /// The name clients resolve.
    #[serde(rename = "DNSName", default)]
    pub dns_name: String,
    /// Its VPC.
    #[serde(default)]
    pub vpc_id: String,
}

/// A target group.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TargetGroup {
    /// Its ARN.
    pub target_group_arn: String,
    /// Its name.
    pub target_group_name: String,
    /// The port targets receive traffic on: the Service port's node port.
    #[serde(default)]
    pub port: u16,
}

/// A listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Listener {
    /// Its ARN.
    pub listener_arn: String,
    /// The port it listens on.
    pub port: u16,
    /// `TCP`, `UDP`, …
    pub protocol: String,
    /// What it does with connections.
    #[serde(default)]
    pub default_actions: Members<Action>,
}

impl Listener {
    /// The target group it forwards to, if it forwards.
    pub fn target_group_arn(&self) -> Option<&str> {
        self.default_actions.members.iter().find_map(|action| action.target_group_arn.as_deref())
    }
}

/// A listener's action.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Action {
    /// The target group of a `forward` action.
    pub target_group_arn: Option<String>,
}

/// A registered target and its health.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TargetHealthDescription {
    /// The target.
    pub target: Target,
    /// Its health.
    pub target_health: Option<TargetHealth>,
}

/// An instance and port of a target group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Target {
    /// The instance ID.
    pub id: String,
    /// The port.
    pub port: u16,
}

/// A target's health.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TargetHealth {
    /// `healthy`, `draining`, …
    #[serde(default)]
    pub state: String,
}

/// What [`Elb::create_target_group`] creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetGroupSpec {
    /// Its name.
    pub name: String,
    /// `TCP` or `UDP`.
    pub protocol: &'static str,
    /// The node port.
    pub port: u16,
    /// The VPC of the instances.
    pub vpc_id: String,
    /// How targets are checked.
    pub health_check: HealthCheck,
}

/// A target group's health check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    /// `TCP` or `HTTP`.
    pub protocol: &'static str,
    /// `traffic-port` or a port number.
    pub port: String,
    /// The HTTP path.
    pub path: Option<&'static str>,
    /// Seconds between checks.
    pub interval_seconds: u32,
    /// Checks in a row that make a target healthy, or unhealthy.
    pub threshold: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct LoadBalancers {
    #[serde(default)]
    load_balancers: Members<LoadBalancer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TargetGroups {
    #[serde(default)]
    target_groups: Members<TargetGroup>,
    next_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Listeners {
    #[serde(default)]
    listeners: Members<Listener>,
    next_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TargetHealthDescriptions {
    #[serde(default)]
    target_health_descriptions: Members<TargetHealthDescription>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TagDescriptions {
    #[serde(default)]
    tag_descriptions: Members<TagDescription>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TagDescription {
    resource_arn: String,
    #[serde(default)]
    tags: Members<Tag>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Tag {
    key: String,
    #[serde(default)]
    value: String,
}

/// ELBv2 through a [`Client`].
pub struct Elb<'a>(pub &'a Client);

impl Elb<'_> {
    fn call<T: DeserializeOwned>(&self, query: &Query) -> ApiResult<T> {
        self.0.call::<Answer<T>>(Service::Elb, query).map(|answer| answer.0)
    }

    fn call_unit(&self, query: &Query) -> ApiResult<()> {
        self.0.call_unit(Service::Elb, query)
    }

    /// The load balancer `name`, if there is one.
    pub fn load_balancer(&self, name: &str) -> Result<Option<LoadBalancer>, Error> {
        let query = Query::new("DescribeLoadBalancers").param("Names.member.1", name);
        let found = absent_on(self.call::<LoadBalancers>(&query), "LoadBalancerNotFound")?;
        Ok(found.and_then(|answer| answer.load_balancers.members.into_iter().next()))
    }

    /// Creates a network load balancer.
    pub fn create_load_balancer(
        &self,
        name: &str,
        scheme: &str,
        subnets: &[String],
        tags: &[(String, String)],
    ) -> Result<LoadBalancer, Error> {
        let query = Query::new("CreateLoadBalancer")
            .param("Name", name)
            .param("Type", "network")
            .param("Scheme", scheme)
            .param("IpAddressType", "ipv4")
            .list("Subnets.member", subnets.iter().map(String::as_str))
            .tags(tags.iter().map(|(key, value)| (key.as_str(), value.as_str())));
        let answer: LoadBalancers = self.call(&query)?;
        answer.load_balancers.members.into_iter().next().ok_or_else(|| no_result("CreateLoadBalancer"))
    }

    /// Deletes a load balancer; its listeners go with it.
    pub fn delete_load_balancer(&self, arn: &str) -> Result<(), Error> {
        let query = Query::new("DeleteLoadBalancer").param("LoadBalancerArn", arn);
        absent_on(self.call_unit(&query), "LoadBalancerNotFound").map(drop)
    }

    /// The listeners of a load balancer.
    pub fn listeners(&self, load_balancer_arn: &str) -> Result<Vec<Listener>, Error> {
        let mut listeners = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let query = Query::new("DescribeListeners")
                .param("LoadBalancerArn", load_balancer_arn)
                .optional("Marker", marker.take());
            let answer: Listeners = self.call(&query)?;
            listeners.extend(answer.listeners.members);
            marker = answer.next_marker.filter(|marker| !marker.is_empty());
            if marker.is_none() {
                return Ok(listeners);
            }
        }
    }

    /// Creates a listener on `port` forwarding to a target group.
    pub fn create_listener(
        &self,
        load_balancer_arn: &str,
        protocol: &str,
        port: u16,
        target_group_arn: &str,
        tags: &[(String, String)],
    ) -> Result<(), Error> {
        let query = Query::new("CreateListener")
            .param("LoadBalancerArn", load_balancer_arn)
            .param("Protocol", protocol)
            .param("Port", port.to_string())
            .param("DefaultActions.member.1.Type", "forward")
            .param("DefaultActions.member.1.TargetGroupArn", target_group_arn)
            .tags(tags.iter().map(|(key, value)| (key.as_str(), value.as_str())));
        Ok(self.call_unit(&query)?)
    }

    /// Points a listener at another target group.
    pub fn forward_listener(&self, listener_arn: &str, target_group_arn: &str) -> Result<(), Error> {
        let query = Query::new("ModifyListener")
            .param("ListenerArn", listener_arn)
            .param("DefaultActions.member.1.Type", "forward")
            .param("DefaultActions.member.1.TargetGroupArn", target_group_arn);
        Ok(self.call_unit(&query)?)
    }

    /// Deletes a listener; done when it is already gone.
    pub fn delete_listener(&self, arn: &str) -> Result<(), Error> {
        let query = Query::new("DeleteListener").param("ListenerArn", arn);
        absent_on(self.call_unit(&query), "ListenerNotFound").map(drop)
    }

    /// The target groups `arns` that exist: one request, or one per group
    /// when some are gone (AWS then fails the whole request).
    pub fn target_groups(&self, arns: &[&str]) -> Result<Vec<TargetGroup>, Error> {
        let describe = |arns: &[&str]| {
            let query = Query::new("DescribeTargetGroups").list("TargetGroupArns.member", arns.iter().copied());
            absent_on(self.call::<TargetGroups>(&query), "TargetGroupNotFound")
        };
        if arns.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(answer) = describe(arns)? {
            return Ok(answer.target_groups.members);
        }
        let mut groups = Vec::new();
        for arn in arns.iter().filter(|_| arns.len() > 1) {
            if let Some(answer) = describe(std::slice::from_ref(arn))? {
                groups.extend(answer.target_groups.members);
            }
        }
        Ok(groups)
    }

    /// Every target group of the account and region.
    pub fn all_target_groups(&self) -> Result<Vec<TargetGroup>, Error> {
        let mut groups = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let query = Query::new("DescribeTargetGroups").param("PageSize", "400").optional("Marker", marker.take());
            let answer: TargetGroups = self.call(&query)?;
            groups.extend(answer.target_groups.members);
            marker = answer.next_marker.filter(|marker| !marker.is_empty());
            if marker.is_none() {
                return Ok(groups);
            }
        }
    }

    fn target_group_named(&self, name: &str) -> Result<Option<TargetGroup>, Error> {
        let query = Query::new("DescribeTargetGroups").param("Names.member.1", name);
        let found = absent_on(self.call::<TargetGroups>(&query), "TargetGroupNotFound")?;
        Ok(found.and_then(|answer| answer.target_groups.members.into_iter().next()))
    }

    /// Creates an instance target group, or finds the one of that name.
    pub fn create_target_group(&self, spec: &TargetGroupSpec, tags: &[(String, String)]) -> Result<TargetGroup, Error> {
        let check = &spec.health_check;
        let query = Query::new("CreateTargetGroup")
            .param("Name", &spec.name)
            .param("Protocol", spec.protocol)
            .param("Port", spec.port.to_string())
            .param("VpcId", &spec.vpc_id)
            .param("TargetType", "instance")
            .param("HealthCheckProtocol", check.protocol)
            .param("HealthCheckPort", &check.port)
            .optional("HealthCheckPath", check.path)
            .param("HealthCheckIntervalSeconds", check.interval_seconds.to_string())
            .param("HealthyThresholdCount", check.threshold.to_string())
            .param("UnhealthyThresholdCount", check.threshold.to_string())
            .tags(tags.iter().map(|(key, value)| (key.as_str(), value.as_str())));
        match self.call::<TargetGroups>(&query) {
            Ok(answer) => answer.target_groups.members.into_iter().next().ok_or_else(|| no_result("CreateTargetGroup")),
            // AWS answers an identical request with the existing group; some
            // implementations refuse it instead.
            Err(err) if err.is("DuplicateTargetGroupName") => {
                self.target_group_named(&spec.name)?.ok_or_else(|| Error::from(err))
            }
            Err(err) => Err(err.into()),
        }
    }

    /// Deletes a target group; done when it is already gone, and a retry
    /// while AWS still counts it as in use by a deleted listener.
    pub fn delete_target_group(&self, arn: &str) -> Result<(), Error> {
        let query = Query::new("DeleteTargetGroup").param("TargetGroupArn", arn);
        match self.call_unit(&query) {
            Err(ApiError::Aws(err)) if err.code == "ResourceInUse" => Err(Error::retry(
                IN_USE_RETRY_DELAY,
                format_args!("target group {arn} is still in use: {}", err.message),
            )),
            result => absent_on(result, "TargetGroupNotFound").map(drop),
        }
    }

    /// The registered targets of a target group, with their health.
    pub fn targets(&self, target_group_arn: &str) -> Result<Vec<TargetHealthDescription>, Error> {
        let query = Query::new("DescribeTargetHealth").param("TargetGroupArn", target_group_arn);
        let answer: TargetHealthDescriptions = self.call(&query)?;
        Ok(answer.target_health_descriptions.members)
    }

    /// Registers `targets`, or deregisters them.
    pub fn set_registered(&self, target_group_arn: &str, targets: &[Target], registered: bool) -> Result<(), Error> {
        let action = if registered { "RegisterTargets" } else { "DeregisterTargets" };
        for chunk in targets.chunks(TARGETS_PER_REQUEST) {
            let mut query = Query::new(action).param("TargetGroupArn", target_group_arn);
            for (index, target) in chunk.iter().enumerate() {
                let prefix = format!("Targets.member.{}", index + 1);
                query = query
                    .param(format!("{prefix}.Id"), &target.id)
                    .param(format!("{prefix}.Port"), target.port.to_string());
            }
            self.call_unit(&query)?;
        }
        Ok(())
    }

    /// The tags of `arns`, by ARN.
    pub fn tags(&self, arns: &[&str]) -> Result<BTreeMap<String, BTreeMap<String, String>>, Error> {
        let mut tags = BTreeMap::new();
        for chunk in arns.chunks(ARNS_PER_DESCRIBE_TAGS) {
            let query = Query::new("DescribeTags").list("ResourceArns.member", chunk.iter().copied());
            let answer: TagDescriptions = self.call(&query)?;
            for description in answer.tag_descriptions.members {
                let resource_tags = description.tags.members.into_iter().map(|tag| (tag.key, tag.value)).collect();
                tags.insert(description.resource_arn, resource_tags);
            }
        }
        Ok(tags)
    }
}

fn no_result(action: &str) -> Error {
    Error::other(format_args!("AWS {action} answered without the object it created"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: DeserializeOwned>(xml: &str) -> T {
        quick_xml::de::from_str::<Answer<T>>(xml).unwrap().0
    }

    #[test]
    fn reads_load_balancers() {
        let answer: LoadBalancers = parse(
            r#"<DescribeLoadBalancersResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">
  <DescribeLoadBalancersResult>
    <LoadBalancers>
      <member>
        <LoadBalancerArn>arn:lb</LoadBalancerArn>
        <Scheme>internal</Scheme>
        <LoadBalancerName>a1</LoadBalancerName>
        <DNSName>a1-123.elb.eu-west-1.amazonaws.com</DNSName>
        <VpcId>vpc-1</VpcId>
        <AvailabilityZones><member><SubnetId>subnet-1</SubnetId><ZoneName>eu-west-1a</ZoneName></member></AvailabilityZones>
        <Type>network</Type>
      </member>
    </LoadBalancers>
  </DescribeLoadBalancersResult>
  <ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>
</DescribeLoadBalancersResponse>"#,
        );
        let lb = &answer.load_balancers.members[0];
        assert_eq!(lb.load_balancer_arn, "arn:lb");
        assert_eq!(lb.scheme, "internal");
        assert_eq!(lb.dns_name, "a1-123.elb.eu-west-1.amazonaws.com");
        assert_eq!(lb.vpc_id, "vpc-1");
    }

    #[test]
    fn reads_listeners_target_groups_targets_and_tags() {
        let listeners: Listeners = parse(
            "<R><ResponseMetadata/><DescribeListenersResult><Listeners><member><ListenerArn>arn:l</ListenerArn><Port>80</Port>\
             <Protocol>TCP</Protocol><DefaultActions><member><Type>forward</Type><TargetGroupArn>arn:tg</TargetGroupArn>\
             </member></DefaultActions></member></Listeners><NextMarker>m</NextMarker></DescribeListenersResult></R>",
        );
        assert_eq!(listeners.next_marker.as_deref(), Some("m"));
        let listener = &listeners.listeners.members[0];
        assert_eq!((listener.port, listener.protocol.as_str()), (80, "TCP"));
        assert_eq!(listener.target_group_arn(), Some("arn:tg"));

        let groups: TargetGroups = parse(
            "<R><DescribeTargetGroupsResult><TargetGroups><member><TargetGroupArn>arn:tg</TargetGroupArn>\
             <TargetGroupName>k8s-ns-web-0123456789</TargetGroupName><Port>30080</Port><LoadBalancerArns>\
             <member>arn:lb</member></LoadBalancerArns></member></TargetGroups></DescribeTargetGroupsResult></R>",
        );
        assert_eq!(groups.target_groups.members[0].port, 30080);

        let health: TargetHealthDescriptions = parse(
            "<R><DescribeTargetHealthResult><TargetHealthDescriptions><member><Target><Id>i-1</Id><Port>30080</Port>\
             </Target><TargetHealth><State>draining</State></TargetHealth></member></TargetHealthDescriptions>\
             </DescribeTargetHealthResult></R>",
        );
        let description = &health.target_health_descriptions.members[0];
        assert_eq!(description.target, Target { id: "i-1".into(), port: 30080 });
        assert_eq!(description.target_health.as_ref().unwrap().state, "draining");

        let tags: TagDescriptions = parse(
            "<R><DescribeTagsResult><TagDescriptions><member><ResourceArn>arn:tg</ResourceArn><Tags><member>\
             <Key>kubernetes.io/service-name</Key><Value>shop/web</Value></member></Tags></member></TagDescriptions>\
             </DescribeTagsResult></R>",
        );
        let description = &tags.tag_descriptions.members[0];
        assert_eq!(description.resource_arn, "arn:tg");
        assert_eq!(description.tags.members[0].value, "shop/web");
    }

    #[test]
    fn empty_lists_and_missing_results() {
        let answer: LoadBalancers =
            parse("<R><DescribeLoadBalancersResult><LoadBalancers/></DescribeLoadBalancersResult></R>");
        assert!(answer.load_balancers.members.is_empty());
        assert!(quick_xml::de::from_str::<Answer<LoadBalancers>>("<R><ResponseMetadata/></R>").is_err());
    }
}
