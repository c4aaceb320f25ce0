//! One service controller per provider serving load balancers, a lane each:
//! its own queue, workers, node sync and memory, so that a slow, stuck or
//! busy provider holds only its own workers and a long queue of one
//! provider's Services never delays another's. Lanes start and stop as
//! providers come and go, each on its own.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use k8s_openapi::api::core::v1::{Namespace, Node, Service};
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::Cloud;

use super::claim::{Claim, Roster};
use super::key::ServiceKey;
use super::node_changes::NodeChanges;
use super::rules::PROVIDER_ANNOTATION;
use super::{ServiceController, ServiceTriggers};
use crate::framework::caches::{OnDemand, Watcher};
use crate::framework::config::ControllerName;
use crate::framework::context::Context;
use crate::framework::driver::Controller;
use crate::framework::runner::Stopped;
use crate::nodes::cache::NodeCache;
use crate::providers::members::{Member, Members};
use crate::providers::policy::LoadBalancerPolicy;
use wasm_ccm_kube::events::Events;
use wasm_ccm_kube::informer::Change;

/// What feeds the lanes; clones share it.
#[derive(Clone)]
pub(crate) struct LaneTriggers {
    lanes: Arc<RwLock<BTreeMap<Arc<str>, ServiceTriggers>>>,
    roster: Roster,
    events: Events,
    services: Store<Service>,
    nodes: NodeCache,
    /// What of each node the load balancers' node sets depend on.
    node_changes: Arc<Mutex<NodeChanges>>,
    /// Each namespace's labels, to tell which changed.
    namespaces: Arc<Mutex<NamespaceLabels>>,
    /// Starts the namespaces' watch, once a provider picks by namespace.
    watch_namespaces: OnDemand,
    /// The warnings given about Services, by Service and reason: each is
    /// given once, and again only after what it warned about cleared, so
    /// that re-lists do not repeat it.
    warned: Arc<Mutex<HashSet<(ServiceKey, &'static str)>>>,
}

/// The namespaces' labels as last seen, and whether they were listed.
#[derive(Default)]
struct NamespaceLabels {
    labels: BTreeMap<String, BTreeMap<String, String>>,
    listed: bool,
}

impl Watcher for LaneTriggers {
    /// Tells every lane when the nodes changed in a way that concerns
    /// load balancers.
    fn node(&self, change: &Change<Node>) {
        let present = |name: &str| self.nodes.store().get(&ObjectRef::new(name)).is_some();
        let concerns =
            self.node_changes.lock().unwrap_or_else(PoisonError::into_inner).concern_load_balancers(change, present);
        if concerns {
            self.nodes_changed();
        }
    }

    fn service(&self, change: &Change<Service>) {
        self.observe(change);
    }

    /// Has the lanes reconsider the Services of a namespace whose labels
    /// changed, and every Service once the namespaces are first listed.
    fn namespace(&self, change: &Change<Namespace>) {
        let relabelled = self.namespaces.lock().unwrap_or_else(PoisonError::into_inner).relabelled(change);
        match relabelled {
            Some(Relabelled::One(name)) => self.namespace_changed(Some(&name)),
            Some(Relabelled::All) => self.namespace_changed(None),
            None => {}
        }
    }
}

/// Which namespaces' labels a change made known anew.
#[derive(Debug, PartialEq, Eq)]
enum Relabelled {
    /// That one's, which changed.
    One(String),
    /// Every one's: they were listed for the first time.
    All,
}

impl NamespaceLabels {
    /// Takes note of `change`: the namespace whose labels it changed, once
    /// the namespaces were first listed, and all of them then, since what
    /// was decided before did not know them.
    fn relabelled(&mut self, change: &Change<Namespace>) -> Option<Relabelled> {
        match change {
            Change::Applied(namespace) => {
                let name = namespace.metadata.name.clone().unwrap_or_default();
                let current = namespace.metadata.labels.clone().unwrap_or_default();
                let differs = self.labels.insert(name.clone(), current.clone()).is_none_or(|before| before != current);
                (differs && self.listed).then_some(Relabelled::One(name))
            }
            Change::Deleted(namespace) => {
                self.labels.remove(namespace.metadata.name.as_deref().unwrap_or_default());
                None
            }
            Change::Resynced => (!std::mem::replace(&mut self.listed, true)).then_some(Relabelled::All),
        }
    }
}

impl LaneTriggers {
    fn each(&self, mut visit: impl FnMut(&ServiceTriggers)) {
        self.lanes.read().unwrap_or_else(|poisoned| poisoned.into_inner()).values().for_each(&mut visit);
    }

    fn insert(&self, provider: Arc<str>, triggers: ServiceTriggers) {
        self.lanes.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(provider, triggers);
    }

    fn remove(&self, provider: &str) {
        self.lanes.write().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(provider);
    }

    /// Decides by what `members` serve from now on, watching the namespaces
    /// from when one picks Services by namespace.
    fn set_roster<C>(&self, members: &Members<C>) {
        self.roster.set(roster(members));
        if self.roster.selects_namespaces() {
            self.watch_namespaces.start();
        }
    }

    /// Replaces the policy of `provider`'s lane, if it runs one.
    fn set_policy(&self, provider: &str, policy: &LoadBalancerPolicy) {
        if let Some(triggers) = self.lanes.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(provider) {
            triggers.set_policy(policy.clone());
        }
    }

    /// Hands a change of a Service to every lane.
    pub(crate) fn observe(&self, change: &Change<Service>) {
        self.roster.addresses().observe(change, || self.services.state());
        match change {
            Change::Applied(service) => {
                self.warn_if_stray(service);
                self.warn_if_mislabelled(service);
                self.warn_if_outside(service);
            }
            Change::Deleted(service) => {
                let key = ObjectRef::from_obj(&**service);
                self.warned().retain(|(warned, _)| *warned != key);
            }
            Change::Resynced => {}
        }
        self.each(|triggers| triggers.observe(change.clone()));
    }

    /// Whether a provider picks Services by their namespace's labels.
    fn selects_namespaces(&self) -> bool {
        self.roster.selects_namespaces()
    }

    /// Has every lane reconsider the Services of `namespace` (of every
    /// namespace: `None`), whose labels changed, when a provider picks
    /// Services by their namespace.
    fn namespace_changed(&self, namespace: Option<&str>) {
        if !self.roster.selects_namespaces() {
            return;
        }
        for service in self.services.state() {
            if namespace.is_none_or(|namespace| service.metadata.namespace.as_deref() == Some(namespace)) {
                self.warn_if_outside(&service);
                self.each(|triggers| triggers.reconsider(&service));
            }
        }
    }

    fn warned(&self) -> std::sync::MutexGuard<'_, HashSet<(ServiceKey, &'static str)>> {
        self.warned.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Tells every lane that the nodes changed.
    fn nodes_changed(&self) {
        self.each(ServiceTriggers::nodes_changed);
    }

    /// Gives the Warning `reason` about `service` with `note`, once until
    /// it is given no note, when what it warns about cleared.
    fn warn_once(&self, service: &Service, reason: &'static str, note: Option<String>) {
        let key = (ObjectRef::from_obj(service), reason);
        let Some(note) = note else {
            self.warned().remove(&key);
            return;
        };
        let first = self.warned().insert(key);
        if first {
            self.events.warning(service.object_ref(&()), reason, note);
        }
    }

    /// Warns about a Service whose load balancer's provider is no longer
    /// configured while no other serves its class: the load balancer stays
    /// as it is.
    fn warn_if_stray(&self, service: &Service) {
        let note = (|| {
            let spec = service.spec.as_ref().filter(|spec| spec.type_.as_deref() == Some("LoadBalancer"))?;
            let owner = self.roster.owner(service)?;
            if self.roster.is_configured(&owner) || self.roster.target(service).is_some() {
                return None;
            }
            let class = spec.load_balancer_class.as_deref().unwrap_or("(none)");
            Some(format!(
                "Provider {owner}, which made the load balancer, is not configured: the load balancer is kept until \
                 a provider serves load balancer class {class}"
            ))
        })();
        self.warn_once(service, "LoadBalancerProviderNotConfigured", note);
    }

    /// Warns about a Service whose annotation names another provider than
    /// the one recorded as its load balancer's: the recorded one keeps
    /// acting on it, and writes the annotation back when it ensures it.
    fn warn_if_mislabelled(&self, service: &Service) {
        let note = self.roster.mismatch(service).map(|(owner, named)| {
            format!(
                "The annotation {PROVIDER_ANNOTATION} names provider {named}, but provider {owner} made the load \
                 balancer: only {owner} acts on it"
            )
        });
        self.warn_once(service, "LoadBalancerProviderMismatch", note);
    }

    /// Warns about a Service of a class a provider serves but in a
    /// namespace it does not serve, that has no load balancer: it gets
    /// none.
    fn warn_if_outside(&self, service: &Service) {
        let outside = service.metadata.deletion_timestamp.is_none()
            && self.roster.owner(service).is_none()
            && self.roster.class_provider(service).is_some_and(|(_, in_namespace)| !in_namespace);
        let note = outside.then(|| {
            let (provider, _) = self.roster.class_provider(service).unwrap_or_default();
            let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
            format!("Provider {provider} does not serve namespace {namespace}: no load balancer is made")
        });
        self.warn_once(service, "LoadBalancerNamespaceNotServed", note);
    }
}

/// Starts, stops and feeds the lanes.
pub(crate) struct ServiceLanes<C: Cloud> {
    /// The service controller's context, whose cloud, events and metrics
    /// each lane replaces with its provider's.
    base: Context<C>,
    services: Store<Service>,
    triggers: LaneTriggers,
    /// Lanes made before the caches synced, to start with the others.
    made: Vec<(Arc<str>, ServiceController<C>)>,
    running: BTreeMap<Arc<str>, CancellationToken>,
    /// The providers, followed while the lanes run.
    providers: watch::Receiver<Members<C>>,
}

impl<C: Cloud> ServiceLanes<C> {
    /// Lanes for the providers that serve load balancers, made but not
    /// running, deciding by the labels of `namespaces`, whose watch they
    /// start once a provider picks Services by namespace; they follow
    /// `providers` once they run.
    pub(crate) fn new(
        base: Context<C>,
        services: Store<Service>,
        (namespaces, watch_namespaces): (Store<Namespace>, OnDemand),
        providers: watch::Receiver<Members<C>>,
    ) -> Self {
        let triggers = LaneTriggers {
            lanes: Arc::default(),
            roster: Roster::new(namespaces),
            events: base.events.clone(),
            services: services.clone(),
            nodes: base.nodes.clone(),
            node_changes: Arc::default(),
            namespaces: Arc::default(),
            watch_namespaces,
            warned: Arc::default(),
        };
        let members = providers.borrow().clone();
        let mut lanes =
            ServiceLanes { base, services, triggers, made: Vec::new(), running: BTreeMap::new(), providers };
        lanes.triggers.set_roster(&members);
        for (name, member) in members.iter().filter(|(_, member)| member.serves.load_balancers()) {
            let lane = lanes.make(name, member);
            lanes.made.push((name.clone(), lane));
        }
        lanes
    }

    fn make(&self, name: &Arc<str>, member: &Member<C>) -> ServiceController<C> {
        let ctx = Context {
            cloud: member.cloud.clone(),
            events: self.base.events.for_provider(name),
            metrics: self.base.metrics.for_provider(name),
            ..self.base.clone()
        };
        let claim = Claim::new(name.clone(), self.triggers.roster.clone());
        let lane = ServiceController::new(ctx, self.services.clone(), claim, member.load_balancers.clone());
        self.triggers.insert(name.clone(), lane.triggers());
        lane
    }

    fn start(
        &mut self,
        name: Arc<str>,
        lane: ServiceController<C>,
        tasks: &mut JoinSet<Result<(), Stopped>>,
        stop: &CancellationToken,
    ) {
        let token = stop.child_token();
        self.running.insert(name, token.clone());
        tasks.spawn(lane.run(token));
    }

    /// Starts the lanes of providers new to `members`, stops those of
    /// providers gone, and has every lane reconsider every Service for
    /// what the providers now serve.
    fn follow(&mut self, members: &Members<C>, tasks: &mut JoinSet<Result<(), Stopped>>, stop: &CancellationToken) {
        self.triggers.set_roster(members);
        let serving = |name: &str| members.get(name).is_some_and(|member| member.serves.load_balancers());
        let gone: Vec<Arc<str>> = self.running.keys().filter(|name| !serving(name)).cloned().collect();
        for name in gone {
            tracing::info!(provider = %name, "stopping the provider's service controller lane");
            self.triggers.remove(&name);
            if let Some(token) = self.running.remove(&name) {
                token.cancel();
            }
        }
        for (name, member) in members {
            self.triggers.set_policy(name, &member.load_balancers);
            if member.serves.load_balancers() && !self.running.contains_key(name) {
                tracing::info!(provider = %name, "starting a service controller lane for the provider");
                let lane = self.make(name, member);
                let triggers = lane.triggers();
                self.start(name.clone(), lane, tasks, stop);
                for service in self.services.state() {
                    triggers.observe(Change::Applied(service));
                }
            }
        }
        for service in self.services.state() {
            self.triggers.warn_if_stray(&service);
            self.triggers.warn_if_outside(&service);
            self.triggers.each(|triggers| triggers.reconsider(&service));
        }
    }
}

impl<C: Cloud> Controller for ServiceLanes<C> {
    const NAME: ControllerName = ControllerName::Service;

    fn watcher(&self) -> Option<Arc<dyn Watcher>> {
        Some(Arc::new(self.triggers.clone()))
    }

    /// Only a provider that picks Services by their namespace's labels
    /// needs the namespaces listed first: without one, a missing grant for
    /// namespaces holds nothing up.
    fn waits_for_namespaces(&self) -> bool {
        self.triggers.selects_namespaces()
    }

    /// Runs the lanes, starting and stopping them as the providers change.
    async fn run(mut self, stop: CancellationToken) -> Result<(), Stopped> {
        let mut providers = self.providers.clone();
        // The cache is synced: every Service is indexed before any is
        // ensured, whatever the changes still on their way.
        self.triggers.roster.addresses().rebuild(&self.services.state());
        let mut tasks = JoinSet::new();
        for (name, lane) in std::mem::take(&mut self.made) {
            self.start(name, lane, &mut tasks, &stop);
        }
        let mut following = true;
        let outcome = loop {
            tokio::select! {
                () = stop.cancelled() => break Ok(()),
                changed = providers.changed(), if following => match changed {
                    Ok(()) => {
                        let members = providers.borrow_and_update().clone();
                        self.follow(&members, &mut tasks, &stop);
                    }
                    Err(_) => following = false,
                },
                Some(ended) = tasks.join_next() => match ended {
                    Ok(Ok(())) => {}
                    Ok(Err(stopped)) => break Err(stopped),
                    Err(join) => break Err(Stopped { controller: "service", reason: format!("a lane's task failed: {join}") }),
                },
            }
        };
        self.running.values().for_each(CancellationToken::cancel);
        while tasks.join_next().await.is_some() {}
        outcome
    }
}

fn roster<C>(members: &Members<C>) -> BTreeMap<Arc<str>, crate::providers::serves::Serves> {
    members.iter().map(|(name, member)| (name.clone(), member.serves.clone())).collect()
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector::store::Writer;

    use super::*;
    use crate::fixtures::{OwnedFixture, ServiceFixture, TestCloud, TestEnv};
    use crate::providers::serves::Serves;

    fn member(cloud: &TestCloud, default_load_balancer: bool) -> Member<TestCloud> {
        let serves = Serves { default_load_balancer, ..Serves::default() };
        Member { cloud: cloud.clone(), serves, load_balancers: LoadBalancerPolicy::default() }
    }

    #[test]
    fn a_namespace_is_relabelled_when_its_labels_change_after_the_first_list() {
        let namespace = |labels: &[(&str, &str)]| {
            let labels = labels.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect();
            let metadata =
                kube::api::ObjectMeta { name: Some("team-a".into()), labels: Some(labels), ..Default::default() };
            Change::Applied(Arc::new(Namespace { metadata, ..Default::default() }))
        };
        let mut seen = NamespaceLabels::default();
        assert_eq!(seen.relabelled(&namespace(&[("tier", "gold")])), None, "listing is no change");
        assert_eq!(seen.relabelled(&Change::Resynced), Some(Relabelled::All), "the first list tells of them all");
        assert_eq!(seen.relabelled(&Change::Resynced), None, "a list after it is no change");
        assert_eq!(seen.relabelled(&namespace(&[("tier", "gold")])), None, "the same labels again");
        assert_eq!(seen.relabelled(&namespace(&[("tier", "silver")])), Some(Relabelled::One("team-a".to_owned())));
        assert_eq!(seen.relabelled(&namespace(&[])), Some(Relabelled::One("team-a".to_owned())), "a label removed");
    }

    #[tokio::test]
    async fn a_warning_is_given_once_until_what_it_warns_about_clears() {
        let mut env = TestEnv::new(TestCloud::default()).await;
        let members =
            Members::from([(Arc::from("a"), member(&env.cloud, true)), (Arc::from("b"), member(&env.cloud, false))]);
        let (_, providers) = watch::channel(members);
        let lanes = ServiceLanes::new(
            env.context(),
            env.services(),
            (Writer::default().as_reader(), OnDemand::default()),
            providers,
        );
        let triggers = lanes.triggers.clone();
        let ensured = Service::test("web").recorded_as("a").with_annotations(&[(PROVIDER_ANNOTATION, "a")]);
        let mislabelled = ensured.clone().with_annotations(&[(PROVIDER_ANNOTATION, "b")]);
        let applied = |service: &Service| triggers.observe(&Change::Applied(Arc::new(service.clone())));

        applied(&mislabelled);
        applied(&mislabelled);
        applied(&mislabelled);
        assert_eq!(env.event_reasons(), ["LoadBalancerProviderMismatch"], "once, however often re-listed");
        applied(&ensured);
        applied(&mislabelled);
        assert_eq!(env.event_reasons(), ["LoadBalancerProviderMismatch"], "again once it had cleared");
        triggers.observe(&Change::Deleted(Arc::new(mislabelled.clone())));
        applied(&mislabelled);
        assert_eq!(env.event_reasons(), ["LoadBalancerProviderMismatch"], "again for a Service made anew");
    }
}
