//! Which provider acts on a Service when several serve load balancers side
//! by side, each with its own service controller lane.
//!
//! A provider serves some `loadBalancerClass`es and, at most one, Services
//! without a class, in the namespaces its selector picks (all without one).
//! The provider that ensures a load balancer is recorded in the Service's
//! status (see [`ownership`](super::ownership)) before the first ensure, so
//! that the load balancer is always deleted by the provider that made it,
//! even after the Service changed type or class or the process restarted. The
//! [`PROVIDER_ANNOTATION`] the lane writes with the finalizer says the same
//! for people to read; the Service's owner can write it too, so it decides
//! nothing but which provider adopts a Service ensured before records were
//! kept (see [`Roster::owner`]).
//!
//! - the owner deletes its load balancer when the Service no longer wants
//!   one, or another provider now serves it; it keeps it when no provider
//!   serves the Service's class or namespace any more;
//! - a provider serving the Service waits until another owner has deleted
//!   its load balancer, then ensures its own; it takes over at once when
//!   the owner is no longer configured, whose load balancer stays.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::runtime::reflector::{ObjectRef, Store};

use super::addresses::AddressIndex;
use super::ownership;
use super::rules::{PROVIDER_ANNOTATION, has_finalizer};
use crate::providers::serves::Serves;

/// The provider `service`'s annotation names.
pub fn annotation(service: &Service) -> Option<&str> {
    service.metadata.annotations.as_ref()?.get(PROVIDER_ANNOTATION).map(String::as_str)
}

/// What every lane decides by: the providers configured and what each
/// serves, the namespaces' labels, and which Service holds which address;
/// the manager keeps it current. Clones share it.
#[derive(Debug, Clone)]
pub struct Roster {
    providers: Arc<RwLock<BTreeMap<Arc<str>, Serves>>>,
    namespaces: Store<Namespace>,
    addresses: AddressIndex,
}

impl Roster {
    /// No providers yet, over the namespaces of `namespaces`, no address
    /// indexed.
    pub fn new(namespaces: Store<Namespace>) -> Self {
        Roster { providers: Arc::default(), namespaces, addresses: AddressIndex::default() }
    }

    /// Which Service holds which address.
    pub fn addresses(&self) -> &AddressIndex {
        &self.addresses
    }

    /// Replaces the providers configured.
    pub fn set(&self, providers: BTreeMap<Arc<str>, Serves>) {
        *self.providers.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = providers;
    }

    fn read<T>(&self, read: impl FnOnce(&BTreeMap<Arc<str>, Serves>) -> T) -> T {
        read(&self.providers.read().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Whether `name` is configured.
    pub fn is_configured(&self, name: &str) -> bool {
        self.read(|providers| providers.contains_key(name))
    }

    /// Whether a provider picks Services by their namespace.
    pub fn selects_namespaces(&self) -> bool {
        self.read(|providers| providers.values().any(|serves| serves.namespaces.is_some()))
    }

    /// The provider serving load balancers of `class` (`None`: no class),
    /// in whichever namespaces.
    pub fn serving(&self, class: Option<&str>) -> Option<Arc<str>> {
        self.read(|providers| {
            providers.iter().find(|(_, serves)| serves.serves_class(class)).map(|(name, _)| name.clone())
        })
    }

    /// The provider serving `service`'s class, and whether it serves its
    /// namespace, when it is of type LoadBalancer.
    pub fn class_provider(&self, service: &Service) -> Option<(Arc<str>, bool)> {
        let spec = service.spec.as_ref().filter(|spec| spec.type_.as_deref() == Some("LoadBalancer"))?;
        let namespace = self.namespaces.get(&ObjectRef::new(service.metadata.namespace.as_deref().unwrap_or_default()));
        let labels = namespace.as_ref().and_then(|namespace| namespace.metadata.labels.as_ref());
        self.read(|providers| {
            let (name, serves) =
                providers.iter().find(|(_, serves)| serves.serves_class(spec.load_balancer_class.as_deref()))?;
            Some((name.clone(), serves.namespace(labels)))
        })
    }

    /// The provider that should give `service` a load balancer: it is of
    /// type LoadBalancer and a provider serves its class and namespace.
    pub fn target(&self, service: &Service) -> Option<Arc<str>> {
        self.class_provider(service).filter(|(_, in_namespace)| *in_namespace).map(|(name, _)| name)
    }

    /// The provider whose load balancer `service` has: the one recorded in
    /// its status. A Service with the finalizer but no record was ensured
    /// by a version that kept none: it is adopted by the provider serving
    /// its class (Services without a class: the default provider), unless
    /// its annotation names another, which no provider then trusts. A
    /// Service of a class no provider serves is not wasm-ccm's, finalizer
    /// or not.
    pub fn owner(&self, service: &Service) -> Option<Arc<str>> {
        if let Some(recorded) = ownership::recorded(service) {
            return Some(Arc::from(recorded));
        }
        if !has_finalizer(service) {
            return None;
        }
        let class = service.spec.as_ref().and_then(|spec| spec.load_balancer_class.as_deref());
        let serving = self.serving(class)?;
        annotation(service).is_none_or(|named| *named == *serving).then_some(serving)
    }

    /// The provider recorded for `service`, when its annotation names
    /// another: the recorded one is the owner.
    pub fn mismatch<'s>(&self, service: &'s Service) -> Option<(&'s str, &'s str)> {
        let recorded = ownership::recorded(service)?;
        let named = annotation(service)?;
        (named != recorded).then_some((recorded, named))
    }
}

/// What a lane does with a Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
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

    /// The providers the lane decides by.
    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    /// What the lane does with `service`.
    pub fn decide(&self, service: &Service) -> Decision {
        let deleting = service.metadata.deletion_timestamp.is_some();
        let target = self.roster.target(service);
        let serves = !deleting && target.as_deref() == Some(&*self.provider);
        match self.roster.owner(service) {
            Some(owner) if owner == self.provider => {
                let is_load_balancer =
                    service.spec.as_ref().is_some_and(|spec| spec.type_.as_deref() == Some("LoadBalancer"));
                if serves {
                    Decision::Ensure
                } else if !deleting && is_load_balancer && target.is_none() {
                    Decision::Keep
                } else {
                    Decision::Delete
                }
            }
            Some(owner) if serves && !self.roster.is_configured(&owner) => Decision::Ensure,
            Some(_) => Decision::Ignore,
            None if serves => Decision::Ensure,
            None => Decision::Ignore,
        }
    }

    /// Whether `service`'s load balancer is this lane's provider's.
    pub fn owns(&self, service: &Service) -> bool {
        self.roster.owner(service).is_some_and(|owner| owner == self.provider)
    }

    /// Whether the lane gives `service` a load balancer.
    pub fn wants(&self, service: &Service) -> bool {
        self.decide(service) == Decision::Ensure
    }

    /// Whether `service` is the lane's business at all.
    pub fn concerns(&self, service: &Service) -> bool {
        self.decide(service) != Decision::Ignore
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher;

    use super::*;
    use crate::fixtures::{OwnedFixture, ServiceFixture};

    fn serving(classes: &[&str], default: bool) -> Serves {
        let load_balancer_classes: BTreeSet<String> = classes.iter().map(|class| (*class).to_owned()).collect();
        Serves { load_balancer_classes, default_load_balancer: default, ..Serves::default() }
    }

    /// `a` serves `example.com/a` and Services without a class, `b`
    /// serves `example.com/b`; no namespaces known.
    fn roster() -> Roster {
        let roster = Roster::new(Writer::default().as_reader());
        roster.set(BTreeMap::from([
            (Arc::from("a"), serving(&["example.com/a"], true)),
            (Arc::from("b"), serving(&["example.com/b"], false)),
        ]));
        roster
    }

    fn lanes(roster: &Roster) -> (Claim, Claim) {
        (Claim::new("a".into(), roster.clone()), Claim::new("b".into(), roster.clone()))
    }

    /// A Service with a UID.
    fn service(name: &str) -> Service {
        let mut service = Service::test(name);
        service.metadata.uid = Some(format!("uid-{name}"));
        service
    }

    /// With the finalizer and the annotation naming `provider`, as a lane
    /// leaves it (or as a tenant forges it).
    fn annotated(service: Service, provider: &str) -> Service {
        let mut service = service.with_finalizer();
        service.metadata.annotations.get_or_insert_default().insert(PROVIDER_ANNOTATION.into(), provider.into());
        service
    }

    /// Annotated, and recorded as `provider`'s.
    fn owned_by(service: Service, provider: &str) -> Service {
        annotated(service, provider).recorded_as(provider)
    }

    fn deleting(mut service: Service) -> Service {
        service.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        service
    }

    #[test]
    fn each_lane_ensures_the_services_of_its_classes() {
        let (a, b) = lanes(&roster());
        let classless = service("web");
        let of_b = service("web").with_class("example.com/b");
        let of_nobody = service("web").with_class("example.com/c");
        assert_eq!((a.decide(&classless), b.decide(&classless)), (Decision::Ensure, Decision::Ignore));
        assert_eq!((a.decide(&of_b), b.decide(&of_b)), (Decision::Ignore, Decision::Ensure));
        assert_eq!((a.decide(&of_nobody), b.decide(&of_nobody)), (Decision::Ignore, Decision::Ignore));
    }

    #[test]
    fn a_class_moved_to_another_provider_is_deleted_first_then_ensured() {
        let roster = roster();
        let (a, b) = lanes(&roster);
        let moved = owned_by(service("web").with_class("example.com/b"), "a");
        assert_eq!(a.decide(&moved), Decision::Delete, "the owner lets it go");
        assert_eq!(b.decide(&moved), Decision::Ignore, "the new provider waits for it");
        let let_go = service("web").with_class("example.com/b");
        assert_eq!(b.decide(&let_go), Decision::Ensure);
    }

    #[test]
    fn a_removed_provider_s_load_balancer_stays_and_its_class_can_be_taken_over() {
        let roster = roster();
        let b = Claim::new("b".into(), roster.clone());
        let of_gone = owned_by(service("web").with_class("example.com/b"), "gone");
        assert_eq!(b.decide(&of_gone), Decision::Ensure, "its owner is not configured: taken over");
        let of_gone = owned_by(service("db").with_class("example.com/c"), "gone");
        assert_eq!(b.decide(&of_gone), Decision::Ignore);
        let a = Claim::new("a".into(), roster.clone());
        roster.set(BTreeMap::from([(Arc::from("a"), serving(&[], true))]));
        let of_dropped_class = owned_by(service("api").with_class("example.com/a"), "a");
        assert_eq!(a.decide(&of_dropped_class), Decision::Keep, "no provider serves its class: kept");
    }

    #[test]
    fn the_owner_deletes_when_the_service_goes_or_changes_type() {
        let roster = roster();
        let a = Claim::new("a".into(), roster.clone());
        let cluster_ip = owned_by(service("web").with_type("ClusterIP"), "a");
        assert_eq!(a.decide(&cluster_ip), Decision::Delete);
        let going = deleting(owned_by(service("db").with_class("example.com/a"), "a"));
        assert_eq!(a.decide(&going), Decision::Delete);
    }

    /// The annotation flipped to another provider, by the Service's owner:
    /// the record decides, whether the Service stays or goes.
    #[test]
    fn an_annotation_naming_another_provider_moves_nothing() {
        let roster = roster();
        let (a, b) = lanes(&roster);
        let recorded = owned_by(service("web").with_class("example.com/a"), "a");
        let flipped = annotated(recorded.clone(), "b");
        assert_eq!((a.decide(&flipped), b.decide(&flipped)), (Decision::Ensure, Decision::Ignore));
        assert_eq!(roster.mismatch(&flipped).map(|(owner, named)| (owner.to_string(), named)), Some(("a".into(), "b")));
        assert_eq!(roster.mismatch(&recorded), None);
        let going = deleting(flipped);
        assert_eq!((a.decide(&going), b.decide(&going)), (Decision::Delete, Decision::Ignore), "a deletes its own");
        let to_ghost = deleting(annotated(recorded, "ghost"));
        assert_eq!((a.decide(&to_ghost), b.decide(&to_ghost)), (Decision::Delete, Decision::Ignore));
    }

    /// kube-vip and others put the standard finalizer on Services of their
    /// own class: those are not wasm-ccm's.
    #[test]
    fn a_finalized_service_of_a_class_nobody_serves_is_nobody_s() {
        let (a, b) = lanes(&roster());
        let other = service("vip").with_class("kube-vip.io/kube-vip-class").with_finalizer();
        assert_eq!((a.decide(&other), b.decide(&other)), (Decision::Ignore, Decision::Ignore));
        assert_eq!(
            (a.decide(&deleting(other.clone())), b.decide(&deleting(other))),
            (Decision::Ignore, Decision::Ignore)
        );
    }

    /// Services ensured by a version that kept no records: adopted by the
    /// provider serving their class when the annotation, if any, agrees.
    #[test]
    fn a_service_ensured_before_records_were_kept_is_adopted_by_the_provider_of_its_class() {
        let (a, b) = lanes(&roster());
        let legacy = deleting(annotated(service("web").with_class("example.com/b"), "b"));
        assert_eq!((a.decide(&legacy), b.decide(&legacy)), (Decision::Ignore, Decision::Delete));
        let unannotated = service("web").with_type("ClusterIP").with_finalizer();
        assert_eq!(a.decide(&unannotated), Decision::Delete, "a classless Service: the default provider's");
        let forged = deleting(annotated(service("web").with_class("example.com/a"), "b"));
        assert_eq!((a.decide(&forged), b.decide(&forged)), (Decision::Ignore, Decision::Ignore), "nobody trusts it");
        let forged = annotated(service("web").with_class("example.com/a"), "b");
        assert_eq!((a.decide(&forged), b.decide(&forged)), (Decision::Ensure, Decision::Ignore), "a serves it anyway");
    }

    fn in_namespaces(roster: &Roster, labels: &[(&str, &str)]) -> Writer<Namespace> {
        let selector = LabelSelector {
            match_labels: Some([("lb".to_owned(), "b".to_owned())].into()),
            ..LabelSelector::default()
        };
        let b = Serves { namespaces: Some(selector.try_into().unwrap()), ..serving(&["example.com/b"], false) };
        roster.set(BTreeMap::from([(Arc::from("a"), serving(&["example.com/a"], true)), (Arc::from("b"), b)]));
        let mut writer = Writer::default();
        let labels = labels.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
        let namespace = Namespace {
            metadata: ObjectMeta { name: Some("default".into()), labels: Some(labels), ..ObjectMeta::default() },
            ..Namespace::default()
        };
        writer.apply_watcher_event(&watcher::Event::Apply(namespace));
        writer
    }

    #[test]
    fn a_service_outside_its_provider_s_namespaces_is_not_served_and_an_ensured_one_is_kept() {
        for (labels, served) in [(&[("lb", "b")][..], true), (&[("lb", "a")][..], false), (&[][..], false)] {
            let mut roster = roster();
            let writer = in_namespaces(&roster, labels);
            roster.namespaces = writer.as_reader();
            let (a, b) = lanes(&roster);
            let fresh = service("web").with_class("example.com/b");
            let expected = if served { Decision::Ensure } else { Decision::Ignore };
            assert_eq!((a.decide(&fresh), b.decide(&fresh)), (Decision::Ignore, expected), "{labels:?}");
            assert_eq!(
                roster.class_provider(&fresh).map(|(name, ok)| (name.to_string(), ok)),
                Some(("b".into(), served))
            );
            let ensured = owned_by(service("db").with_class("example.com/b"), "b");
            let expected = if served { Decision::Ensure } else { Decision::Keep };
            assert_eq!(b.decide(&ensured), expected, "{labels:?}: kept, not deleted");
            assert_eq!(b.decide(&deleting(ensured)), Decision::Delete, "and deleted with the Service");
        }
        let roster = roster();
        let b = Claim::new("b".into(), roster.clone());
        let _writer = in_namespaces(&roster, &[("lb", "b")]);
        let unknown = service("web").with_class("example.com/b");
        assert_eq!(b.decide(&unknown), Decision::Ignore, "a namespace not seen yet is not served");
    }
}
