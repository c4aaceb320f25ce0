//! Load balancers, kept in the fake cloud, with addresses claimed from the pool.

use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wasm_ccm_sdk::types::{IpMode, LoadBalancerIngress, LoadBalancerStatus, Protocol, Service};
use wasm_ccm_sdk::{Error, LoadBalancer, NodeSet, default_load_balancer_name};

use crate::Fake;
use crate::cloud::{Precondition, Stored};
use crate::pool::{self, Pool};

const LOAD_BALANCERS: &str = "load-balancers";
const ADDRESSES: &str = "addresses";
/// Probes of the pool at hashed positions before scanning it in order.
const PROBES: u128 = 32;

/// A load balancer as the fake cloud stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    /// `<namespace>/<name>` of the Service.
    service: String,
    uid: String,
    address: String,
    ports: Vec<PortRecord>,
    /// Names of the nodes it targets, sorted.
    nodes: Vec<String>,
    source_ranges: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PortRecord {
    name: String,
    protocol: String,
    port: u16,
    node_port: Option<u16>,
}

/// Who holds an address of the pool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Claim {
    load_balancer: String,
}

fn node_names(nodes: &NodeSet<'_>) -> Vec<String> {
    let mut names: Vec<String> = nodes.names().iter().map(str::to_owned).collect();
    names.dedup();
    names
}

fn ports(service: &Service) -> Result<Vec<PortRecord>, Error> {
    service
        .ports
        .iter()
        .map(|port| {
            let protocol = match port.protocol {
                Protocol::Tcp => "TCP",
                Protocol::Udp => "UDP",
                Protocol::Sctp => return Err(Error::other("the fake cloud's load balancers do not support SCTP")),
            };
            Ok(PortRecord {
                name: port.name.clone(),
                protocol: protocol.to_owned(),
                port: port.port,
                node_port: port.node_port,
            })
        })
        .collect()
}

impl Fake {
    fn status(&self, name: &str, address: &str) -> LoadBalancerStatus {
        let (ip, hostname) = match &self.config.load_balancer_hostname_suffix {
            Some(suffix) => (None, Some(format!("{name}.{suffix}"))),
            None => (Some(address.to_owned()), None),
        };
        LoadBalancerStatus {
            ingress: vec![LoadBalancerIngress { ip, hostname, ip_mode: Some(IpMode::Vip), ports: Vec::new() }],
        }
    }

    /// Claims `address` for `name`; `Ok(false)` when another load balancer holds it.
    fn claim(&self, address: IpAddr, name: &str) -> Result<bool, Error> {
        let key = address.to_string();
        let claim = Claim { load_balancer: name.to_owned() };
        if self.cloud().put(ADDRESSES, &key, &claim, Precondition::Absent)? {
            return Ok(true);
        }
        let holder: Option<Stored<Claim>> = self.cloud().get(ADDRESSES, &key)?;
        Ok(holder.is_some_and(|held| held.value.load_balancer == name))
    }

    /// An address for `service`: the one it asks for, or a free one of the pool.
    fn allocate(&self, service: &Service, name: &str) -> Result<IpAddr, Error> {
        let pool = Pool::new(&self.config.load_balancer_pool);
        if let Some(requested) = service.load_balancer_ip.as_deref().filter(|ip| !ip.is_empty()) {
            let address: IpAddr = requested
                .parse()
                .map_err(|_| Error::other(format_args!("loadBalancerIP {requested:?} is not an IP address")))?;
            if !pool.contains(address) {
                return Err(Error::other(format_args!("loadBalancerIP {address} is outside the address pool")));
            }
            if !self.claim(address, name)? {
                return Err(Error::other(format_args!("loadBalancerIP {address} is in use by another load balancer")));
            }
            return Ok(address);
        }
        let len = pool.len();
        let start = pool::start(&service.uid, len);
        for probe in 0..PROBES.min(len) {
            let address = pool.get((start + probe * probe) % len).expect("index within the pool");
            if self.claim(address, name)? {
                return Ok(address);
            }
        }
        let claimed: Vec<Stored<Claim>> = self.cloud().list(ADDRESSES)?;
        let claimed: std::collections::HashSet<&str> = claimed.iter().map(|claim| claim.key.as_str()).collect();
        for index in 0..len {
            let address = pool.get(index).expect("index within the pool");
            if !claimed.contains(address.to_string().as_str()) && self.claim(address, name)? {
                return Ok(address);
            }
        }
        Err(Error::other("the load-balancer address pool is exhausted"))
    }

    /// A stateless load balancer's address: the one the Service asks for,
    /// or the one its UID picks in the pool (two Services may get the same).
    fn derived_address(&self, service: &Service) -> Result<IpAddr, Error> {
        let pool = Pool::new(&self.config.load_balancer_pool);
        match service.load_balancer_ip.as_deref().filter(|ip| !ip.is_empty()) {
            Some(requested) => match requested.parse() {
                Ok(address) if pool.contains(address) => Ok(address),
                _ => Err(Error::other(format_args!("loadBalancerIP {requested:?} is not an address of the pool"))),
            },
            None => Ok(pool.get(pool::start(&service.uid, pool.len())).expect("index within the pool")),
        }
    }

    fn release(&self, address: &str) -> Result<(), Error> {
        self.cloud().delete(ADDRESSES, address)?;
        Ok(())
    }
}

impl LoadBalancer for Fake {
    fn get_load_balancer(&self, cluster_name: &str, service: &Service) -> Result<Option<LoadBalancerStatus>, Error> {
        self.config.inject("load-balancer.get")?;
        let name = self.get_load_balancer_name(cluster_name, service);
        if self.config.stateless_load_balancers {
            return Ok(Some(self.status(&name, &self.derived_address(service)?.to_string())));
        }
        let stored: Option<Stored<Record>> = self.cloud().get(LOAD_BALANCERS, &name)?;
        Ok(stored.map(|stored| self.status(&name, &stored.value.address)))
    }

    fn get_load_balancer_name(&self, _cluster_name: &str, service: &Service) -> String {
        default_load_balancer_name(service)
    }

    fn ensure_load_balancer(
        &self,
        cluster_name: &str,
        service: &Service,
        nodes: &NodeSet<'_>,
    ) -> Result<LoadBalancerStatus, Error> {
        self.config.inject("load-balancer.ensure")?;
        let name = self.get_load_balancer_name(cluster_name, service);
        let ports = ports(service)?;
        if self.config.stateless_load_balancers {
            return Ok(self.status(&name, &self.derived_address(service)?.to_string()));
        }
        let stored: Option<Stored<Record>> = self.cloud().get(LOAD_BALANCERS, &name)?;
        let requested = service.load_balancer_ip.as_deref().filter(|ip| !ip.is_empty());
        let kept = stored
            .as_ref()
            .map(|stored| stored.value.address.clone())
            .filter(|address| requested.is_none_or(|requested| requested == address));
        let address = match kept {
            Some(address) => address,
            None => self.allocate(service, &name)?.to_string(),
        };
        let record = Record {
            service: format!("{}/{}", service.namespace, service.name),
            uid: service.uid.clone(),
            address,
            ports,
            nodes: node_names(nodes),
            source_ranges: service.load_balancer_source_ranges.clone(),
        };
        let precondition = stored.as_ref().map_or(Precondition::Absent, |stored| Precondition::Version(stored.version));
        if !self.cloud().put(LOAD_BALANCERS, &name, &record, precondition)? {
            return Err(Error::retry(Duration::from_secs(1), format_args!("load balancer {name} changed meanwhile")));
        }
        if let Some(previous) = stored.filter(|stored| stored.value.address != record.address) {
            self.release(&previous.value.address)?;
        }
        Ok(self.status(&name, &record.address))
    }

    fn update_load_balancer(&self, cluster_name: &str, service: &Service, nodes: &NodeSet<'_>) -> Result<(), Error> {
        self.config.inject("load-balancer.update")?;
        if self.config.stateless_load_balancers {
            return Ok(());
        }
        let name = self.get_load_balancer_name(cluster_name, service);
        let Some(mut stored) = self.cloud().get::<Record>(LOAD_BALANCERS, &name)? else {
            return Err(Error::other(format_args!("load balancer {name} does not exist")));
        };
        stored.value.nodes = node_names(nodes);
        if !self.cloud().put(LOAD_BALANCERS, &name, &stored.value, Precondition::Version(stored.version))? {
            return Err(Error::retry(Duration::from_secs(1), format_args!("load balancer {name} changed meanwhile")));
        }
        Ok(())
    }

    fn ensure_load_balancer_deleted(&self, cluster_name: &str, service: &Service) -> Result<(), Error> {
        self.config.inject("load-balancer.ensure-deleted")?;
        if self.config.stateless_load_balancers {
            return Ok(());
        }
        let name = self.get_load_balancer_name(cluster_name, service);
        let Some(stored) = self.cloud().get::<Record>(LOAD_BALANCERS, &name)? else {
            return Ok(());
        };
        self.cloud().delete(LOAD_BALANCERS, &name)?;
        self.release(&stored.value.address)
    }
}
