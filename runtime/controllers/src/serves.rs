//! What one provider serves when several run side by side: Services of some
//! load balancer classes, Services without a class, nodes, routes.

use std::collections::BTreeSet;

/// The work one provider is given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Serves {
    /// Services of type LoadBalancer with one of these
    /// `spec.loadBalancerClass`es.
    pub load_balancer_classes: BTreeSet<String>,
    /// Services of type LoadBalancer without a class.
    pub default_load_balancer: bool,
    /// Nodes: the cloud node and cloud node lifecycle controllers.
    pub nodes: bool,
    /// Routes: the route controller.
    pub routes: bool,
}

impl Serves {
    /// Everything, as the one provider of a single-provider manager.
    pub fn everything() -> Self {
        Serves { load_balancer_classes: BTreeSet::new(), default_load_balancer: true, nodes: true, routes: true }
    }

    /// Whether it serves any load balancers.
    pub fn load_balancers(&self) -> bool {
        self.default_load_balancer || !self.load_balancer_classes.is_empty()
    }

    /// Whether it serves Services of `class` (`None`: no class).
    pub fn class(&self, class: Option<&str>) -> bool {
        match class {
            None => self.default_load_balancer,
            Some(class) => self.load_balancer_classes.contains(class),
        }
    }
}
