//! The cloud node lifecycle controller, as upstream's `MonitorNodes`: every
//! monitor period, a node that is not Ready is deleted when its instance is
//! gone and tainted `node.cloudprovider.kubernetes.io/shutdown:NoSchedule`
//! when it is shut down; Ready nodes lose that taint.
//!
//! Each period is one pass over the nodes. The questions about the nodes
//! that are not Ready go to the cloud in batches when the provider answers
//! in batches, and one node at a time otherwise. A pass whose questions the
//! cloud refused all (throttled, say) changes no node and holds the next
//! questions back ([`backoff`]); Ready nodes are seen to every period.

mod ask;
mod backoff;

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::{Cloud, ProviderError};

use self::ask::{Answer, Question, ask};
use self::backoff::PassBackoff;
use crate::framework::config::ControllerName;
use crate::framework::context::Context;
use crate::framework::driver::Controller;
use crate::framework::error::Error;
use crate::framework::runner::Stopped;
use crate::nodes::taints::{SHUTDOWN, has_taint, is_ready, taints};

const NAME: &str = "cloud-node-lifecycle";

/// The node lifecycle controller.
pub struct NodeLifecycleController<C: Cloud> {
    ctx: Context<C>,
    api: Api<Node>,
}

impl<C: Cloud> NodeLifecycleController<C> {
    /// A controller over the nodes of `ctx`.
    pub fn new(ctx: Context<C>) -> Self {
        let api = Api::all(ctx.client.clone());
        NodeLifecycleController { ctx, api }
    }
}

impl<C: Cloud> Controller for NodeLifecycleController<C> {
    const NAME: ControllerName = ControllerName::CloudNodeLifecycle;

    /// Monitors every node now and every period.
    async fn run(self, stop: CancellationToken) -> Result<(), Stopped> {
        let period = self.ctx.settings.node_monitor_period;
        let mut backoff = PassBackoff::new(period);
        let mut ask_from = Instant::now();
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            let ask_cloud = Instant::now() >= ask_from;
            let pass = self.pass(ask_cloud).await;
            self.ctx.metrics.lifecycle_pass(pass.outcome());
            match pass {
                Pass::Answered => backoff.answered(),
                Pass::Refused { retry_after, nodes } => {
                    let wait = backoff.refused(retry_after);
                    tracing::warn!(
                        nodes,
                        "the cloud refused every lifecycle question of this pass; asking again in {wait:?}"
                    );
                    ask_from = Instant::now() + wait;
                }
                Pass::NotAsked => {}
            }
        }
    }
}

/// How the cloud took a pass's questions.
#[derive(Debug, PartialEq)]
enum Pass {
    /// It answered some, or was asked none it could answer.
    Answered,
    /// It refused every question about the `nodes` asked about.
    Refused { retry_after: Option<Duration>, nodes: usize },
    /// The pass did not ask it: it is being waited for.
    NotAsked,
}

impl Pass {
    /// Its outcome, as the passes metric names it.
    fn outcome(&self) -> &'static str {
        match self {
            Pass::Answered => "answered",
            Pass::Refused { .. } => "refused",
            Pass::NotAsked => "waited",
        }
    }
}

impl<C: Cloud> NodeLifecycleController<C> {
    /// One pass of upstream's `MonitorNodes` over every node: the shutdown
    /// taint follows the instance, and a node whose instance is gone is
    /// deleted. Without `ask_cloud`, only Ready nodes are seen to.
    async fn pass(&self, ask_cloud: bool) -> Pass {
        let (ready, not_ready): (Vec<Arc<Node>>, Vec<Arc<Node>>) =
            self.ctx.nodes.all().into_iter().partition(|node| is_ready(node));
        let tainted = ready.into_iter().filter(|node| has_taint(node, SHUTDOWN));
        self.each(tainted, |node| async move { self.untaint(&node).await }).await;
        if !ask_cloud {
            return Pass::NotAsked;
        }
        let concurrency = self.ctx.settings.concurrent_node_lifecycle_syncs;
        let asked = not_ready.len();
        let answers = ask(&self.ctx.cloud, not_ready, concurrency).await;
        let refused = refusal(&answers);
        let mut gone = Vec::new();
        let mut shut_down = Vec::new();
        for (node, answer) in answers {
            match answer {
                Ok(state) if !state.exists => gone.push(node),
                Ok(state) if state.shut_down && !has_taint(&node, SHUTDOWN) => shut_down.push(node),
                Ok(_) => {}
                Err((Question::Exists, ProviderError::NotImplemented)) => {
                    tracing::debug!(
                        node = name(&node),
                        "the provider cannot tell whether the instance exists; skipping"
                    );
                }
                Err((question, err)) => self.failed(question, &node, err, refused.is_none()),
            }
        }
        if let Some(retry_after) = refused {
            return Pass::Refused { retry_after, nodes: asked };
        }
        self.each(gone, |node| async move { self.delete(&node).await }).await;
        self.each(shut_down, |node| async move { self.taint(&node).await }).await;
        Pass::Answered
    }

    /// Does `work` for each node, a few at once; its errors are counted
    /// and logged.
    async fn each<F: Future<Output = Result<(), Error>>>(
        &self,
        nodes: impl IntoIterator<Item = Arc<Node>>,
        work: impl Fn(Arc<Node>) -> F,
    ) {
        let concurrency = self.ctx.settings.concurrent_node_lifecycle_syncs.max(1);
        let mut results = stream::iter(nodes).map(&work).buffer_unordered(concurrency);
        while let Some(result) = results.next().await {
            if let Err(err) = result {
                self.ctx.metrics.reconcile_error(NAME, err.kind());
                tracing::warn!(controller = NAME, "{err}");
            }
        }
    }

    /// Counts a node's failed answer; logs it when `log`, which a refused
    /// pass logs once for all.
    fn failed(&self, question: Question, node: &Node, err: ProviderError, log: bool) {
        let err = Error::cloud(question.failure(name(node)))(err);
        self.ctx.metrics.reconcile_error(NAME, err.kind());
        if log {
            tracing::warn!(controller = NAME, "{err}");
        } else {
            tracing::debug!(controller = NAME, "{err}");
        }
    }

    async fn untaint(&self, node: &Node) -> Result<(), Error> {
        let remaining: Vec<Taint> = taints(node).iter().filter(|taint| taint.key != SHUTDOWN).cloned().collect();
        self.patch_taints(node, remaining).await.map_err(Error::api("failed to remove the shutdown taint"))?;
        tracing::info!(node = name(node), "removed the shutdown taint");
        Ok(())
    }

    async fn taint(&self, node: &Node) -> Result<(), Error> {
        let mut tainted = taints(node).to_vec();
        tainted.push(Taint { key: SHUTDOWN.into(), effect: "NoSchedule".into(), ..Default::default() });
        self.patch_taints(node, tainted).await.map_err(Error::api("failed to apply the shutdown taint"))?;
        tracing::info!(node = name(node), "added the shutdown taint");
        Ok(())
    }

    async fn delete(&self, node: &Node) -> Result<(), Error> {
        let name = name(node);
        tracing::info!(node = name, "deleting the node: it is no longer present in the cloud provider");
        let reference = node.object_ref(&());
        let note = format!("Deleting node {name} because it does not exist in the cloud provider");
        self.ctx.events.normal(reference.clone(), "DeletingNode", note);
        if let Err(err) = self.api.delete(name, &DeleteParams::default()).await {
            self.ctx.events.warning(reference, "DeletingNodeFailed", format!("Failed deleting node {name}: {err}"));
            return Err(Error::api("failed to delete the node")(err));
        }
        Ok(())
    }

    /// Writes the node's taints, on the version of it the cache holds: a
    /// conflict means the node changed, and the next period sees it anew.
    async fn patch_taints(&self, node: &Node, taints: Vec<Taint>) -> Result<(), kube::Error> {
        let patch =
            json!({"metadata": {"resourceVersion": node.metadata.resource_version}, "spec": {"taints": taints}});
        self.api.patch(name(node), &PatchParams::default(), &Patch::Merge(patch)).await.map(drop)
    }
}

fn name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// Whether the cloud refused every answer, and the delay it asked for, if
/// any: `None` when it answered one, or was asked about no node, or said
/// only that it cannot tell.
fn refusal(answers: &[Answer]) -> Option<Option<Duration>> {
    let refused = |answer: &Result<_, (Question, ProviderError)>| matches!(answer, Err((_, err)) if !matches!(err, ProviderError::NotImplemented | ProviderError::InstanceNotFound));
    if answers.is_empty() || !answers.iter().all(|(_, answer)| refused(answer)) {
        return None;
    }
    let retry_after = answers.iter().find_map(|(_, answer)| match answer {
        Err((_, ProviderError::Retry { delay, .. })) => Some(*delay),
        _ => None,
    });
    Some(retry_after)
}

#[cfg(test)]
mod tests {
    use wasm_ccm_cloud::{Function, Parts};

    use super::*;
    use crate::fixtures::{NodeFixture, TestCloud, TestEnv};

    async fn pass(env: &TestEnv) -> Pass {
        NodeLifecycleController::new(env.context()).pass(true).await
    }

    async fn exists(env: &TestEnv, name: &str) -> bool {
        Api::<Node>::all(env.client.clone()).get_opt(name).await.unwrap().is_some()
    }

    #[tokio::test]
    async fn a_node_whose_instance_is_gone_is_deleted() {
        let mut env = TestEnv::new(TestCloud::default()).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        assert_eq!(pass(&env).await, Pass::Answered);
        assert!(!exists(&env, "node-a").await);
        let (_, reason, _, note) = env.events().pop().unwrap();
        assert_eq!(
            (reason.as_str(), note.as_str()),
            ("DeletingNode", "Deleting node node-a because it does not exist in the cloud provider")
        );
    }

    #[tokio::test]
    async fn a_shut_down_instance_taints_its_node_until_it_is_ready() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1");
        cloud.update_instance("node-a", |instance| instance.shutdown = true);
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        pass(&env).await;
        let node = env.node("node-a").await;
        assert!(has_taint(&node, SHUTDOWN));
        env.cache_node(node.ready(true));
        env.cloud.take_calls();
        // A Ready node loses the taint even while the cloud is waited for.
        assert_eq!(NodeLifecycleController::new(env.context()).pass(false).await, Pass::NotAsked);
        assert!(!has_taint(&env.node("node-a").await, SHUTDOWN));
        assert!(env.cloud.take_calls().is_empty());
    }

    #[tokio::test]
    async fn a_provider_that_cannot_tell_leaves_the_node_alone() {
        let cloud = TestCloud::default().with_instance("node-a", "i-a", "10.0.0.1");
        cloud.fail(Function::InstanceExists, ProviderError::NotImplemented);
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        assert_eq!(pass(&env).await, Pass::Answered);
        assert!(exists(&env, "node-a").await);
        assert_eq!(env.cloud.take_calls(), ["exists node-a"], "no shutdown check either");
    }

    /// As 1.33: the cloud is asked about `<provider>://`, and decides.
    #[tokio::test]
    async fn an_empty_instance_id_is_asked_about_as_the_bare_scheme() {
        let parts = Parts { instances: true, ..Parts::default() };
        let cloud = TestCloud::default().with_parts(parts).with_instance("node-a", "", "10.0.0.1");
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        pass(&env).await;
        assert!(exists(&env, "node-a").await, "the cloud knows test://");
        let calls = env.cloud.take_calls();
        assert_eq!(calls[..2], ["instance-id node-a", "instance-exists-by-provider-id test://"], "{calls:?}");
    }

    #[tokio::test]
    async fn a_cloud_error_leaves_the_node_for_the_next_period() {
        let cloud = TestCloud::default();
        cloud.fail(Function::InstanceExists, ProviderError::Cloud("throttled".into()));
        let mut env = TestEnv::new(cloud).await;
        env.add_node(Node::test("node-a").ready(false)).await;
        assert_eq!(pass(&env).await, Pass::Refused { retry_after: None, nodes: 1 });
        assert!(exists(&env, "node-a").await);
        assert_eq!(Question::Exists.failure("node-a"), "error checking if node node-a exists");
    }

    /// Five nodes that are not Ready: `a` and `d` gone, `b` shut down, `c`
    /// and `e` running; `f` Ready.
    fn outage(cloud: TestCloud) -> TestCloud {
        let cloud = ["b", "c", "e", "f"]
            .into_iter()
            .fold(cloud, |cloud, node| cloud.with_instance(&format!("node-{node}"), node, "10.0.0.1"));
        cloud.update_instance("node-b", |instance| instance.shutdown = true);
        cloud
    }

    async fn outage_env(cloud: TestCloud) -> TestEnv {
        let mut env = TestEnv::new(outage(cloud)).await;
        for node in ["a", "b", "c", "d", "e"] {
            env.add_node(Node::test(&format!("node-{node}")).ready(false)).await;
        }
        env.add_node(Node::test("node-f").ready(true)).await;
        env
    }

    /// What the pass did to the nodes: those left, and those tainted.
    async fn outcome(env: &TestEnv) -> (Vec<String>, Vec<String>) {
        let nodes = Api::<Node>::all(env.client.clone()).list(&Default::default()).await.unwrap().items;
        let names = |nodes: &mut dyn Iterator<Item = &Node>| nodes.map(|node| name(node).to_owned()).collect();
        (names(&mut nodes.iter()), names(&mut nodes.iter().filter(|node| has_taint(node, SHUTDOWN))))
    }

    #[tokio::test]
    async fn batches_ask_the_cloud_a_few_times_and_do_what_single_questions_do() {
        let mut batched = outage_env(TestCloud::default().with_max_batch(2)).await;
        assert_eq!(pass(&batched).await, Pass::Answered);
        let mut calls = batched.cloud.take_calls();
        calls.sort();
        assert_eq!(calls, ["states node-a,node-b", "states node-c,node-d", "states node-e"]);

        let mut single = outage_env(TestCloud::default()).await;
        assert_eq!(pass(&single).await, Pass::Answered);
        assert_eq!(single.cloud.take_calls().len(), 5 + 3, "exists of each node, shutdown of those that exist");

        let expected =
            (vec!["node-b".to_owned(), "node-c".into(), "node-e".into(), "node-f".into()], vec!["node-b".to_owned()]);
        assert_eq!(outcome(&batched).await, expected);
        assert_eq!(outcome(&single).await, expected);
        let reasons = |env: &mut TestEnv| {
            let mut reasons: Vec<String> = env.events().into_iter().map(|(_, reason, _, _)| reason).collect();
            reasons.sort();
            reasons
        };
        assert_eq!(reasons(&mut batched), ["DeletingNode", "DeletingNode"]);
        assert_eq!(reasons(&mut single), ["DeletingNode", "DeletingNode"]);
    }

    #[tokio::test]
    async fn a_throttled_batch_changes_no_node_and_passes_on_the_delay() {
        let mut env = outage_env(TestCloud::default().with_max_batch(500)).await;
        let throttled = ProviderError::Retry { delay: Duration::from_secs(30), message: "RequestLimitExceeded".into() };
        env.cloud.fail(Function::InstanceStates, throttled);
        assert_eq!(pass(&env).await, Pass::Refused { retry_after: Some(Duration::from_secs(30)), nodes: 5 });
        assert_eq!(outcome(&env).await.0.len(), 6, "no node deleted");
        assert!(env.events().is_empty());

        env.cloud.heal(Function::InstanceStates);
        assert_eq!(pass(&env).await, Pass::Answered);
        let left = vec!["node-b".to_owned(), "node-c".into(), "node-e".into(), "node-f".into()];
        assert_eq!(outcome(&env).await, (left, vec!["node-b".to_owned()]));
    }

    /// One node at a time, a failed shutdown question leaves its node
    /// alone; the nodes whose instances are gone still go.
    #[tokio::test]
    async fn a_failed_shutdown_question_taints_nothing() {
        let env = outage_env(TestCloud::default()).await;
        env.cloud.fail(Function::InstanceShutdown, ProviderError::Cloud("throttled".into()));
        assert_eq!(pass(&env).await, Pass::Answered, "the cloud answered whether they exist");
        let left = vec!["node-b".to_owned(), "node-c".into(), "node-e".into(), "node-f".into()];
        assert_eq!(outcome(&env).await, (left, vec![]));
    }

    #[tokio::test]
    async fn a_batching_provider_without_instances_v2_is_asked_one_node_at_a_time() {
        let parts = Parts { instances: true, ..Parts::default() };
        let env = outage_env(TestCloud::default().with_parts(parts).with_max_batch(100)).await;
        pass(&env).await;
        assert!(env.cloud.take_calls().iter().all(|call| !call.starts_with("states ")));
    }
}
