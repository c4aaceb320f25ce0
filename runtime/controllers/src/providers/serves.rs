//! What one provider serves when several run side by side: Services of some
//! load balancer classes, Services without a class, in some namespaces;
//! nodes, routes.

use std::collections::{BTreeMap, BTreeSet};

use kube::core::{Selector, SelectorExt};

/// The work one provider is given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Serves {
    /// Services of type LoadBalancer with one of these
    /// `spec.loadBalancerClass`es.
    pub load_balancer_classes: BTreeSet<String>,
    /// Services of type LoadBalancer without a class.
    pub default_load_balancer: bool,
    /// The labels of the namespaces whose Services it serves; `None`: all.
    pub namespaces: Option<Selector>,
    /// Nodes: the cloud node and cloud node lifecycle controllers.
    pub nodes: bool,
    /// Routes: the route controller.
    pub routes: bool,
}

impl Serves {
    /// Everything, as the one provider of a single-provider manager.
    pub fn everything() -> Self {
        Serves {
            load_balancer_classes: BTreeSet::new(),
            default_load_balancer: true,
            namespaces: None,
            nodes: true,
            routes: true,
        }
    }

    /// Whether it serves any load balancers.
    pub fn load_balancers(&self) -> bool {
        self.default_load_balancer || !self.load_balancer_classes.is_empty()
    }

    /// Whether it serves Services of `class` (`None`: no class).
    pub fn serves_class(&self, class: Option<&str>) -> bool {
        match class {
            None => self.default_load_balancer,
            Some(class) => self.load_balancer_classes.contains(class),
        }
    }

    /// Whether it serves Services of a namespace labelled `labels`
    /// (`None`: a namespace not known yet, served only without a
    /// selector).
    pub fn namespace(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        match (&self.namespaces, labels) {
            (None, _) => true,
            (Some(selector), Some(labels)) => selector.matches(labels),
            (Some(_), None) => false,
        }
    }
}
