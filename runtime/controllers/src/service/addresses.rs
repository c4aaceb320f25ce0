//! Which Services hold which IP addresses, as cluster IPs or as published
//! load balancer ingress, kept from the Service changes, so that checking a
//! provider's answer against every other Service costs a lookup per
//! answered address rather than a pass over the whole cache: at start-up,
//! with every Service ensured at once, that pass made the check quadratic
//! in the number of Services.
//!
//! An answer about to be published is reserved first, in the same step as
//! the check: until the cache shows it published (or the write fails), no
//! other provider's Service can be given one of its addresses, so that two
//! lanes checking at once cannot both publish one address.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Service;
use kube::runtime::reflector::ObjectRef;
use wasm_ccm_kube::informer::Change;

use super::ingress::held_addresses;
use super::key::ServiceKey;
use crate::framework::error::RefusedIngress;

/// The index; clones share it.
#[derive(Debug, Clone, Default)]
pub struct AddressIndex {
    inner: Arc<RwLock<Holders>>,
}

#[derive(Debug, Default)]
struct Holders {
    by_address: HashMap<IpAddr, HashSet<ServiceKey>>,
    of_service: HashMap<ServiceKey, Vec<IpAddr>>,
    reserved: HashMap<IpAddr, Reserved>,
}

/// An address reserved for a Service's answer.
#[derive(Debug)]
struct Reserved {
    key: ServiceKey,
    provider: Arc<str>,
    /// The answer was written: the reservation lasts until the cache
    /// shows it.
    written: bool,
}

impl Holders {
    fn set(&mut self, key: ServiceKey, addresses: Vec<IpAddr>) {
        self.remove(&key);
        // A written answer the cache now shows needs its reservation no
        // more.
        self.reserved
            .retain(|address, reserved| !(reserved.key == key && reserved.written && addresses.contains(address)));
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

    /// Indexes exactly `services`, as a synced cache holds them; answers
    /// being written stay reserved, and written ones are in `services`.
    pub fn rebuild(&self, services: &[Arc<Service>]) {
        let mut holders = Holders::default();
        for service in services {
            holders.set(ObjectRef::from_obj(&**service), held_addresses(service).collect());
        }
        let mut index = self.write();
        holders.reserved = std::mem::take(&mut index.reserved);
        holders.reserved.retain(|_, reserved| !reserved.written);
        *index = holders;
    }

    /// Takes in a change of the cache `services`, whose state a re-list
    /// replaced wholesale.
    pub fn observe(&self, change: &Change<Service>, services: impl FnOnce() -> Vec<Arc<Service>>) {
        match change {
            Change::Applied(service) => {
                self.write().set(ObjectRef::from_obj(&**service), held_addresses(service).collect());
            }
            Change::Deleted(service) => {
                let key = ObjectRef::from_obj(&**service);
                let mut index = self.write();
                index.remove(&key);
                index.reserved.retain(|_, reserved| reserved.key != key);
            }
            Change::Resynced => self.rebuild(&services()),
        }
    }

    /// Reserves `addresses`, the answer of `provider` for the Service
    /// `key`, unless `taken` finds one held by the Services holding any of
    /// them, or another provider's Service has one reserved: one step, so
    /// that no other lane's answer is checked and reserved in between.
    ///
    /// # Errors
    /// Why the answer may not be published.
    pub fn reserve(
        &self,
        key: &ServiceKey,
        provider: &Arc<str>,
        addresses: &[IpAddr],
        taken: impl FnOnce(HashSet<ServiceKey>) -> Option<RefusedIngress>,
    ) -> Result<Reservation, RefusedIngress> {
        let mut index = self.write();
        let holders = addresses.iter().filter_map(|address| index.by_address.get(address)).flatten().cloned();
        if let Some(refused) = taken(holders.collect()) {
            return Err(refused);
        }
        for address in addresses {
            if let Some(other) = index.reserved.get(address).filter(|other| other.key != *key)
                && other.provider != *provider
            {
                let (namespace, name) = (other.key.namespace.as_deref().unwrap_or_default(), &other.key.name);
                let why = format!("being published for Service {namespace}/{name} by provider {}", other.provider);
                return Err(RefusedIngress { address: address.to_string(), why, kept_by_another: false });
            }
        }
        for address in addresses {
            let reserved = Reserved { key: key.clone(), provider: provider.clone(), written: false };
            index.reserved.insert(*address, reserved);
        }
        Ok(Reservation { index: self.clone(), key: key.clone(), written: false })
    }

    /// The Services holding any of `addresses`.
    #[cfg(test)]
    fn holders(&self, addresses: impl IntoIterator<Item = IpAddr>) -> HashSet<ServiceKey> {
        let holders = self.inner.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        addresses.into_iter().filter_map(|address| holders.by_address.get(&address)).flatten().cloned().collect()
    }
}

/// The addresses of an answer being published, reserved for its Service:
/// released when dropped unless [`Reservation::written`] says the answer
/// was written, and then when the cache shows it.
#[derive(Debug)]
pub struct Reservation {
    index: AddressIndex,
    key: ServiceKey,
    written: bool,
}

impl Reservation {
    /// The answer was written to the Service's status (or already was):
    /// reserved until the cache shows it, if it does not yet.
    pub fn written(mut self) {
        self.written = true;
        let mut index = self.index.write();
        let Holders { by_address, reserved, .. } = &mut *index;
        reserved.retain(|address, reserved| {
            let shown = by_address.get(address).is_some_and(|holders| holders.contains(&reserved.key));
            reserved.written |= reserved.key == self.key;
            !(reserved.key == self.key && shown)
        });
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.written {
            self.index.write().reserved.retain(|_, reserved| reserved.key != self.key || reserved.written);
        }
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

    fn key(name: &str) -> ServiceKey {
        ObjectRef::from_obj(&*holding(name, "10.96.0.99", &[]))
    }

    fn reserve(index: &AddressIndex, name: &str, provider: &str, address: &str) -> Result<Reservation, String> {
        let taken = |holders: HashSet<ServiceKey>| {
            let others: Vec<String> = names(holders).into_iter().filter(|holder| holder != name).collect();
            let why = format!("held by {others:?}");
            (!others.is_empty()).then(|| RefusedIngress { address: address.to_owned(), why, kept_by_another: false })
        };
        index.reserve(&key(name), &Arc::from(provider), &[ip(address)], taken).map_err(|refused| refused.why)
    }

    #[test]
    fn an_answer_being_published_is_another_provider_s_to_wait_for() {
        let index = AddressIndex::default();
        let web = reserve(&index, "web", "vendor-a", "203.0.113.5").unwrap();
        let refused = reserve(&index, "api", "vendor-b", "203.0.113.5").unwrap_err();
        assert_eq!(refused, "being published for Service default/web by provider vendor-a");
        drop(reserve(&index, "shared", "vendor-a", "203.0.113.5").expect("a provider shares its own addresses"));
        drop(web);
        drop(reserve(&index, "api", "vendor-b", "203.0.113.5").expect("released when not written"));

        let web = reserve(&index, "web", "vendor-a", "203.0.113.5").unwrap();
        web.written();
        assert!(reserve(&index, "api", "vendor-b", "203.0.113.5").is_err(), "written, not yet in the cache");
        index.observe(&Change::Applied(holding("web", "10.96.0.10", &[])), Vec::new);
        assert!(reserve(&index, "api", "vendor-b", "203.0.113.5").is_err(), "a version before the write");
        index.observe(&Change::Applied(holding("web", "10.96.0.10", &["203.0.113.5"])), Vec::new);
        assert_eq!(reserve(&index, "api", "vendor-b", "203.0.113.5").unwrap_err(), r#"held by ["web"]"#);
        index.observe(&Change::Applied(holding("web", "10.96.0.10", &[])), Vec::new);
        drop(reserve(&index, "api", "vendor-b", "203.0.113.5").expect("let go once the cache showed it"));
    }

    #[test]
    fn a_write_the_cache_showed_first_or_a_deleted_service_keeps_nothing_reserved() {
        let index = AddressIndex::default();
        let web = reserve(&index, "web", "vendor-a", "203.0.113.5").unwrap();
        index.observe(&Change::Applied(holding("web", "10.96.0.10", &["203.0.113.5"])), Vec::new);
        web.written();
        index.observe(&Change::Applied(holding("web", "10.96.0.10", &[])), Vec::new);
        drop(reserve(&index, "api", "vendor-b", "203.0.113.5").expect("the cache had shown it"));

        reserve(&index, "web", "vendor-a", "203.0.113.6").unwrap().written();
        index.observe(&Change::Deleted(holding("web", "10.96.0.10", &[])), Vec::new);
        drop(reserve(&index, "api", "vendor-b", "203.0.113.6").expect("the Service is gone"));

        let pending = reserve(&index, "web", "vendor-a", "203.0.113.7").unwrap();
        reserve(&index, "db", "vendor-a", "203.0.113.8").unwrap().written();
        index.observe(&Change::Resynced, Vec::new);
        assert!(reserve(&index, "api", "vendor-b", "203.0.113.7").is_err(), "a write in flight stays reserved");
        drop(reserve(&index, "api", "vendor-b", "203.0.113.8").expect("a re-list shows every written answer"));
        drop(pending);
    }
}
