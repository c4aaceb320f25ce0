//! The EC2 API as the provider uses it: instances, subnets, route tables
//! and routes.

use serde::Deserialize;
use wasm_ccm_sdk::Error;

use crate::api::{ApiResult, Client, Service};
use crate::query::Query;
use crate::xml::Items;

/// Values per EC2 filter in one request.
pub const FILTER_VALUES: usize = 200;
/// Instances per page of DescribeInstances, the most EC2 gives.
pub const INSTANCES_PER_PAGE: usize = 1000;

/// Instance states in which an instance can still serve a Node.
pub const ALIVE_STATES: [&str; 5] = ["pending", "running", "shutting-down", "stopping", "stopped"];

/// A tag, by its key.
#[derive(Debug, Clone, Deserialize)]
pub struct Tag {
    /// Its key.
    pub key: String,
}

/// An instance, as much as the provider reads of it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Instance {
    /// `i-…`.
    pub instance_id: String,
    /// Such as `m5.large`.
    #[serde(default)]
    pub instance_type: String,
    /// Its state.
    pub instance_state: InstanceState,
    /// Where it runs.
    #[serde(default)]
    pub placement: Placement,
    /// Its private DNS name, which is its Node's name.
    pub private_dns_name: Option<String>,
    /// Its public DNS name.
    pub dns_name: Option<String>,
    /// Its primary private IPv4 address.
    pub private_ip_address: Option<String>,
    /// Its public IPv4 address.
    pub ip_address: Option<String>,
    /// Its network interfaces.
    #[serde(default)]
    pub network_interface_set: Items<NetworkInterface>,
}

/// An instance's state.
#[derive(Debug, Clone, Deserialize)]
pub struct InstanceState {
    /// `pending`, `running`, `shutting-down`, `terminated`, `stopping` or `stopped`.
    pub name: String,
}

/// An instance's placement.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// Its availability zone, such as `eu-west-1a`.
    #[serde(default)]
    pub availability_zone: String,
}

/// A network interface of an instance.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterface {
    /// `in-use` when attached.
    #[serde(default)]
    pub status: String,
    /// How it is attached.
    pub attachment: Option<Attachment>,
    /// Its private addresses.
    #[serde(default)]
    pub private_ip_addresses_set: Items<PrivateIp>,
}

/// How a network interface is attached.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// 0 for the primary interface.
    #[serde(default)]
    pub device_index: u32,
}

/// A private address of a network interface.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivateIp {
    /// The address.
    #[serde(default)]
    pub private_ip_address: String,
    /// Whether it is the interface's primary address.
    #[serde(default)]
    pub primary: bool,
}

impl Instance {
    /// Its private DNS name, if it has one.
    pub fn node_name(&self) -> Option<&str> {
        self.private_dns_name.as_deref().filter(|name| !name.is_empty())
    }

    /// Whether it is `state`.
    pub fn is(&self, state: &str) -> bool {
        self.instance_state.name == state
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DescribeInstances {
    #[serde(default)]
    reservation_set: Items<Reservation>,
    next_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reservation {
    #[serde(default)]
    instances_set: Items<Instance>,
}

/// A subnet.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subnet {
    /// `subnet-…`.
    pub subnet_id: String,
    /// Its availability zone.
    #[serde(default)]
    pub availability_zone: String,
    /// Its tags.
    #[serde(default)]
    pub tag_set: Items<Tag>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DescribeSubnets {
    #[serde(default)]
    subnet_set: Items<Subnet>,
    next_token: Option<String>,
}

/// A route table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTable {
    /// `rtb-…`.
    pub route_table_id: String,
    /// Its routes.
    #[serde(default)]
    pub route_set: Items<Route>,
}

/// A route of a route table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// The IPv4 destination.
    pub destination_cidr_block: Option<String>,
    /// The instance it sends traffic to.
    pub instance_id: Option<String>,
    /// `active` or `blackhole`.
    #[serde(default)]
    pub state: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DescribeRouteTables {
    #[serde(default)]
    route_table_set: Items<RouteTable>,
    next_token: Option<String>,
}

/// EC2 through a [`Client`].
pub struct Ec2<'a>(pub &'a Client);

impl Ec2<'_> {
    fn call<T: serde::de::DeserializeOwned>(&self, query: &Query) -> ApiResult<T> {
        self.0.call(Service::Ec2, query)
    }

    /// The instance `id`, whatever its state; `InstanceNotFound` when EC2
    /// does not know it.
    pub fn instance(&self, id: &str) -> Result<Instance, Error> {
        let query = Query::new("DescribeInstances").param("InstanceId.1", id);
        match self.call::<DescribeInstances>(&query) {
            Ok(answer) => answer.instances().find(|instance| instance.instance_id == id).ok_or(Error::InstanceNotFound),
            Err(err) if err.is("InvalidInstanceID.NotFound") => Err(Error::InstanceNotFound),
            Err(err) => Err(err.into()),
        }
    }

    /// The instances matching the filter `name` = any of `values` and the
    /// instance states `states`; several requests when there are many values.
    /// An empty `states` matches every state.
    pub fn instances_where(&self, name: &str, values: &[&str], states: &[&str]) -> Result<Vec<Instance>, Error> {
        let mut instances = Vec::new();
        for chunk in values.chunks(FILTER_VALUES) {
            let mut query = Query::new("DescribeInstances").filter(name, chunk.iter().copied());
            if !states.is_empty() {
                query = query.filter("instance-state-name", states.iter().copied());
            }
            instances.extend(self.describe_instances(query)?);
        }
        Ok(instances)
    }

    /// The instances tagged `key`, whatever the value and the state: one
    /// request per [`INSTANCES_PER_PAGE`] instances.
    pub fn instances_tagged(&self, key: &str) -> Result<Vec<Instance>, Error> {
        self.describe_instances(Query::new("DescribeInstances").filter("tag-key", [key]))
    }

    /// Every instance `query` describes, page by page.
    fn describe_instances(&self, query: Query) -> Result<Vec<Instance>, Error> {
        let mut instances = Vec::new();
        let mut next_token: Option<String> = None;
        loop {
            let page = query
                .clone()
                .param("MaxResults", INSTANCES_PER_PAGE.to_string())
                .optional("NextToken", next_token.take());
            let answer: DescribeInstances = self.call(&page)?;
            next_token = answer.next_token.clone().filter(|token| !token.is_empty());
            instances.extend(answer.instances());
            if next_token.is_none() {
                return Ok(instances);
            }
        }
    }

    /// The subnets tagged `key` = owned or shared, in `vpc_id` if given.
    pub fn subnets_tagged(&self, key: &str, vpc_id: Option<&str>) -> Result<Vec<Subnet>, Error> {
        let mut query = Query::new("DescribeSubnets").filter(&format!("tag:{key}"), ["owned", "shared"]);
        if let Some(vpc_id) = vpc_id {
            query = query.filter("vpc-id", [vpc_id]);
        }
        self.describe_subnets(query)
    }

    fn describe_subnets(&self, query: Query) -> Result<Vec<Subnet>, Error> {
        let mut subnets = Vec::new();
        let mut next_token: Option<String> = None;
        loop {
            let answer: DescribeSubnets = self.call(&query.clone().optional("NextToken", next_token.take()))?;
            subnets.extend(answer.subnet_set.items);
            next_token = answer.next_token.filter(|token| !token.is_empty());
            if next_token.is_none() {
                return Ok(subnets);
            }
        }
    }

    /// The route table `id`.
    pub fn route_tables(&self, id: &str) -> Result<Vec<RouteTable>, Error> {
        self.describe_route_tables(Query::new("DescribeRouteTables").param("RouteTableId.1", id))
    }

    /// The route tables tagged `key` = owned or shared.
    pub fn route_tables_tagged(&self, key: &str) -> Result<Vec<RouteTable>, Error> {
        self.describe_route_tables(Query::new("DescribeRouteTables").filter(&format!("tag:{key}"), ["owned", "shared"]))
    }

    fn describe_route_tables(&self, query: Query) -> Result<Vec<RouteTable>, Error> {
        let mut tables = Vec::new();
        let mut next_token: Option<String> = None;
        loop {
            let answer: DescribeRouteTables = self.call(&query.clone().optional("NextToken", next_token.take()))?;
            tables.extend(answer.route_table_set.items);
            next_token = answer.next_token.filter(|token| !token.is_empty());
            if next_token.is_none() {
                return Ok(tables);
            }
        }
    }

    /// Routes `cidr` in `table` to `instance_id`, replacing the route to
    /// `cidr` if `replace`.
    pub fn put_route(&self, table: &str, cidr: &str, instance_id: &str, replace: bool) -> Result<(), Error> {
        let action = if replace { "ReplaceRoute" } else { "CreateRoute" };
        let query = Query::new(action)
            .param("RouteTableId", table)
            .param("DestinationCidrBlock", cidr)
            .param("InstanceId", instance_id);
        Ok(self.0.call_unit(Service::Ec2, &query)?)
    }

    /// Deletes the route to `cidr` from `table`.
    pub fn delete_route(&self, table: &str, cidr: &str) -> ApiResult<()> {
        let query = Query::new("DeleteRoute").param("RouteTableId", table).param("DestinationCidrBlock", cidr);
        self.0.call_unit(Service::Ec2, &query)
    }

    /// Lets `instance_id` send and receive traffic for addresses not its
    /// own, which routing pod CIDRs to it requires.
    pub fn disable_source_dest_check(&self, instance_id: &str) -> Result<(), Error> {
        let query = Query::new("ModifyInstanceAttribute")
            .param("InstanceId", instance_id)
            .param("SourceDestCheck.Value", "false");
        match self.0.call_unit(Service::Ec2, &query) {
            Ok(()) => Ok(()),
            Err(err) if err.is("InvalidInstanceID.NotFound") => Err(Error::InstanceNotFound),
            Err(err) => Err(err.into()),
        }
    }
}

impl DescribeInstances {
    fn instances(self) -> impl Iterator<Item = Instance> {
        self.reservation_set.items.into_iter().flat_map(|reservation| reservation.instances_set.items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_instances() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r</requestId>
  <reservationSet>
    <item>
      <reservationId>r-1</reservationId>
      <groupSet/>
      <instancesSet>
        <item>
          <instanceId>i-1</instanceId>
          <instanceState><code>16</code><name>running</name></instanceState>
          <privateDnsName>ip-10-0-1-4.eu-west-1.compute.internal</privateDnsName>
          <dnsName>ec2-54-1-2-3.eu-west-1.compute.amazonaws.com</dnsName>
          <instanceType>m5.large</instanceType>
          <placement><availabilityZone>eu-west-1a</availabilityZone><tenancy>default</tenancy></placement>
          <privateIpAddress>10.0.1.4</privateIpAddress>
          <ipAddress>54.1.2.3</ipAddress>
          <networkInterfaceSet>
            <item>
              <status>in-use</status>
              <attachment><deviceIndex>0</deviceIndex><status>attached</status></attachment>
              <privateIpAddressesSet>
                <item><privateIpAddress>10.0.1.4</privateIpAddress><primary>true</primary></item>
                <item><privateIpAddress>10.0.1.5</privateIpAddress><primary>false</primary></item>
              </privateIpAddressesSet>
            </item>
          </networkInterfaceSet>
        </item>
        <item>
          <instanceId>i-2</instanceId>
          <instanceState><code>48</code><name>terminated</name></instanceState>
          <privateDnsName/>
          <dnsName/>
          <placement><availabilityZone>eu-west-1b</availabilityZone></placement>
          <networkInterfaceSet/>
        </item>
      </instancesSet>
    </item>
  </reservationSet>
  <nextToken>page-2</nextToken>
</DescribeInstancesResponse>"#;
        let answer: DescribeInstances = quick_xml::de::from_str(xml).unwrap();
        assert_eq!(answer.next_token.as_deref(), Some("page-2"));
        let instances: Vec<Instance> = answer.instances().collect();
        assert_eq!(instances.len(), 2);
        let first = &instances[0];
        assert_eq!(first.instance_id, "i-1");
        assert!(first.is("running"));
        assert_eq!(first.node_name(), Some("ip-10-0-1-4.eu-west-1.compute.internal"));
        assert_eq!(first.instance_type, "m5.large");
        assert_eq!(first.placement.availability_zone, "eu-west-1a");
        assert_eq!(first.ip_address.as_deref(), Some("54.1.2.3"));
        let interface = &first.network_interface_set.items[0];
        assert_eq!(interface.attachment.as_ref().map(|attachment| attachment.device_index), Some(0));
        assert_eq!(interface.private_ip_addresses_set.items.len(), 2);
        assert!(interface.private_ip_addresses_set.items[0].primary);
        assert!(instances[1].is("terminated"));
        assert_eq!(instances[1].node_name(), None);
        assert!(instances[1].network_interface_set.items.is_empty());
    }

    #[test]
    fn reads_subnets_and_route_tables() {
        let subnets: DescribeSubnets = quick_xml::de::from_str(
            "<DescribeSubnetsResponse><subnetSet><item><subnetId>subnet-1</subnetId><vpcId>vpc-1</vpcId>\
             <availabilityZone>eu-west-1a</availabilityZone><tagSet><item><key>kubernetes.io/role/elb</key>\
             <value>1</value></item></tagSet></item></subnetSet></DescribeSubnetsResponse>",
        )
        .unwrap();
        let subnet = &subnets.subnet_set.items[0];
        assert_eq!((subnet.subnet_id.as_str(), subnet.availability_zone.as_str()), ("subnet-1", "eu-west-1a"));
        assert_eq!(subnet.tag_set.items[0].key, "kubernetes.io/role/elb");

        let tables: DescribeRouteTables = quick_xml::de::from_str(
            "<DescribeRouteTablesResponse><routeTableSet><item><routeTableId>rtb-1</routeTableId><routeSet>\
             <item><destinationCidrBlock>10.0.0.0/16</destinationCidrBlock><gatewayId>local</gatewayId><state>active</state></item>\
             <item><destinationCidrBlock>100.64.1.0/24</destinationCidrBlock><instanceId>i-1</instanceId><state>blackhole</state></item>\
             </routeSet></item></routeTableSet></DescribeRouteTablesResponse>",
        )
        .unwrap();
        let routes = &tables.route_table_set.items[0].route_set.items;
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].instance_id, None);
        assert_eq!(routes[1].instance_id.as_deref(), Some("i-1"));
        assert_eq!(routes[1].state, "blackhole");
    }

    #[test]
    fn an_empty_answer_has_no_instances() {
        let answer: DescribeInstances =
            quick_xml::de::from_str("<DescribeInstancesResponse><reservationSet/></DescribeInstancesResponse>")
                .unwrap();
        assert_eq!(answer.instances().count(), 0);
    }
}
