//! A provider as a plan gives it: what to load and what it serves.

use std::sync::Arc;

use wasm_ccm_cloud::Parts;
use wasm_ccm_controllers::{LoadBalancerPolicy, Serves};

/// One provider of a plan, ready to load.
#[derive(Debug, Clone)]
pub struct Planned<S> {
    /// The name its metrics, events and load balancer annotations carry.
    pub name: Arc<str>,
    /// What the [`Loader`](crate::Loader) loads it from.
    pub spec: S,
    /// What it serves.
    pub serves: Serves,
    /// What the operator sets for its load balancers.
    pub load_balancers: LoadBalancerPolicy,
    /// Whether `serves` narrows to what the provider supports once loaded,
    /// as upstream runs only the controllers its cloud supports, rather
    /// than refusing a provider that lacks part of it: so for the one
    /// provider of a single-provider run, not for a providers file's
    /// entries, which say what each provider serves.
    pub fit_to_support: bool,
}

/// A provider refused because it does not support what it is to serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("it is to serve {} but does not support them", .missing.join(" and "))]
pub struct Unsupported {
    /// What it lacks: `load balancers`, `nodes`, `routes`.
    pub missing: Vec<&'static str>,
}

impl<S> Planned<S> {
    /// What it serves once loaded supporting `parts`: narrowed to them when
    /// it is fitted to its support, each part left out logged.
    ///
    /// # Errors
    /// When it is not fitted and lacks a part it is to serve.
    pub(crate) fn serving(&self, parts: &Parts) -> Result<Serves, Unsupported> {
        if self.fit_to_support {
            Ok(fit_to_parts(self.serves.clone(), parts, &self.name))
        } else {
            check_parts(&self.serves, parts).map(|()| self.serves.clone())
        }
    }
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
fn check_parts(serves: &Serves, parts: &Parts) -> Result<(), Unsupported> {
    let missing: Vec<&'static str> = [
        ("load balancers", serves.load_balancers(), parts.load_balancer),
        ("nodes", serves.nodes, parts.instances || parts.instances_v2),
        ("routes", serves.routes, parts.routes),
    ]
    .into_iter()
    .filter(|(_, serves, supported)| *serves && !*supported)
    .map(|(what, _, _)| what)
    .collect();
    if missing.is_empty() { Ok(()) } else { Err(Unsupported { missing }) }
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
