//! Which Services hold which IP addresses, as cluster IPs or as published
//! load balancer ingress, kept from the Service changes, so that checking a
//! provider's answer against every other Service costs a lookup per
//! answered address rather than a pass over the whole cache: at start-up,
//! with every Service ensured at once, that pass made the check quadratic
//! in the number of Services.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Service;
use kube::runtime::reflector::ObjectRef;
use wasm_ccm_kube::informer::Change;

use super::ServiceKey;
use super::ingress::held_addresses;

/// The index; clones share it.
#[derive(Debug, Clone, Default)]
pub struct AddressIndex {
    inner: Arc<RwLock<Holders>>,
}

#[derive(Debug, Default)]
struct Holders {
    by_address: HashMap<IpAddr, HashSet<ServiceKey>>,
    of_service: HashMap<ServiceKey, Vec<IpAddr>>,
}

impl Holders {
    fn set(&mut self, key: ServiceKey, addresses: Vec<IpAddr>) {
        self.remove(&key);
        if addresses.is_empty() {
            return;
        }
        for address in &addresses {
            self.by_address.entry(*address).or_default().insert(key.clone());
        }
        self.of_service.insert(key, addresses);
    }

    fn remove(&mut self, key: &ServiceKey) {
        for address in self.of_service.remove(key).unwrap_or_default() {
            if let Some(holders) = self.by_address.get_mut(&address) {
                holders.remove(key);
                if holders.is_empty() {
                    self.by_address.remove(&address);
                }
            }
        }
    }
}

impl AddressIndex {
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Holders> {
        self.inner.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Indexes exactly `services`, as a synced cache holds them.
    pub fn rebuild(&self, services: &[Arc<Service>]) {
        let mut holders = Holders::default();
        for service in services {
            holders.set(ObjectRef::from_obj(&**service), held_addresses(service).collect());
        }
        *self.write() = holders;
    }

    /// Takes in a change of the cache `services`, whose state a re-list
    /// replaced wholesale.
    pub fn observe(&self, change: &Change<Service>, services: impl FnOnce() -> Vec<Arc<Service>>) {
        match change {
            Change::Applied(service) => {
                self.write().set(ObjectRef::from_obj(&**service), held_addresses(service).collect());
            }
            Change::Deleted(service) => self.write().remove(&ObjectRef::from_obj(&**service)),
            Change::Resynced => self.rebuild(&services()),
        }
    }

    /// The Services holding any of `addresses`.
    pub fn holders(&self, addresses: impl IntoIterator<Item = IpAddr>) -> HashSet<ServiceKey> {
        let holders = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        addresses.into_iter().filter_map(|address| holders.by_address.get(&address)).flatten().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{LoadBalancerIngress, LoadBalancerStatus, ServiceStatus};

    use super::*;
    use crate::fixtures::ServiceFixture;

    fn holding(name: &str, cluster_ip: &str, ingress: &[&str]) -> Arc<Service> {
        let mut service = Service::test(name);
        service.spec.get_or_insert_default().cluster_ips = Some(vec![cluster_ip.to_owned()]);
        let ingress = ingress.iter().map(|ip| LoadBalancerIngress { ip: Some((*ip).to_owned()), ..Default::default() });
        let load_balancer = LoadBalancerStatus { ingress: Some(ingress.collect()) };
        service.status = Some(ServiceStatus { load_balancer: Some(load_balancer), ..ServiceStatus::default() });
        Arc::new(service)
    }

    fn names(keys: HashSet<ServiceKey>) -> Vec<String> {
        let mut names: Vec<String> = keys.into_iter().map(|key| key.name).collect();
        names.sort();
        names
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn cluster_ips_and_published_ingress_are_found_and_follow_the_changes() {
        let index = AddressIndex::default();
        index.rebuild(&[holding("web", "10.96.0.10", &["203.0.113.1"]), holding("db", "10.96.0.11", &[])]);
        assert_eq!(names(index.holders([ip("10.96.0.10")])), ["web"]);
        assert_eq!(names(index.holders([ip("203.0.113.1"), ip("10.96.0.11")])), ["db", "web"]);
        index.rebuild(&[holding("web", "10.96.0.10", &["::ffff:203.0.113.1"])]);
        assert_eq!(names(index.holders([ip("203.0.113.1")])), ["web"], "IPv4-mapped addresses as IPv4");

        let moved = holding("web", "10.96.0.10", &["203.0.113.2"]);
        index.observe(&Change::Applied(moved.clone()), Vec::new);
        assert_eq!(names(index.holders([ip("203.0.113.1")])), Vec::<String>::new(), "the old address is let go");
        assert_eq!(names(index.holders([ip("203.0.113.2")])), ["web"]);
        index.observe(&Change::Deleted(moved), Vec::new);
        assert_eq!(names(index.holders([ip("203.0.113.2"), ip("10.96.0.10")])), Vec::<String>::new());

        index.observe(&Change::Resynced, || vec![holding("api", "10.96.0.12", &["203.0.113.3"])]);
        assert_eq!(names(index.holders([ip("10.96.0.11"), ip("203.0.113.3")])), ["api"], "a re-list replaces all");
    }
}
