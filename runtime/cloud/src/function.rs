//! Every function of the provider contract, once: the interface it belongs
//! to, its name in `wit/`, the Go method of `cloudprovider.Interface` it
//! mirrors, and the part of a provider that offers it. The host's export
//! checks, call names, metrics, `provider call` and the conformance kit
//! all derive from this table; a test checks it against `wit/`, and
//! another that every place written by hand has each function
//! (`checklist`).

use std::fmt;

/// A part of `cloudprovider.Interface` a provider may or may not support:
/// the `bool` of `LoadBalancer()`, `Instances()` and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// `LoadBalancer()`.
    LoadBalancer,
    /// `Instances()`.
    Instances,
    /// `InstancesV2()`.
    InstancesV2,
    /// `Zones()`.
    Zones,
    /// `Clusters()`.
    Clusters,
    /// `Routes()`.
    Routes,
}

/// Declares the contract's interfaces and their functions, each with its
/// WIT name and Go method, and derives [`Interface`] and [`Function`].
macro_rules! contract {
    ($(
        $(#[doc = $interface_doc:literal])*
        $interface:ident = $interface_wit:literal, part $part:expr, required $required:literal => {
            $(
                $(#[doc = $function_doc:literal])*
                $function:ident = $function_wit:literal, go $go:literal;
            )*
        }
    )*) => {
        /// An interface the provider world exports.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Interface {
            $($(#[doc = $interface_doc])* $interface,)*
        }

        impl Interface {
            /// Every interface, in the world's order.
            pub const ALL: &'static [Interface] = &[$(Interface::$interface),*];

            /// Its name in `wit/`, such as `load-balancer`.
            pub const fn wit_name(self) -> &'static str {
                match self {
                    $(Interface::$interface => $interface_wit,)*
                }
            }

            /// The part whose support it depends on; `None` for the
            /// provider itself, which every provider exports.
            pub const fn part(self) -> Option<Part> {
                match self {
                    $(Interface::$interface => $part,)*
                }
            }

            /// Whether every provider exports it; a provider may leave out
            /// the others, and the host then does without them.
            pub const fn is_required(self) -> bool {
                match self {
                    $(Interface::$interface => $required,)*
                }
            }

            /// Its functions, in the world's order.
            pub fn functions(self) -> impl Iterator<Item = Function> {
                Function::ALL.iter().copied().filter(move |function| function.interface() == self)
            }
        }

        /// A function of the provider world.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Function {
            $($($(#[doc = $function_doc])* $function,)*)*
        }

        impl Function {
            /// Every function, in the world's order.
            pub const ALL: &'static [Function] = &[$($(Function::$function,)*)*];

            /// The interface exporting it.
            pub const fn interface(self) -> Interface {
                match self {
                    $($(Function::$function => Interface::$interface,)*)*
                }
            }

            /// Its name within its interface in `wit/`, such as `ensure`.
            pub const fn wit_name(self) -> &'static str {
                match self {
                    $($(Function::$function => $function_wit,)*)*
                }
            }

            /// `interface.function`, such as `load-balancer.ensure`: how
            /// logs, spans, metrics and fault injection name a call.
            pub const fn call_name(self) -> &'static str {
                match self {
                    $($(Function::$function => concat!($interface_wit, ".", $function_wit),)*)*
                }
            }

            /// The Go method of `cloudprovider.Interface` it mirrors; for the
            /// batch forms, which upstream does not have, a name in its style.
            pub const fn go_method(self) -> &'static str {
                match self {
                    $($(Function::$function => $go,)*)*
                }
            }
        }
    };
}

contract! {
    /// The provider itself: `cloudprovider.Interface` without its parts.
    Provider = "provider", part None, required true => {
        /// `ProviderName()`.
        ProviderName = "name", go "ProviderName";
        /// `Initialize(clientBuilder, stop)`.
        Initialize = "initialize", go "Initialize";
        /// `HasClusterID()`.
        HasClusterId = "has-cluster-id", go "HasClusterID";
        /// The `bool`s of the part accessors.
        SupportedParts = "supported-parts", go "LoadBalancer/Instances/InstancesV2/Zones/Clusters/Routes";
    }
    /// `cloudprovider.LoadBalancer`.
    LoadBalancer = "load-balancer", part Some(Part::LoadBalancer), required true => {
        /// `GetLoadBalancer`.
        GetLoadBalancer = "get", go "GetLoadBalancer";
        /// `GetLoadBalancerName`.
        GetLoadBalancerName = "get-name", go "GetLoadBalancerName";
        /// `EnsureLoadBalancer`.
        EnsureLoadBalancer = "ensure", go "EnsureLoadBalancer";
        /// `UpdateLoadBalancer`.
        UpdateLoadBalancer = "update", go "UpdateLoadBalancer";
        /// `EnsureLoadBalancerDeleted`.
        EnsureLoadBalancerDeleted = "ensure-deleted", go "EnsureLoadBalancerDeleted";
    }
    /// `cloudprovider.InstancesV2`.
    InstancesV2 = "instances-v2", part Some(Part::InstancesV2), required true => {
        /// `InstanceExists`.
        InstanceExists = "exists", go "InstanceExists";
        /// `InstanceShutdown`.
        InstanceShutdown = "shutdown", go "InstanceShutdown";
        /// `InstanceMetadata`.
        InstanceMetadata = "metadata", go "InstanceMetadata";
    }
    /// The batch forms of InstancesV2's lifecycle questions.
    InstancesBatch = "instances-batch", part Some(Part::InstancesV2), required false => {
        /// The most nodes a batch takes.
        MaxBatch = "max-batch", go "MaxBatch";
        /// `InstanceExists` and `InstanceShutdown` of many nodes.
        InstanceStates = "states", go "InstanceStates";
    }
    /// The batch form of InstancesV2's `InstanceMetadata`.
    MetadataBatch = "metadata-batch", part Some(Part::InstancesV2), required false => {
        /// `InstanceMetadata` of many nodes.
        BatchMetadata = "metadata", go "BatchMetadata";
    }
    /// `cloudprovider.Instances`, the first instances API.
    Instances = "instances", part Some(Part::Instances), required true => {
        /// `NodeAddresses`.
        NodeAddresses = "node-addresses", go "NodeAddresses";
        /// `NodeAddressesByProviderID`.
        NodeAddressesByProviderId = "node-addresses-by-provider-id", go "NodeAddressesByProviderID";
        /// `InstanceID`.
        InstanceId = "instance-id", go "InstanceID";
        /// `InstanceType`.
        InstanceType = "instance-type", go "InstanceType";
        /// `InstanceTypeByProviderID`.
        InstanceTypeByProviderId = "instance-type-by-provider-id", go "InstanceTypeByProviderID";
        /// `AddSSHKeyToAllInstances`.
        AddSshKeyToAllInstances = "add-ssh-key-to-all-instances", go "AddSSHKeyToAllInstances";
        /// `CurrentNodeName`.
        CurrentNodeName = "current-node-name", go "CurrentNodeName";
        /// `InstanceExistsByProviderID`.
        InstanceExistsByProviderId = "instance-exists-by-provider-id", go "InstanceExistsByProviderID";
        /// `InstanceShutdownByProviderID`.
        InstanceShutdownByProviderId = "instance-shutdown-by-provider-id", go "InstanceShutdownByProviderID";
    }
    /// `cloudprovider.Zones`.
    Zones = "zones", part Some(Part::Zones), required true => {
        /// `GetZone`.
        GetZone = "get-zone", go "GetZone";
        /// `GetZoneByProviderID`.
        GetZoneByProviderId = "get-zone-by-provider-id", go "GetZoneByProviderID";
        /// `GetZoneByNodeName`.
        GetZoneByNodeName = "get-zone-by-node-name", go "GetZoneByNodeName";
    }
    /// `cloudprovider.Clusters`.
    Clusters = "clusters", part Some(Part::Clusters), required true => {
        /// `ListClusters`.
        ListClusters = "list-clusters", go "ListClusters";
        /// `Master`.
        Master = "master", go "Master";
    }
    /// `cloudprovider.Routes`.
    Routes = "routes", part Some(Part::Routes), required true => {
        /// `ListRoutes`.
        ListRoutes = "list-routes", go "ListRoutes";
        /// `CreateRoute`.
        CreateRoute = "create-route", go "CreateRoute";
        /// `DeleteRoute`.
        DeleteRoute = "delete-route", go "DeleteRoute";
    }
}

impl Function {
    /// The part a provider must support for the controllers to call it;
    /// `None` for the provider's own functions.
    pub const fn part(self) -> Option<Part> {
        self.interface().part()
    }

    /// The function named `interface.function` ([`Function::call_name`]).
    pub fn from_call_name(name: &str) -> Option<Function> {
        Function::ALL.iter().copied().find(|function| function.call_name() == name)
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.call_name())
    }
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wit_name())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use wit_parser::{Resolve, WorldItem, WorldKey};

    use super::*;

    /// The functions a world of `wit/` exports, by interface.
    fn exported_by(world: &str) -> BTreeMap<String, Vec<String>> {
        let mut resolve = Resolve::default();
        let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        let (package, _) = resolve.push_dir(&wit).expect("wit/ parses");
        let world = resolve.select_world(&[package], Some(world)).expect("the world");
        resolve.worlds[world]
            .exports
            .iter()
            .filter_map(|(key, item)| {
                let (WorldKey::Interface(id), WorldItem::Interface { .. }) = (key, item) else { return None };
                let interface = &resolve.interfaces[*id];
                let functions = interface.functions.keys().cloned().collect();
                Some((interface.name.clone()?, functions))
            })
            .collect()
    }

    fn declared(interfaces: impl Fn(&Interface) -> bool) -> BTreeMap<String, Vec<String>> {
        Interface::ALL
            .iter()
            .filter(|interface| interfaces(interface))
            .map(|interface| {
                (interface.wit_name().to_owned(), interface.functions().map(|f| f.wit_name().to_owned()).collect())
            })
            .collect()
    }

    #[test]
    fn the_table_names_every_function_of_the_worlds_and_no_other() {
        assert_eq!(declared(|_| true), exported_by("batching-cloud-provider"));
        assert_eq!(declared(|interface| interface.is_required()), exported_by("cloud-provider"));
    }

    #[test]
    fn call_names_are_unique_and_found_again() {
        for function in Function::ALL {
            assert_eq!(Function::from_call_name(function.call_name()), Some(*function));
        }
        assert_eq!(Function::EnsureLoadBalancer.call_name(), "load-balancer.ensure");
        assert_eq!(Function::GetZoneByProviderId.part(), Some(Part::Zones));
        assert_eq!(Function::Initialize.part(), None);
        assert_eq!(Function::from_call_name("load-balancer.nope"), None);
    }
}
