//! The providers of one process, kept in step with the providers file:
//! each loaded, reloaded and limited on its own, added, removed and
//! re-configured while the others keep serving.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use wasm_ccm_cloud::{Cloud, Parts};
use wasm_ccm_controllers::{Member, Members, Serves};
use wasm_ccm_host::{Engine, ProviderHandle};
use wasm_ccm_reload::{
    Candidate, Location, Observers, Reloader, Reporter, Source, SourceSettings, config_map_reference, own_pod_reference,
};

use crate::providers_file::{FileDefaults, PlannedProvider, ProviderEntry, plan};

/// What loading one provider needs besides its plan.
#[derive(Clone)]
pub(crate) struct LoadContext {
    pub(crate) engine: Engine,
    pub(crate) client: kube::Client,
    pub(crate) observers: Observers,
}

/// A provider serving.
struct Running {
    entry: ProviderEntry,
    handle: ProviderHandle,
    reloader: CancellationToken,
}

/// A load that finished in the background.
enum Loaded {
    Ready { planned: Box<PlannedProvider>, handle: ProviderHandle, reloader: CancellationToken },
    Failed { name: String, reason: String },
}

/// The providers serving, and the channel the controllers follow them by.
pub(crate) struct Fleet {
    context: LoadContext,
    running: BTreeMap<String, Running>,
    members: watch::Sender<Members<ProviderHandle>>,
    stop: CancellationToken,
}

impl Fleet {
    /// Loads every provider of `planned` at once, each with its reloader
    /// running until `stop`.
    ///
    /// # Errors
    /// Every provider that did not load, and why.
    pub(crate) async fn start(
        context: LoadContext,
        planned: Vec<PlannedProvider>,
        stop: CancellationToken,
    ) -> anyhow::Result<Self> {
        let alone = planned.len() == 1;
        let loads = planned.into_iter().map(|planned| {
            let context = context.clone();
            let stop = stop.clone();
            async move {
                let name = planned.template.name.clone();
                load(&context, planned, None, &stop).await.map_err(|err| match alone {
                    true => format!("cannot load the provider {name}: {err:#}"),
                    false => format!("provider {name}: {err:#}"),
                })
            }
        });
        let mut running = BTreeMap::new();
        let mut members = Members::new();
        let mut failures = Vec::new();
        for loaded in futures::future::join_all(loads).await {
            match loaded {
                Ok((planned, handle, reloader)) => {
                    let name: Arc<str> = Arc::from(planned.template.name.as_str());
                    members.insert(
                        name,
                        Member {
                            cloud: handle.clone(),
                            serves: planned.serves.clone(),
                            load_balancers: planned.load_balancers.clone(),
                        },
                    );
                    running.insert(planned.template.name.clone(), Running { entry: planned.entry, handle, reloader });
                }
                Err(failure) => failures.push(failure),
            }
        }
        if !failures.is_empty() {
            stop.cancel();
            match failures.as_slice() {
                [failure] if alone => anyhow::bail!("{failure}"),
                _ => anyhow::bail!("cannot load the providers:\n  - {}", failures.join("\n  - ")),
            }
        }
        Ok(Fleet { context, running, members: watch::Sender::new(members), stop })
    }

    /// The providers and what each serves, as the controllers follow them.
    pub(crate) fn members(&self) -> watch::Receiver<Members<ProviderHandle>> {
        self.members.subscribe()
    }

    /// Follows the providers file that `source` offers versions of until
    /// the fleet's stop: a file that does not check is refused whole with
    /// a Warning event, and the providers serving keep serving. Each
    /// provider added or re-configured loads on its own; the others serve
    /// on meanwhile.
    pub(crate) async fn follow(mut self, mut source: Source, defaults: FileDefaults, reporter: Option<Reporter>) {
        let (loaded, mut loads) = mpsc::unbounded_channel();
        loop {
            tokio::select! {
                () = self.stop.cancelled() => return,
                offered = source.next() => match offered {
                    Ok(candidate) => self.offered(&candidate, &defaults, reporter.as_ref(), &loaded),
                    Err(err) => tracing::warn!("the providers file: {err}; the providers serving keep serving"),
                },
                Some(outcome) = loads.recv() => self.loaded(outcome, reporter.as_ref()),
            }
        }
    }

    fn offered(
        &mut self,
        candidate: &Candidate,
        defaults: &FileDefaults,
        reporter: Option<&Reporter>,
        loaded: &mpsc::UnboundedSender<Loaded>,
    ) {
        let planned = match plan(&candidate.wasm, defaults).map_err(|err| err.to_string()).and_then(|planned| {
            self.check_fixed(&planned)?;
            Ok(planned)
        }) {
            Ok(planned) => planned,
            Err(reason) => {
                tracing::warn!(origin = %candidate.origin, "refused a providers file change; the providers serving keep serving: {reason}");
                if let Some(reporter) = reporter {
                    reporter.rejected(format!("refused the providers file from {}: {reason}", candidate.origin));
                }
                return;
            }
        };
        let names: Vec<&str> = planned.iter().map(|planned| planned.template.name.as_str()).collect();
        let gone: Vec<String> = self.running.keys().filter(|name| !names.contains(&name.as_str())).cloned().collect();
        for name in gone {
            tracing::info!(provider = %name, "the provider left the providers file; its load balancers stay");
            if let Some(running) = self.running.remove(&name) {
                running.reloader.cancel();
            }
            self.members.send_modify(|members| {
                members.remove(name.as_str());
            });
            self.context.observers.status.remove(&name);
        }
        for planned in planned {
            let name = planned.template.name.clone();
            let into = match self.running.get(&name) {
                None => None,
                Some(running) if running.entry == planned.entry => continue,
                Some(running) if same_but_load_balancing(&running.entry, &planned.entry) => {
                    tracing::info!(provider = %name, serves = ?planned.serves, policy = ?planned.load_balancers, "the provider serves load balancers otherwise now");
                    self.members.send_modify(|members| {
                        if let Some(member) = members.get_mut(name.as_str()) {
                            member.serves = planned.serves.clone();
                            member.load_balancers = planned.load_balancers.clone();
                        }
                    });
                    if let Some(running) = self.running.get_mut(&name) {
                        running.entry = planned.entry;
                    }
                    continue;
                }
                Some(running) => Some(running.handle.clone()),
            };
            let (context, stop, loaded) = (self.context.clone(), self.stop.clone(), loaded.clone());
            tokio::spawn(async move {
                let outcome = match load(&context, planned, into, &stop).await {
                    Ok((planned, handle, reloader)) => Loaded::Ready { planned: Box::new(planned), handle, reloader },
                    Err(err) => Loaded::Failed { name, reason: format!("{err:#}") },
                };
                let _ = loaded.send(outcome);
            });
        }
    }

    /// The providers serving nodes and routes change only with a restart:
    /// the controllers using them were planned for them.
    fn check_fixed(&self, planned: &[PlannedProvider]) -> Result<(), String> {
        let members = self.members.borrow();
        for (what, serves) in
            [("nodes", (|serves: &Serves| serves.nodes) as fn(&Serves) -> bool), ("routes", |serves| serves.routes)]
        {
            let before = members.iter().find(|(_, member)| serves(&member.serves)).map(|(name, _)| name.to_string());
            let after =
                planned.iter().find(|planned| serves(&planned.serves)).map(|planned| planned.template.name.clone());
            if before != after {
                return Err(format!(
                    "the provider serving {what} changes from {} to {} only with a restart",
                    before.as_deref().unwrap_or("none"),
                    after.as_deref().unwrap_or("none")
                ));
            }
        }
        Ok(())
    }

    fn loaded(&mut self, outcome: Loaded, reporter: Option<&Reporter>) {
        match outcome {
            Loaded::Ready { planned, handle, reloader } => {
                let name = planned.template.name.clone();
                if self.stop.is_cancelled() {
                    return;
                }
                if let Some(previous) = self.running.remove(&name) {
                    previous.reloader.cancel();
                }
                self.members.send_modify(|members| {
                    members.insert(
                        Arc::from(name.as_str()),
                        Member {
                            cloud: handle.clone(),
                            serves: planned.serves.clone(),
                            load_balancers: planned.load_balancers.clone(),
                        },
                    );
                });
                tracing::info!(provider = %name, "the provider serves from the providers file");
                if let Some(reporter) = reporter {
                    reporter.reloaded(format!("provider {name} serves as the providers file says"));
                }
                self.running.insert(name, Running { entry: planned.entry, handle, reloader });
            }
            Loaded::Failed { name, reason } => {
                tracing::warn!(provider = %name, "the provider of the providers file did not load: {reason}");
                if let Some(reporter) = reporter {
                    reporter.rejected(format!("provider {name} of the providers file did not load: {reason}"));
                }
            }
        }
    }
}

/// Whether two entries differ only in the load balancers they serve and
/// the policy those are served under, which a running provider follows
/// without reloading.
fn same_but_load_balancing(running: &ProviderEntry, planned: &ProviderEntry) -> bool {
    let serving_as = |entry: &ProviderEntry| ProviderEntry {
        load_balancer_classes: planned.load_balancer_classes.clone(),
        default_load_balancer: planned.default_load_balancer,
        ingress_ranges: planned.ingress_ranges.clone(),
        resync: planned.resync,
        namespaces: planned.namespaces.clone(),
        ..entry.clone()
    };
    serving_as(running) == *planned
}

/// Loads `planned` (into `into`, when it re-configures a provider serving),
/// checks it supports what it is to serve, and runs its reloader until
/// `stop`.
async fn load(
    context: &LoadContext,
    mut planned: PlannedProvider,
    into: Option<ProviderHandle>,
    stop: &CancellationToken,
) -> anyhow::Result<(PlannedProvider, ProviderHandle, CancellationToken)> {
    if let Some(settings) = &mut planned.source {
        raise_to_recorded(context, &planned.template.name, settings).await?;
    }
    let (source, regarding, poll_interval) = match &planned.source {
        Some(settings) => {
            let regarding = match &settings.location {
                Location::ConfigMap { namespace, name, .. } => Some(config_map_reference(namespace, name)),
                _ => own_pod_reference(),
            };
            (settings.build(Some(context.client.clone()))?, regarding, settings.poll_interval)
        }
        None => {
            let candidate = Candidate {
                digest: wasm_ccm_distribution::sha256_digest(&planned.template.wasm),
                wasm: planned.template.wasm.clone(),
                origin: "built-in".to_owned(),
                version: None,
            };
            (Source::Fixed(Some(candidate)), own_pod_reference(), wasm_ccm_reload::DEFAULT_POLL_INTERVAL)
        }
    };
    let observers = Observers {
        reporter: regarding.map(|regarding| Reporter::new(context.client.clone(), regarding)),
        ..context.observers.clone()
    };
    let (template, inputs) = (planned.template.clone(), planned.inputs.clone());
    let reloader = match into {
        None => Reloader::start(&context.engine, template, source, inputs, poll_interval, observers).await?,
        Some(handle) => {
            Reloader::start_into(handle, &context.engine, template, source, inputs, poll_interval, observers).await?
        }
    };
    let handle = reloader.handle();
    let parts = handle.info().parts;
    if planned.fit_to_support {
        planned.serves = fit_to_parts(planned.serves, &parts, &planned.entry.name);
    } else {
        check_parts(&planned.serves, &parts)?;
    }
    let token = stop.child_token();
    tokio::spawn(reloader.run(token.clone()));
    Ok((planned, handle, token))
}

/// Raises the minimum version of a provider under roll-back protection to
/// the highest version of it accepted before, as the cluster recorded it.
async fn raise_to_recorded(context: &LoadContext, name: &str, settings: &mut SourceSettings) -> anyhow::Result<()> {
    let (Some(minimum), Some(record)) = (&settings.minimum_version, &context.observers.versions) else {
        return Ok(());
    };
    if let Some(recorded) = record.highest(name).await?
        && recorded > *minimum
    {
        tracing::info!(provider = name, %recorded, "the provider's minimum version is the highest one accepted before");
        settings.minimum_version = Some(recorded);
    }
    Ok(())
}

/// What of `serves` a provider supporting `parts` can serve; each part
/// left out is logged, as upstream logs a controller its cloud does not
/// support and runs the others.
fn fit_to_parts(serves: Serves, parts: &Parts, provider: &str) -> Serves {
    let keep = |serving: bool, supported: bool, what: &str| {
        if serving && !supported {
            tracing::info!(provider, "the provider does not support {what}; those controllers do not run");
        }
        serving && supported
    };
    Serves {
        default_load_balancer: keep(serves.default_load_balancer, parts.load_balancer, "load balancers"),
        load_balancer_classes: if parts.load_balancer { serves.load_balancer_classes } else { Default::default() },
        namespaces: serves.namespaces,
        nodes: keep(serves.nodes, parts.instances || parts.instances_v2, "instances"),
        routes: keep(serves.routes, parts.routes, "routes"),
    }
}

/// Refuses a provider that does not support what it is to serve.
fn check_parts(serves: &Serves, parts: &Parts) -> anyhow::Result<()> {
    let missing: Vec<&str> = [
        ("load balancers", serves.load_balancers(), parts.load_balancer),
        ("nodes", serves.nodes, parts.instances || parts.instances_v2),
        ("routes", serves.routes, parts.routes),
    ]
    .into_iter()
    .filter(|(_, serves, supported)| *serves && !*supported)
    .map(|(what, _, _)| what)
    .collect();
    anyhow::ensure!(missing.is_empty(), "it is to serve {} but does not support them", missing.join(" and "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supporting(load_balancer: bool, instances_v2: bool, routes: bool) -> Parts {
        Parts { load_balancer, instances_v2, routes, ..Parts::default() }
    }

    #[test]
    fn the_one_provider_serves_what_it_supports() {
        let fitted = fit_to_parts(Serves::everything(), &supporting(true, false, false), "lb-only");
        assert_eq!(fitted, Serves { default_load_balancer: true, ..Serves::default() });
        let fitted = fit_to_parts(Serves::everything(), &supporting(false, true, true), "no-lb");
        assert_eq!(fitted, Serves { nodes: true, routes: true, ..Serves::default() });
        assert_eq!(fit_to_parts(Serves::everything(), &Parts::ALL, "all"), Serves::everything());
    }

    #[test]
    fn a_file_entry_lacking_a_part_it_is_to_serve_is_refused() {
        let err = check_parts(&Serves::everything(), &supporting(true, true, false)).unwrap_err();
        assert_eq!(err.to_string(), "it is to serve routes but does not support them");
        assert!(check_parts(&Serves { nodes: true, ..Serves::default() }, &supporting(false, true, false)).is_ok());
    }
}
