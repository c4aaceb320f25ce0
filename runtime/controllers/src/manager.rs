//! Runs the enabled controllers alike: each is made as a
//! [`Controller`](crate::framework::driver::Controller) on the shared caches, hears
//! their changes once they are synced, and runs until the manager stops. A
//! controller that stops on its own stops them all with an error, as
//! upstream's process crashes.
//!
//! The providers can be several, each serving what [`Serves`] says: the
//! service controller runs a lane per provider serving load balancers,
//! started and stopped as providers come and go; the node controllers and
//! the route controller each call the one provider serving them at start.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ipnet::IpNet;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::Cloud;

use crate::cloud_node::CloudNodeController;
use crate::framework::caches::Caches;
use crate::framework::config::{ControllerName, Settings};
use crate::framework::context::Context;
use crate::framework::driver::Described;
use crate::framework::metrics::Metrics;
use crate::framework::runner::Stopped;
use crate::lifecycle::NodeLifecycleController;
use crate::nodes::cache::NodeCache;
use crate::providers::members::{Member, Members};
use crate::providers::policy::LoadBalancerPolicy;
use crate::providers::serves::Serves;
use crate::route::RouteController;
use crate::service::lanes::ServiceLanes;
use wasm_ccm_kube::client::{ClientError, Clients};
use wasm_ccm_kube::events::Events;

/// Why the controllers cannot start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The route controller needs to know the cluster's networks.
    #[error(
        "the route controller needs --cluster-cidr (or disable it with --controllers=*,-route or --configure-cloud-routes=false)"
    )]
    MissingClusterCidr,
    /// The cluster's networks are not one network or a dual-stack pair.
    #[error("invalid --cluster-cidr: {0}")]
    InvalidClusterCidrs(&'static str),
    /// A controller stopped before it was asked to.
    #[error(transparent)]
    Stopped(#[from] Stopped),
    /// A controller's client could not be made.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Whether the caches are synced and the controllers running; clones share
/// it.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Whether the controllers are running on synced caches.
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Release);
    }
}

/// Which of the enabled controllers the manager runs, and why it skips the
/// others.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RunPlan {
    /// Those that run.
    pub active: Vec<ControllerName>,
    /// Those enabled that do not run, with why.
    pub skipped: Vec<(ControllerName, &'static str)>,
}

/// Checks `--cluster-cidr` as upstream: one network, or one of each IP
/// family.
fn check_cluster_cidrs(cidrs: &[IpNet]) -> Result<(), ManagerError> {
    match cidrs {
        [] | [_] => Ok(()),
        [first, second] if matches!(first, IpNet::V4(_)) != matches!(second, IpNet::V4(_)) => Ok(()),
        [_, _] => Err(ManagerError::InvalidClusterCidrs("two networks must be one IPv4 and one IPv6 (dual-stack)")),
        _ => Err(ManagerError::InvalidClusterCidrs("at most two networks, one per IP family")),
    }
}

/// Runs the cloud controllers.
pub struct ControllerManager<C: Cloud> {
    clients: Clients,
    providers: watch::Receiver<Members<C>>,
    settings: Arc<Settings>,
    metrics: Metrics,
    /// Caches started before the manager, which it runs on.
    caches: Option<Caches>,
}

impl<C: Cloud> ControllerManager<C> {
    /// A manager for the controllers `settings` enables, calling `cloud`
    /// for everything under its own name, each controller acting with its
    /// client of `clients`.
    pub fn new(clients: impl Into<Clients>, cloud: C, settings: Settings, metrics: Metrics) -> Self {
        let name = Arc::from(cloud.info().name);
        let (_, providers) = watch::channel(BTreeMap::from([(
            name,
            Member { cloud, serves: Serves::everything(), load_balancers: LoadBalancerPolicy::default() },
        )]));
        Self::with_providers(clients, providers, settings, metrics)
    }

    /// A manager calling the providers `providers` holds, following its
    /// changes: load balancer lanes start and stop as providers come and
    /// go. The node and route controllers call the providers serving them
    /// when the manager starts.
    pub fn with_providers(
        clients: impl Into<Clients>,
        providers: watch::Receiver<Members<C>>,
        settings: Settings,
        metrics: Metrics,
    ) -> Self {
        ControllerManager { clients: clients.into(), providers, settings: Arc::new(settings), metrics, caches: None }
    }

    /// The manager, to run on `caches` rather than start its own when it
    /// runs: caches started while the providers load are full sooner, and
    /// those of a replica waiting to lead are full when it leads.
    #[must_use]
    pub fn with_caches(mut self, caches: Caches) -> Self {
        self.caches = Some(caches);
        self
    }

    /// The provider serving what `serves` picks, by name.
    fn serving(&self, serves: impl Fn(&Serves) -> bool) -> Option<(Arc<str>, C)> {
        let members = self.providers.borrow();
        members
            .iter()
            .find(|(_, member)| serves(&member.serves))
            .map(|(name, member)| (name.clone(), member.cloud.clone()))
    }

    /// The controllers that will run, those enabled whose provider part is
    /// supported, as upstream decides; and those that will not, with why.
    ///
    /// # Errors
    /// When an enabled controller lacks a setting it needs, or has a bad
    /// one.
    pub fn plan(&self) -> Result<RunPlan, ManagerError> {
        let load_balancers = self
            .providers
            .borrow()
            .values()
            .any(|member| member.serves.load_balancers() && member.cloud.info().parts.load_balancer);
        let nodes = self.serving(|serves| serves.nodes).map(|(_, cloud)| cloud.info().parts);
        let routes = self.serving(|serves| serves.routes).map(|(_, cloud)| cloud.info().parts);
        let mut plan = RunPlan::default();
        for controller in self.settings.controllers.iter().copied() {
            let supported = match controller {
                ControllerName::Service => Some(load_balancers),
                ControllerName::CloudNode | ControllerName::CloudNodeLifecycle => {
                    nodes.map(|parts| parts.instances_v2 || parts.instances)
                }
                ControllerName::Route => routes.map(|parts| parts.routes),
            };
            let skipped = if supported.is_none() {
                Some("no provider serves it")
            } else if supported == Some(false) {
                Some("the provider does not support it")
            } else if controller == ControllerName::Route && !self.settings.configure_cloud_routes {
                Some("--configure-cloud-routes=false")
            } else if controller == ControllerName::Route && self.settings.cluster_cidrs.is_empty() {
                if self.settings.route_explicitly_enabled {
                    return Err(ManagerError::MissingClusterCidr);
                }
                Some("no --cluster-cidr")
            } else {
                None
            };
            if skipped.is_none() && controller == ControllerName::Route {
                check_cluster_cidrs(&self.settings.cluster_cidrs)?;
            }
            match skipped {
                Some(reason) => plan.skipped.push((controller, reason)),
                None => plan.active.push(controller),
            }
        }
        Ok(plan)
    }

    /// A controller's context: its own client (until `stop`), its events
    /// reported under upstream's component name, and the provider serving
    /// what `serves` picks, whose name its events and metrics carry.
    async fn context(
        &self,
        nodes: &NodeCache,
        controller: ControllerName,
        stop: &CancellationToken,
        serves: impl Fn(&Serves) -> bool,
    ) -> Result<Context<C>, ManagerError> {
        let (provider, cloud) = self
            .serving(serves)
            .ok_or(Stopped { controller: controller.as_str(), reason: "no provider serves it".to_owned() })?;
        let client = self.clients.controller(controller.service_account(), stop.clone()).await?;
        Ok(Context {
            events: Events::new(client.clone(), controller.event_component()).for_provider(&provider),
            client,
            cloud,
            nodes: nodes.clone(),
            metrics: self.metrics.for_provider(&provider),
            settings: self.settings.clone(),
        })
    }

    /// Makes `controller` on `caches`, to run until `working`; its client
    /// lives until `stop`.
    async fn describe(
        &self,
        controller: ControllerName,
        caches: &mut Caches,
        stop: &CancellationToken,
        working: &CancellationToken,
    ) -> Result<Described, ManagerError> {
        let nodes = caches.nodes().clone();
        let working = working.clone();
        Ok(match controller {
            ControllerName::Service => {
                let context = self.context(&nodes, controller, stop, Serves::load_balancers).await?;
                let (services, namespaces) = (caches.services(), caches.namespaces());
                Described::new(ServiceLanes::new(context, services, namespaces, self.providers.clone()), working)
            }
            ControllerName::CloudNode => {
                let context = self.context(&nodes, controller, stop, |serves| serves.nodes).await?;
                Described::new(CloudNodeController::new(context), working)
            }
            ControllerName::CloudNodeLifecycle => {
                let context = self.context(&nodes, controller, stop, |serves| serves.nodes).await?;
                Described::new(NodeLifecycleController::new(context), working)
            }
            ControllerName::Route => {
                let context = self.context(&nodes, controller, stop, |serves| serves.routes).await?;
                Described::new(RouteController::new(context), working)
            }
        })
    }

    /// Runs the controllers until `stop`, then waits for reconciles in
    /// flight. `readiness` is true while the controllers run on synced
    /// caches.
    ///
    /// # Errors
    /// When the controllers cannot start, or one stopped on its own.
    pub async fn run(mut self, stop: CancellationToken, readiness: Readiness) -> Result<(), ManagerError> {
        let RunPlan { active, skipped } = self.plan()?;
        for (controller, reason) in skipped {
            tracing::info!(controller = %controller, "not starting the controller: {reason}");
        }
        let mut caches = match self.caches.take() {
            Some(caches) => caches,
            None => Caches::start(self.clients.root(), &self.settings, stop.clone()),
        };
        // Stopped by `stop`, or by one of them ending on its own.
        let working = stop.child_token();
        let mut described = Vec::new();
        for controller in active {
            described.push(self.describe(controller, &mut caches, &stop, &working).await?);
        }
        caches.stop_unasked();
        let namespaces = described.iter().any(|controller| controller.waits_for_namespaces);
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            synced = caches.synced(namespaces) => if synced.is_err() { return Ok(()) },
        }
        let names: Vec<&'static str> = described.iter().map(|controller| controller.name.as_str()).collect();
        tracing::info!(controllers = ?names, "caches synced; starting controllers");
        let watchers: Vec<_> = described.iter().filter_map(|controller| controller.watcher.clone()).collect();
        let mut tasks = caches.hand_on(&watchers);
        let mut controllers = JoinSet::new();
        for controller in described {
            controllers.spawn(controller.run);
        }
        for name in &names {
            self.metrics.controller_running(name, true);
        }
        readiness.set(true);
        let mut outcome = Ok(());
        while let Some(ended) = controllers.join_next().await {
            let stopped = match ended {
                Ok(Ok(())) if working.is_cancelled() => continue,
                Ok(Ok(())) => Stopped { controller: "a", reason: "it ended".to_owned() },
                Ok(Err(stopped)) => stopped,
                Err(join) => Stopped { controller: "a", reason: format!("its task failed: {join}") },
            };
            if outcome.is_ok() && !stop.is_cancelled() {
                tracing::error!("{stopped}; stopping every controller");
                readiness.set(false);
                working.cancel();
                outcome = Err(stopped);
            }
        }
        readiness.set(false);
        for name in &names {
            self.metrics.controller_running(name, false);
        }
        tasks.abort_all();
        outcome.map_err(ManagerError::from)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Api, PostParams};
    use wasm_ccm_apiserver::ApiServer;
    use wasm_ccm_cloud::{Function, ProviderError};

    use super::*;
    use crate::fixtures::{ServiceFixture, TestCloud};

    #[tokio::test]
    async fn a_controller_that_panics_stops_them_all_with_an_error() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let services = Api::<Service>::namespaced(client.clone(), "default");
        services.create(&PostParams::default(), &Service::test("web")).await.unwrap();
        let cloud = TestCloud::default();
        cloud.fail(Function::EnsureLoadBalancer, ProviderError::Panic { message: "a bug".into() });
        let manager = ControllerManager::new(client, cloud, Settings::default(), Metrics::default());
        let readiness = Readiness::default();
        let running = manager.run(CancellationToken::new(), readiness.clone());
        let err = tokio::time::timeout(Duration::from_secs(20), running).await.expect("it stops").unwrap_err();
        assert_eq!(err.to_string(), "the service controller stopped: a worker panicked: a bug");
        assert!(!readiness.is_ready());
    }

    #[test]
    fn cluster_cidrs_are_one_network_or_a_dual_stack_pair() {
        let parse = |cidrs: &[&str]| -> Vec<IpNet> { cidrs.iter().map(|cidr| cidr.parse().unwrap()).collect() };
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16"])).is_ok());
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16", "fd00::/56"])).is_ok());
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16", "10.245.0.0/16"])).is_err());
        assert!(check_cluster_cidrs(&parse(&["10.244.0.0/16", "fd00::/56", "fd01::/56"])).is_err());
    }
}

#[cfg(test)]
mod lanes_tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{Event, Namespace, Service};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement, ObjectMeta};
    use kube::api::{Api, ListParams, PostParams};
    use wasm_ccm_apiserver::ApiServer;

    use super::*;
    use crate::fixtures::{ServiceFixture, TestCloud};

    fn member(cloud: &TestCloud, classes: &[&str], default: bool) -> Member<TestCloud> {
        let load_balancer_classes: BTreeSet<String> = classes.iter().map(|class| (*class).to_owned()).collect();
        let serves = Serves {
            load_balancer_classes,
            default_load_balancer: default,
            nodes: default,
            routes: false,
            namespaces: None,
        };
        Member { cloud: cloud.clone(), serves, load_balancers: LoadBalancerPolicy::default() }
    }

    /// Runs the controllers with `a` serving `example.com/a` and Services
    /// without a class, and `b` serving `example.com/b`.
    fn run_two(
        client: &kube::Client,
        a: &TestCloud,
        b: &TestCloud,
    ) -> (watch::Sender<Members<TestCloud>>, CancellationToken, tokio::task::JoinHandle<Result<(), ManagerError>>) {
        let (providers, watched) = watch::channel(Members::from([
            (Arc::from("a"), member(a, &["example.com/a"], true)),
            (Arc::from("b"), member(b, &["example.com/b"], false)),
        ]));
        let manager =
            ControllerManager::with_providers(client.clone(), watched, Settings::default(), Metrics::default());
        let stop = CancellationToken::new();
        let running = tokio::spawn(manager.run(stop.clone(), Readiness::default()));
        (providers, stop, running)
    }

    async fn until(what: &str, check: impl Fn() -> bool) {
        for _ in 0..200 {
            if check() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting for {what}");
    }

    #[tokio::test]
    async fn each_provider_serves_its_classes_and_a_removed_one_keeps_its_load_balancers() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let services = Api::<Service>::namespaced(client.clone(), "default");
        for service in [
            Service::test("web"),
            Service::test("web-a").with_class("example.com/a"),
            Service::test("web-b").with_class("example.com/b"),
            Service::test("web-other").with_class("example.com/other"),
        ] {
            services.create(&PostParams::default(), &service).await.unwrap();
        }
        let (a, b, c) = (TestCloud::default(), TestCloud::default(), TestCloud::default());
        let (providers, stop, running) = run_two(&client, &a, &b);

        until("a's and b's load balancers", || {
            a.load_balancer("default/web").is_some()
                && a.load_balancer("default/web-a").is_some()
                && b.load_balancer("default/web-b").is_some()
        })
        .await;
        assert_eq!(a.load_balancer("default/web-b"), None);
        assert_eq!(b.load_balancer("default/web-a"), None);
        assert!(a.load_balancer("default/web-other").is_none() && b.load_balancer("default/web-other").is_none());
        let web_b = services.get("web-b").await.unwrap();
        assert_eq!(web_b.metadata.annotations.unwrap()[crate::service::rules::PROVIDER_ANNOTATION], "b");

        // b leaves: its load balancer stays, its Service is warned about.
        providers.send_modify(|members| {
            members.remove("b");
        });
        let events = Api::<Event>::namespaced(client.clone(), "default");
        let warned = || async {
            let events = events.list(&ListParams::default()).await.unwrap().items;
            events.iter().any(|event| {
                event.reason.as_deref() == Some("LoadBalancerProviderNotConfigured")
                    && event.involved_object.name.as_deref() == Some("web-b")
            })
        };
        for _ in 0..100 {
            if warned().await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(warned().await, "a warning names the missing provider");
        assert!(b.load_balancer("default/web-b").is_some(), "nothing is deleted");
        assert!(!b.take_calls().iter().any(|call| call.starts_with("delete")));

        // c serves the class now: it takes the Service over.
        providers.send_modify(|members| {
            members.insert(Arc::from("c"), member(&c, &["example.com/b"], false));
        });
        until("c's load balancer", || c.load_balancer("default/web-b").is_some()).await;
        let web_b = services.get("web-b").await.unwrap();
        assert_eq!(web_b.metadata.annotations.unwrap()[crate::service::rules::PROVIDER_ANNOTATION], "c");

        stop.cancel();
        tokio::time::timeout(Duration::from_secs(20), running).await.unwrap().unwrap().unwrap();
    }

    /// Serves Services without a class in the namespaces labelled with
    /// one of `tenants`.
    fn for_tenants(cloud: &TestCloud, tenants: &[&str]) -> Member<TestCloud> {
        let selector = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tenant".into(),
                operator: "In".into(),
                values: Some(tenants.iter().map(|tenant| (*tenant).to_owned()).collect()),
            }]),
            ..LabelSelector::default()
        };
        let namespaces = Some(selector.try_into().expect("a valid selector"));
        Member { serves: Serves { namespaces, ..member(cloud, &[], true).serves }, ..member(cloud, &[], true) }
    }

    #[tokio::test]
    async fn a_namespace_selector_changed_while_running_widens_and_narrows_what_the_provider_serves() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        for tenant in ["a", "b"] {
            let namespace = Namespace {
                metadata: ObjectMeta {
                    name: Some(format!("team-{tenant}")),
                    labels: Some([("tenant".to_owned(), tenant.to_owned())].into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
            let services = Api::<Service>::namespaced(client.clone(), &format!("team-{tenant}"));
            let service = Service::test("web").with_namespace(&format!("team-{tenant}"));
            services.create(&PostParams::default(), &service).await.unwrap();
        }
        let a = TestCloud::default();
        let (providers, watched) = watch::channel(Members::from([(Arc::from("a"), for_tenants(&a, &["a"]))]));
        let manager =
            ControllerManager::with_providers(client.clone(), watched, Settings::default(), Metrics::default());
        let stop = CancellationToken::new();
        let running = tokio::spawn(manager.run(stop.clone(), Readiness::default()));
        until("team-a's load balancer", || a.load_balancer("team-a/web").is_some()).await;
        assert_eq!(a.load_balancer("team-b/web"), None, "team-b is not selected");

        providers.send_modify(|members| *members.get_mut("a").unwrap() = for_tenants(&a, &["a", "b"]));
        until("team-b's load balancer", || a.load_balancer("team-b/web").is_some()).await;

        providers.send_modify(|members| *members.get_mut("a").unwrap() = for_tenants(&a, &["a"]));
        let events = Api::<Event>::namespaced(client.clone(), "team-b");
        let mut reasons = Vec::new();
        for _ in 0..100 {
            let listed = events.list(&ListParams::default()).await.unwrap().items;
            reasons = listed.into_iter().filter_map(|event| event.reason).collect();
            if reasons.iter().any(|reason| reason == "LoadBalancerNamespaceNotServed") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(reasons.iter().any(|reason| reason == "LoadBalancerNamespaceNotServed"), "{reasons:?}");
        assert!(a.load_balancer("team-b/web").is_some(), "a load balancer no provider serves any more stays");
        assert!(!a.take_calls().iter().any(|call| call.starts_with("ensure-deleted")), "nothing is deleted");

        stop.cancel();
        tokio::time::timeout(Duration::from_secs(20), running).await.unwrap().unwrap().unwrap();
    }

    /// Without a provider that picks Services by namespace, nothing asks
    /// for namespaces, so a ClusterRole without them loses nothing; a
    /// provider that starts picking by namespace has them watched from
    /// then, and serves what its selector picks once they are listed.
    #[tokio::test]
    async fn namespaces_are_watched_from_when_a_provider_picks_services_by_namespace() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some("team-a".into()),
                labels: Some([("tenant".to_owned(), "a".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
        let team_a = Api::<Service>::namespaced(client.clone(), "team-a");
        team_a.create(&PostParams::default(), &Service::test("web").with_namespace("team-a")).await.unwrap();
        let classy = Service::test("classy").with_namespace("team-a").with_class("example.com/a");
        team_a.create(&PostParams::default(), &classy).await.unwrap();
        let a = TestCloud::default();
        let by_class = member(&a, &["example.com/a"], false);
        let (providers, watched) = watch::channel(Members::from([(Arc::from("a"), by_class)]));
        let manager =
            ControllerManager::with_providers(client.clone(), watched, Settings::default(), Metrics::default());
        let stop = CancellationToken::new();
        let running = tokio::spawn(manager.run(stop.clone(), Readiness::default()));
        until("the classy load balancer", || a.load_balancer("team-a/classy").is_some()).await;
        let asked = |verb: &str| api.requests().get(verb, "namespaces");
        assert_eq!((asked("list"), asked("watch")), (0, 0), "no provider picks by namespace");
        assert_eq!(a.load_balancer("team-a/web"), None, "no class: a does not serve it");

        providers.send_modify(|members| {
            let by_namespace = for_tenants(&a, &["a"]);
            let classes = ["example.com/a".to_owned()].into();
            let serves = Serves { load_balancer_classes: classes, nodes: false, ..by_namespace.serves };
            *members.get_mut("a").unwrap() = Member { serves, ..by_namespace };
        });
        until("team-a's load balancer", || a.load_balancer("team-a/web").is_some()).await;
        assert!(asked("list") >= 1, "{:?}", api.requests());

        stop.cancel();
        tokio::time::timeout(Duration::from_secs(20), running).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_service_moved_to_another_class_is_deleted_by_the_old_provider_then_ensured_by_the_new() {
        let api = ApiServer::start().await.unwrap();
        let client = api.client().await;
        let services = Api::<Service>::namespaced(client.clone(), "default");
        services.create(&PostParams::default(), &Service::test("web").with_class("example.com/a")).await.unwrap();
        let (a, b) = (TestCloud::default(), TestCloud::default());
        let (_providers, stop, running) = run_two(&client, &a, &b);
        until("a's load balancer", || a.load_balancer("default/web").is_some()).await;

        // The class is immutable: through ClusterIP, as a user must.
        for (type_, class) in [("ClusterIP", None), ("LoadBalancer", Some("example.com/b"))] {
            loop {
                let mut service = services.get("web").await.unwrap();
                let spec = service.spec.as_mut().unwrap();
                spec.type_ = Some(type_.into());
                spec.load_balancer_class = class.map(str::to_owned);
                match services.replace("web", &PostParams::default(), &service).await {
                    Err(kube::Error::Api(status)) if status.code == 409 => continue,
                    replaced => break replaced.map(drop).unwrap(),
                }
            }
        }
        until("the move", || a.load_balancer("default/web").is_none() && b.load_balancer("default/web").is_some())
            .await;
        let calls = a.take_calls();
        assert!(calls.iter().any(|call| call == "ensure-deleted default/web"), "{calls:?}");

        stop.cancel();
        tokio::time::timeout(Duration::from_secs(20), running).await.unwrap().unwrap().unwrap();
    }
}
