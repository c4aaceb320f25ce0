//! Which provider acts on a Service when several serve load balancers side
//! by side, each with its own service controller lane.
//!
//! A provider serves some `loadBalancerClass`es and, at most one, Services
//! without a class. The lane that ensures a load balancer writes its
//! provider's name into [`PROVIDER_ANNOTATION`] with the finalizer, so that
//! the load balancer is always deleted by the provider that made it, even
//! after the Service changed type or class or the process restarted:
//!
//! - the owner deletes its load balancer when the Service no longer wants
//!   one, or another provider now serves it; it keeps it when no provider
//!   serves the Service's class any more;
//! - a provider serving the Service waits until another owner has deleted
//!   its load balancer, then ensures its own; it takes over at once when
//!   the owner is no longer configured, whose load balancer stays.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::Service;

use super::rules::has_finalizer;
use crate::serves::Serves;

/// The annotation naming the provider that ensured a Service's load
/// balancer.
pub const PROVIDER_ANNOTATION: &str = "wasm-ccm.io/load-balancer-provider";

/// The providers configured and what each serves; the manager keeps it
/// current and every lane reads it. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct Roster(Arc<RwLock<BTreeMap<Arc<str>, Serves>>>);

impl Roster {
    /// Replaces the providers configured.
    pub fn set(&self, providers: BTreeMap<Arc<str>, Serves>) {
        *self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = providers;
    }

    fn read<T>(&self, read: impl FnOnce(&BTreeMap<Arc<str>, Serves>) -> T) -> T {
        read(&self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Whether `name` is configured.
    pub fn is_configured(&self, name: &str) -> bool {
        self.read(|providers| providers.contains_key(name))
    }

    /// The provider serving load balancers of `class` (`None`: no class).
    pub fn serving(&self, class: Option<&str>) -> Option<Arc<str>> {
        self.read(|providers| providers.iter().find(|(_, serves)| serves.class(class)).map(|(name, _)| name.clone()))
    }

    /// The provider that should give `service` a load balancer: it is of
    /// type LoadBalancer and a provider serves its class.
    pub fn target(&self, service: &Service) -> Option<Arc<str>> {
        let spec = service.spec.as_ref()?;
        (spec.type_.as_deref() == Some("LoadBalancer")).then(|| self.serving(spec.load_balancer_class.as_deref()))?
    }

    /// The provider whose load balancer `service` has: the one its
    /// annotation names; for a Service given the finalizer without the
    /// annotation, the one serving it, or else the one serving Services
    /// without a class, as a single provider would be.
    pub fn owner(&self, service: &Service) -> Option<Arc<str>> {
        let annotated =
            service.metadata.annotations.as_ref().and_then(|annotations| annotations.get(PROVIDER_ANNOTATION));
        match annotated {
            Some(name) => Some(Arc::from(name.as_str())),
            None if has_finalizer(service) => self.target(service).or_else(|| self.serving(None)),
            None => None,
        }
    }
}

/// What a lane does with a Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Ensure its load balancer: the lane serves it and no other configured
    /// provider owns one.
    Ensure,
    /// Delete its load balancer and let the Service go: the lane owns it
    /// and the Service no longer wants it from this provider.
    Delete,
    /// Keep its load balancer untouched, with a warning: the lane owns it
    /// and no provider serves the Service's class any more.
    Keep,
    /// Nothing: another provider's, waiting for another provider to let
    /// it go, or no load balancer's.
    Ignore,
}

/// One lane's view: its provider's name and the roster.
#[derive(Debug, Clone)]
pub struct Claim {
    provider: Arc<str>,
    roster: Roster,
}

impl Claim {
    /// The lane of `provider` among `roster`'s.
    pub fn new(provider: Arc<str>, roster: Roster) -> Self {
        Claim { provider, roster }
    }

    /// The lane's provider.
    pub fn provider(&self) -> &Arc<str> {
        &self.provider
    }

    /// What the lane does with `service`.
    pub fn decide(&self, service: &Service) -> Action {
        let deleting = service.metadata.deletion_timestamp.is_some();
        let target = self.roster.target(service);
        let serves = !deleting && target.as_deref() == Some(&*self.provider);
        match self.roster.owner(service) {
            Some(owner) if owner == self.provider => {
                let is_load_balancer =
                    service.spec.as_ref().is_some_and(|spec| spec.type_.as_deref() == Some("LoadBalancer"));
                if serves {
                    Action::Ensure
                } else if !deleting && is_load_balancer && target.is_none() {
                    Action::Keep
                } else {
                    Action::Delete
                }
            }
            Some(owner) if serves && !self.roster.is_configured(&owner) => Action::Ensure,
            Some(_) => Action::Ignore,
            None if serves => Action::Ensure,
            None => Action::Ignore,
        }
    }

    /// Whether `service`'s load balancer is this lane's provider's.
    pub fn owns(&self, service: &Service) -> bool {
        self.roster.owner(service).is_some_and(|owner| owner == self.provider)
    }

    /// Whether the lane gives `service` a load balancer.
    pub fn wants(&self, service: &Service) -> bool {
        self.decide(service) == Action::Ensure
    }

    /// Whether `service` is the lane's business at all.
    pub fn concerns(&self, service: &Service) -> bool {
        self.decide(service) != Action::Ignore
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::fixtures::ServiceFixture;

    fn serving(classes: &[&str], default: bool) -> Serves {
        let load_balancer_classes: BTreeSet<String> = classes.iter().map(|class| (*class).to_owned()).collect();
        Serves { load_balancer_classes, default_load_balancer: default, ..Serves::default() }
    }

    fn roster() -> Roster {
        let roster = Roster::default();
        roster.set(BTreeMap::from([
            (Arc::from("a"), serving(&["example.com/a"], true)),
            (Arc::from("b"), serving(&["example.com/b"], false)),
        ]));
        roster
    }

    fn owned_by(service: Service, provider: &str) -> Service {
        let mut service = service.with_finalizer();
        service.metadata.annotations.get_or_insert_default().insert(PROVIDER_ANNOTATION.into(), provider.into());
        service
    }

    #[test]
    fn each_lane_ensures_the_services_of_its_classes() {
        let (a, b) = (Claim::new("a".into(), roster()), Claim::new("b".into(), roster()));
        let classless = Service::test("web");
        let of_b = Service::test("web").with_class("example.com/b");
        let of_nobody = Service::test("web").with_class("example.com/c");
        assert_eq!((a.decide(&classless), b.decide(&classless)), (Action::Ensure, Action::Ignore));
        assert_eq!((a.decide(&of_b), b.decide(&of_b)), (Action::Ignore, Action::Ensure));
        assert_eq!((a.decide(&of_nobody), b.decide(&of_nobody)), (Action::Ignore, Action::Ignore));
    }

    #[test]
    fn a_class_moved_to_another_provider_is_deleted_first_then_ensured() {
        let (a, b) = (Claim::new("a".into(), roster()), Claim::new("b".into(), roster()));
        let moved = owned_by(Service::test("web").with_class("example.com/b"), "a");
        assert_eq!(a.decide(&moved), Action::Delete, "the owner lets it go");
        assert_eq!(b.decide(&moved), Action::Ignore, "the new provider waits for it");
        let let_go = Service::test("web").with_class("example.com/b");
        assert_eq!(b.decide(&let_go), Action::Ensure);
    }

    #[test]
    fn a_removed_provider_s_load_balancer_stays_and_its_class_can_be_taken_over() {
        let roster = roster();
        let b = Claim::new("b".into(), roster.clone());
        let of_gone = owned_by(Service::test("web").with_class("example.com/b"), "gone");
        assert_eq!(b.decide(&of_gone), Action::Ensure, "its owner is not configured: taken over");
        let of_gone = owned_by(Service::test("web").with_class("example.com/c"), "gone");
        assert_eq!(b.decide(&of_gone), Action::Ignore);
        let a = Claim::new("a".into(), roster.clone());
        roster.set(BTreeMap::from([(Arc::from("a"), serving(&[], true))]));
        let of_dropped_class = owned_by(Service::test("web").with_class("example.com/a"), "a");
        assert_eq!(a.decide(&of_dropped_class), Action::Keep, "no provider serves its class: kept");
    }

    #[test]
    fn the_owner_deletes_when_the_service_goes_or_changes_type() {
        let a = Claim::new("a".into(), roster());
        let cluster_ip = owned_by(Service::test("web").with_type("ClusterIP"), "a");
        assert_eq!(a.decide(&cluster_ip), Action::Delete);
        let mut deleting = owned_by(Service::test("web").with_class("example.com/a"), "a");
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(a.decide(&deleting), Action::Delete);
    }

    #[test]
    fn a_finalizer_without_the_annotation_belongs_to_the_default_provider() {
        let a = Claim::new("a".into(), roster());
        let legacy = Service::test("web").with_type("ClusterIP").with_finalizer();
        assert_eq!(a.decide(&legacy), Action::Delete, "as a single provider would");
    }
}
