//! The providers serving, kept in step with the plans offered.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::Cloud;
use wasm_ccm_controllers::{Member, Members, Serves};

use crate::loader::{BoxError, LoadFailure, Loader, error_chain};
use crate::planned::Planned;

/// A plan offered while the fleet serves: a new version of the providers
/// file, read.
pub struct Offer<S> {
    /// Where it came from, for logs and events.
    pub origin: String,
    /// Its providers, or why it could not be read.
    pub plan: Result<Vec<Planned<S>>, BoxError>,
}

/// Why an offered plan was refused whole; the providers serving keep
/// serving.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// It could not be read.
    #[error("{}", error_chain(.0.as_ref()))]
    Invalid(BoxError),
    /// It moves the nodes or routes to another provider, or away. The
    /// controllers using them were planned for the provider serving them.
    #[error("the provider serving {what} changes from {} to {} only with a restart", .before.as_deref().unwrap_or("none"), .after.as_deref().unwrap_or("none"))]
    Fixed {
        /// `nodes` or `routes`.
        what: &'static str,
        /// The provider serving them.
        before: Option<String>,
        /// The provider the plan gives them to.
        after: Option<String>,
    },
}

/// What the fleet did with an offer, beyond its logs: for the events an
/// operator reads.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// An offer was refused whole.
    Refused {
        /// Where it came from.
        origin: &'a str,
        /// Why.
        reason: &'a Refusal,
    },
    /// A provider serves as the plan says: added, or loaded anew.
    Serving {
        /// The provider.
        name: &'a str,
    },
    /// A provider of the plan did not load; what served under its name
    /// before, if anything, serves on.
    Failed(&'a LoadFailure),
    /// A provider left the plan; its load balancers stay.
    Left {
        /// The provider.
        name: &'a str,
    },
}

/// The providers could not all be loaded at start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The one provider did not load.
    #[error("cannot load the provider {}: {}", .0.name, error_chain(.0.reason.as_ref()))]
    One(LoadFailure),
    /// Some of several providers did not load.
    #[error("cannot load the providers:\n  - {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  - "))]
    Some(Vec<LoadFailure>),
}

/// A provider serving: what the members do not say of it. Its cloud and
/// policy are its member's.
struct Running<L: Loader> {
    /// What it was loaded from and planned to serve (before it was fitted
    /// to what it supports), to tell what an offer changes.
    spec: L::Spec,
    serves: Serves,
    stop: CancellationToken,
}

/// A load started by an offer, finished.
struct Loaded<L: Loader> {
    planned: Planned<L::Spec>,
    /// Which of the loads started for this name it is: only the latest
    /// may serve.
    load: u64,
    outcome: Result<(L::Cloud, Serves, CancellationToken), LoadFailure>,
}

/// The providers serving, each loaded and kept up to date by its own
/// [`Loader`] task, and the channel the controllers follow them by.
pub struct Fleet<L: Loader> {
    loader: L,
    running: BTreeMap<Arc<str>, Running<L>>,
    /// The latest load started for each name still planned.
    loading: BTreeMap<Arc<str>, u64>,
    loads: u64,
    members: watch::Sender<Members<L::Cloud>>,
    stop: CancellationToken,
}

impl<L: Loader> Fleet<L> {
    /// Loads every provider of `planned` at once, each kept up to date
    /// until `stop`.
    ///
    /// # Errors
    /// Every provider that did not load, and why; then none serves.
    pub async fn start(loader: L, planned: Vec<Planned<L::Spec>>, stop: CancellationToken) -> Result<Self, StartError> {
        let loads: Vec<_> =
            planned.into_iter().map(|planned| load(loader.clone(), planned, None, stop.child_token())).collect();
        let mut fleet = Fleet {
            loader,
            running: BTreeMap::new(),
            loading: BTreeMap::new(),
            loads: 0,
            members: watch::Sender::new(Members::new()),
            stop,
        };
        let mut failures = Vec::new();
        for (planned, outcome) in futures::future::join_all(loads).await {
            match outcome {
                Ok((cloud, serves, stop)) => fleet.serve(planned, cloud, serves, stop),
                Err(failure) => failures.push(failure),
            }
        }
        if failures.is_empty() {
            return Ok(fleet);
        }
        fleet.stop.cancel();
        Err(match (failures.len(), fleet.running.is_empty()) {
            (1, true) => StartError::One(failures.remove(0)),
            _ => StartError::Some(failures),
        })
    }

    /// The providers and what each serves, as the controllers follow them.
    pub fn members(&self) -> watch::Receiver<Members<L::Cloud>> {
        self.members.subscribe()
    }

    /// Follows the plans `offers` gives until the fleet's stop or their
    /// end: a plan that cannot be read, or that moves the nodes or routes,
    /// is refused whole, and the providers serving keep serving. Each
    /// provider added or re-configured loads on its own while the others
    /// serve on; one that left stops being followed, its load balancers
    /// left as they are. `observe` hears of each change.
    pub async fn follow<O>(mut self, mut offers: O, mut observe: impl FnMut(Outcome<'_>) + Send)
    where
        O: Stream<Item = Offer<L::Spec>> + Send + Unpin,
    {
        let (finished, mut loaded) = mpsc::unbounded_channel();
        loop {
            tokio::select! {
                () = self.stop.cancelled() => return,
                offer = offers.next() => match offer {
                    Some(offer) => self.offered(offer, &finished, &mut observe),
                    None => return,
                },
                Some(done) = loaded.recv() => self.loaded(done, &mut observe),
            }
        }
    }

    fn offered(
        &mut self,
        offer: Offer<L::Spec>,
        finished: &mpsc::UnboundedSender<Loaded<L>>,
        observe: &mut impl FnMut(Outcome<'_>),
    ) {
        let plan = match offer.plan.map_err(Refusal::Invalid).and_then(|plan| self.check_fixed(&plan).map(|()| plan)) {
            Ok(plan) => plan,
            Err(reason) => {
                tracing::warn!(origin = %offer.origin, "refused a providers file change; the providers serving keep serving: {reason}");
                observe(Outcome::Refused { origin: &offer.origin, reason: &reason });
                return;
            }
        };
        let gone: Vec<Arc<str>> = self
            .running
            .keys()
            .chain(self.loading.keys())
            .filter(|name| !plan.iter().any(|planned| planned.name == **name))
            .cloned()
            .collect();
        for name in gone {
            self.loading.remove(&name);
            if let Some(running) = self.running.remove(&name) {
                tracing::info!(provider = %name, "the provider left the providers file; its load balancers stay");
                running.stop.cancel();
                self.members.send_modify(|members| {
                    members.remove(&name);
                });
                observe(Outcome::Left { name: &name });
            }
        }
        for planned in plan {
            let member = self.members.borrow().get(&planned.name).cloned();
            let serving = match (self.running.get_mut(&planned.name), member) {
                (Some(running), Some(member)) if running.spec != planned.spec => Some(member.cloud),
                (Some(running), Some(member)) => {
                    self.loading.remove(&planned.name);
                    if running.serves != planned.serves || member.load_balancers != planned.load_balancers {
                        tracing::info!(provider = %planned.name, serves = ?planned.serves, policy = ?planned.load_balancers, "the provider serves load balancers otherwise now");
                        running.serves = planned.serves.clone();
                        self.members.send_modify(|members| {
                            if let Some(member) = members.get_mut(&planned.name) {
                                member.serves = planned.serves;
                                member.load_balancers = planned.load_balancers;
                            }
                        });
                    }
                    continue;
                }
                _ => None,
            };
            self.loads += 1;
            self.loading.insert(planned.name.clone(), self.loads);
            let (loader, stop, finished, number) =
                (self.loader.clone(), self.stop.child_token(), finished.clone(), self.loads);
            tokio::spawn(async move {
                let (planned, outcome) = load(loader, planned, serving, stop).await;
                let _ = finished.send(Loaded { planned, load: number, outcome });
            });
        }
    }

    /// Refuses a plan that moves the nodes or the routes: the controllers
    /// using them were planned for the provider serving them.
    fn check_fixed(&self, plan: &[Planned<L::Spec>]) -> Result<(), Refusal> {
        let members = self.members.borrow();
        for (what, serves) in
            [("nodes", (|serves: &Serves| serves.nodes) as fn(&Serves) -> bool), ("routes", |serves| serves.routes)]
        {
            let before = members.iter().find(|(_, member)| serves(&member.serves)).map(|(name, _)| name.to_string());
            let after = plan.iter().find(|planned| serves(&planned.serves)).map(|planned| planned.name.to_string());
            if before != after {
                return Err(Refusal::Fixed { what, before, after });
            }
        }
        Ok(())
    }

    fn loaded(&mut self, done: Loaded<L>, observe: &mut impl FnMut(Outcome<'_>)) {
        let Loaded { planned, load, outcome } = done;
        let latest = self.loading.get(&planned.name) == Some(&load);
        match outcome {
            Ok((_, _, stop)) if !latest || self.stop.is_cancelled() => {
                tracing::info!(provider = %planned.name, "a later providers file superseded this load");
                stop.cancel();
            }
            Ok((cloud, serves, stop)) => {
                self.loading.remove(&planned.name);
                let name = planned.name.clone();
                self.serve(planned, cloud, serves, stop);
                tracing::info!(provider = %name, "the provider serves from the providers file");
                observe(Outcome::Serving { name: &name });
            }
            Err(failure) => {
                if latest {
                    self.loading.remove(&planned.name);
                }
                tracing::warn!(provider = %failure.name, "the provider of the providers file did not load: {}", error_chain(failure.reason.as_ref()));
                observe(Outcome::Failed(&failure));
            }
        }
    }

    /// Puts `cloud` in service as `planned` says, in place of whatever
    /// served under its name.
    fn serve(&mut self, planned: Planned<L::Spec>, cloud: L::Cloud, serves: Serves, stop: CancellationToken) {
        let member = Member { cloud, serves, load_balancers: planned.load_balancers };
        self.members.send_modify(|members| {
            members.insert(planned.name.clone(), member);
        });
        let running = Running { spec: planned.spec, serves: planned.serves, stop };
        if let Some(previous) = self.running.insert(planned.name, running) {
            previous.stop.cancel();
        }
    }
}

/// Loads `planned` (into `serving`, when it re-configures a provider
/// serving) and checks it supports what it is to serve; what keeps it up
/// to date runs until `token` is cancelled, which the fleet does when it
/// stops following the provider.
async fn load<L: Loader>(
    loader: L,
    planned: Planned<L::Spec>,
    serving: Option<L::Cloud>,
    token: CancellationToken,
) -> (Planned<L::Spec>, Result<(L::Cloud, Serves, CancellationToken), LoadFailure>) {
    let loaded = loader.load(&planned.name, planned.spec.clone(), serving, token.clone()).await;
    let outcome = loaded.and_then(|cloud| match planned.serving(&cloud.info().parts) {
        Ok(serves) => Ok((cloud, serves, token.clone())),
        Err(unsupported) => {
            token.cancel();
            Err(Box::new(unsupported) as BoxError)
        }
    });
    let outcome = outcome.map_err(|reason| LoadFailure { name: planned.name.to_string(), reason });
    (planned, outcome)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use futures::channel::mpsc as offers;
    use tokio::sync::Semaphore;
    use wasm_ccm_cloud::Parts;
    use wasm_ccm_cloud::testing::TestCloud;
    use wasm_ccm_controllers::LoadBalancerPolicy;

    use super::*;

    /// What a test provider is loaded from: its version names the cloud it
    /// loads (`instance_id("version")` answers it).
    #[derive(Debug, Clone, PartialEq)]
    struct Spec {
        version: u32,
        parts: Parts,
        broken: bool,
    }

    fn spec(version: u32) -> Spec {
        Spec { version, parts: Parts::ALL, broken: false }
    }

    /// One call of the loader, as the test sees it.
    #[derive(Debug, Clone)]
    struct Load {
        name: String,
        version: u32,
        into: bool,
        stop: CancellationToken,
    }

    /// Loads [`TestCloud`]s; a name that is held waits for its release.
    #[derive(Clone, Default)]
    struct TestLoader {
        loads: Arc<Mutex<Vec<Load>>>,
        held: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    }

    impl TestLoader {
        fn hold(&self, name: &str) -> Arc<Semaphore> {
            let gate = Arc::new(Semaphore::new(0));
            self.held.lock().unwrap().insert(name.to_owned(), gate.clone());
            gate
        }

        fn loads(&self) -> Vec<Load> {
            self.loads.lock().unwrap().clone()
        }
    }

    impl Loader for TestLoader {
        type Spec = Spec;
        type Cloud = TestCloud;

        async fn load(
            &self,
            name: &str,
            spec: Spec,
            serving: Option<TestCloud>,
            stop: CancellationToken,
        ) -> Result<TestCloud, BoxError> {
            let load = Load { name: name.to_owned(), version: spec.version, into: serving.is_some(), stop };
            self.loads.lock().unwrap().push(load);
            let gate = self.held.lock().unwrap().get(name).cloned();
            if let Some(gate) = gate {
                let _released = gate.acquire().await;
            }
            if spec.broken {
                return Err("the component is not a provider".into());
            }
            let version = format!("v{}", spec.version);
            Ok(TestCloud::default().with_parts(spec.parts).with_instance("version", &version, "192.0.2.1"))
        }
    }

    fn planned(name: &str, spec: Spec, serves: Serves) -> Planned<Spec> {
        Planned {
            name: Arc::from(name),
            spec,
            serves,
            load_balancers: LoadBalancerPolicy::default(),
            fit_to_support: false,
        }
    }

    fn classes(classes: &[&str]) -> Serves {
        Serves { load_balancer_classes: classes.iter().map(|class| (*class).to_owned()).collect(), ..Serves::default() }
    }

    fn nodes() -> Serves {
        Serves { nodes: true, ..Serves::default() }
    }

    /// The version each provider serves, by name.
    async fn serving(members: &watch::Receiver<Members<TestCloud>>) -> Vec<(String, String)> {
        let members: Vec<_> =
            members.borrow().iter().map(|(name, member)| (name.to_string(), member.cloud.clone())).collect();
        let mut serving = Vec::new();
        for (name, cloud) in members {
            serving.push((name, cloud.instance_id("version").await.expect("a test cloud")));
        }
        serving
    }

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(name, version)| ((*name).to_owned(), (*version).to_owned())).collect()
    }

    /// A fleet following offers sent on the returned sender, its outcomes
    /// arriving on the returned receiver.
    fn following(
        fleet: Fleet<TestLoader>,
    ) -> (offers::UnboundedSender<Offer<Spec>>, mpsc::UnboundedReceiver<String>, watch::Receiver<Members<TestCloud>>)
    {
        let members = fleet.members();
        let (offer, offered) = offers::unbounded();
        let (outcome, outcomes) = mpsc::unbounded_channel();
        tokio::spawn(fleet.follow(offered, move |happened: Outcome<'_>| {
            let text = match happened {
                Outcome::Refused { reason, .. } => format!("refused: {reason}"),
                Outcome::Serving { name } => format!("serving {name}"),
                Outcome::Failed(failure) => format!("failed: {failure}"),
                Outcome::Left { name } => format!("left {name}"),
            };
            let _ = outcome.send(text);
        }));
        (offer, outcomes, members)
    }

    /// A fleet started with provider `a`, version 1, serving `a/lb`.
    async fn serving_a(loader: &TestLoader) -> Fleet<TestLoader> {
        let plan = vec![planned("a", spec(1), classes(&["a/lb"]))];
        Fleet::start(loader.clone(), plan, CancellationToken::new()).await.unwrap()
    }

    fn offer(plan: Vec<Planned<Spec>>) -> Offer<Spec> {
        Offer { origin: "test".to_owned(), plan: Ok(plan) }
    }

    #[tokio::test]
    async fn every_provider_loads_at_start() {
        let loader = TestLoader::default();
        let plan = vec![planned("a", spec(1), classes(&["a/lb"])), planned("b", spec(1), nodes())];
        let fleet = Fleet::start(loader.clone(), plan, CancellationToken::new()).await.unwrap();
        let members = fleet.members();
        assert_eq!(serving(&members).await, pairs(&[("a", "v1"), ("b", "v1")]));
        assert_eq!(members.borrow()["b"].serves, nodes());
        assert!(loader.loads().iter().all(|load| !load.into && !load.stop.is_cancelled()));
    }

    #[tokio::test]
    async fn a_start_with_a_provider_that_does_not_load_fails_whole() {
        let loader = TestLoader::default();
        let broken = Spec { broken: true, ..spec(1) };
        let alone = Fleet::start(loader.clone(), vec![planned("a", broken.clone(), nodes())], CancellationToken::new());
        let err = alone.await.err().expect("refused");
        assert_eq!(err.to_string(), "cannot load the provider a: the component is not a provider");

        let plan = vec![planned("a", spec(1), classes(&["a/lb"])), planned("b", broken, nodes())];
        let err = Fleet::start(loader.clone(), plan, CancellationToken::new()).await.err().expect("refused");
        assert_eq!(err.to_string(), "cannot load the providers:\n  - provider b: the component is not a provider");
        let a = loader.loads().into_iter().find(|load| load.name == "a").unwrap();
        assert!(a.stop.is_cancelled(), "the provider that loaded stops with the rest");
    }

    #[tokio::test]
    async fn a_provider_serves_what_it_supports_or_is_refused() {
        let loader = TestLoader::default();
        let no_routes = Spec { parts: Parts { routes: false, ..Parts::ALL }, ..spec(1) };
        let fitted = Planned { fit_to_support: true, ..planned("one", no_routes.clone(), Serves::everything()) };
        let fleet = Fleet::start(loader.clone(), vec![fitted], CancellationToken::new()).await.unwrap();
        let serves = fleet.members().borrow()["one"].serves.clone();
        assert_eq!(serves, Serves { routes: false, ..Serves::everything() });

        let entry = planned("a", no_routes, Serves { routes: true, ..Serves::default() });
        let err = Fleet::start(loader.clone(), vec![entry], CancellationToken::new()).await.err().expect("refused");
        assert_eq!(err.to_string(), "cannot load the provider a: it is to serve routes but does not support them");
        assert!(loader.loads().last().unwrap().stop.is_cancelled(), "the provider refused stops");
    }

    #[tokio::test]
    async fn providers_are_added_reloaded_and_removed_while_the_others_serve() {
        let loader = TestLoader::default();
        let start = vec![planned("a", spec(1), classes(&["a/lb"])), planned("n", spec(1), nodes())];
        let fleet = Fleet::start(loader.clone(), start, CancellationToken::new()).await.unwrap();
        let (offers, mut outcomes, members) = following(fleet);

        let a2 = planned("a", spec(2), classes(&["a/lb"]));
        let b = planned("b", spec(1), classes(&["b/lb"]));
        offers.unbounded_send(offer(vec![a2.clone(), b, planned("n", spec(1), nodes())])).unwrap();
        let mut heard = vec![outcomes.recv().await.unwrap(), outcomes.recv().await.unwrap()];
        heard.sort();
        assert_eq!(heard, ["serving a", "serving b"]);
        assert_eq!(serving(&members).await, pairs(&[("a", "v2"), ("b", "v1"), ("n", "v1")]));
        let loads = loader.loads();
        let a_loads: Vec<_> = loads.iter().filter(|load| load.name == "a").collect();
        assert!(a_loads[1].into && a_loads[1].version == 2, "a re-configured provider loads into the one serving");
        assert!(a_loads[0].stop.is_cancelled() && !a_loads[1].stop.is_cancelled());
        assert_eq!(loads.iter().filter(|load| load.name == "n").count(), 1, "the unchanged provider is not reloaded");

        offers.unbounded_send(offer(vec![a2, planned("n", spec(1), nodes())])).unwrap();
        assert_eq!(outcomes.recv().await.unwrap(), "left b");
        assert_eq!(serving(&members).await, pairs(&[("a", "v2"), ("n", "v1")]));
        let b_load = loader.loads().into_iter().find(|load| load.name == "b").unwrap();
        assert!(b_load.stop.is_cancelled(), "a provider that left is no longer followed");
    }

    #[tokio::test]
    async fn a_change_of_load_balancing_alone_reaches_the_provider_serving_without_a_reload() {
        let loader = TestLoader::default();
        let fleet = serving_a(&loader).await;
        let (offers, mut outcomes, mut members) = following(fleet);
        members.mark_unchanged();

        offers.unbounded_send(offer(vec![planned("a", spec(1), classes(&["a/lb", "a/internal"]))])).unwrap();
        members.changed().await.unwrap();
        assert_eq!(members.borrow()["a"].serves, classes(&["a/lb", "a/internal"]));
        assert_eq!(loader.loads().len(), 1, "not reloaded");
        offers.unbounded_send(Offer { origin: "test".into(), plan: Err("stop here".into()) }).unwrap();
        assert_eq!(outcomes.recv().await.unwrap(), "refused: stop here", "no outcome for the change itself");
    }

    #[tokio::test]
    async fn a_plan_that_cannot_be_read_or_moves_the_nodes_is_refused_whole() {
        let loader = TestLoader::default();
        let start = vec![planned("a", spec(1), classes(&["a/lb"])), planned("n", spec(1), nodes())];
        let fleet = Fleet::start(loader.clone(), start, CancellationToken::new()).await.unwrap();
        let (offers, mut outcomes, members) = following(fleet);

        offers.unbounded_send(Offer { origin: "test".into(), plan: Err("not a providers file".into()) }).unwrap();
        assert_eq!(outcomes.recv().await.unwrap(), "refused: not a providers file");
        let moved = vec![
            planned("a", spec(2), Serves { nodes: true, ..classes(&["a/lb"]) }),
            planned("n", spec(1), classes(&["n/lb"])),
        ];
        offers.unbounded_send(offer(moved)).unwrap();
        assert_eq!(
            outcomes.recv().await.unwrap(),
            "refused: the provider serving nodes changes from n to a only with a restart"
        );
        offers.unbounded_send(offer(vec![planned("a", spec(2), classes(&["a/lb"]))])).unwrap();
        assert_eq!(
            outcomes.recv().await.unwrap(),
            "refused: the provider serving nodes changes from n to none only with a restart"
        );
        assert_eq!(serving(&members).await, pairs(&[("a", "v1"), ("n", "v1")]));
        assert_eq!(loader.loads().len(), 2, "nothing of a refused plan loads");
    }

    #[tokio::test]
    async fn a_provider_that_does_not_load_leaves_the_one_serving_in_place() {
        let loader = TestLoader::default();
        let fleet = serving_a(&loader).await;
        let (offers, mut outcomes, members) = following(fleet);
        let broken = Spec { broken: true, ..spec(2) };
        offers.unbounded_send(offer(vec![planned("a", broken, classes(&["a/lb"]))])).unwrap();
        assert_eq!(outcomes.recv().await.unwrap(), "failed: provider a: the component is not a provider");
        assert_eq!(serving(&members).await, pairs(&[("a", "v1")]));
        assert!(!loader.loads()[0].stop.is_cancelled(), "the provider serving is still followed");
    }

    #[tokio::test]
    async fn only_the_latest_plan_s_load_serves() {
        let loader = TestLoader::default();
        let fleet = serving_a(&loader).await;
        let (offers, mut outcomes, members) = following(fleet);
        let gate = loader.hold("b");
        offers
            .unbounded_send(offer(vec![
                planned("a", spec(1), classes(&["a/lb"])),
                planned("b", spec(1), classes(&["b/lb"])),
            ]))
            .unwrap();
        offers.unbounded_send(offer(vec![planned("a", spec(1), classes(&["a/lb"]))])).unwrap();
        offers.unbounded_send(offer(vec![planned("a", spec(2), classes(&["a/lb"]))])).unwrap();
        assert_eq!(outcomes.recv().await.unwrap(), "serving a");
        gate.add_permits(1);
        let superseded = async {
            while !loader.loads().iter().any(|load| load.name == "b" && load.stop.is_cancelled()) {
                tokio::task::yield_now().await;
            }
        };
        let waited = tokio::time::timeout(std::time::Duration::from_secs(5), superseded).await;
        assert!(waited.is_ok(), "the load of b, which left the plan, is stopped when it finishes");
        assert_eq!(serving(&members).await, pairs(&[("a", "v2")]), "b left the plan while it loaded");
        assert!(outcomes.try_recv().is_err(), "{:?}", outcomes.try_recv());
    }
}
