//! The glue between the world's exports and a [`Provider`]: what
//! [`export_provider!`](crate::export_provider) expands to.

use std::cell::OnceCell;
use std::marker::PhantomData;
use std::thread::LocalKey;

use crate::provider::Provider;
use crate::types::{InstanceMetadata, InstanceState, LoadBalancerStatus, Node, NodeAddress, Route, Service, Zone};
use crate::wit::exports::wasm_ccm::provider as exports;
use crate::wit::wasm_ccm::provider::nodes::NodeSet as LentNodes;
use crate::{Error, NodeSet, Parts};

/// The provider of one component instance, set by `initialize`.
#[doc(hidden)]
pub trait Instance: 'static {
    /// The provider type the component exports.
    type Provider: Provider;

    /// The slot holding the instance's provider once `initialize` has run.
    fn slot() -> &'static LocalKey<OnceCell<&'static Self::Provider>>;
}

/// Implements every exported interface for the provider of `T`.
#[doc(hidden)]
pub struct Glue<T>(PhantomData<T>);

fn provider<T: Instance>() -> Result<&'static T::Provider, Error> {
    T::slot()
        .with(|slot| slot.get().copied())
        .ok_or_else(|| Error::Other("the provider was called before `initialize`".into()))
}

fn part<T: Instance, P: ?Sized>(
    select: impl FnOnce(&'static T::Provider) -> Option<&'static P>,
) -> Result<&'static P, Error> {
    select(provider::<T>()?).ok_or(Error::NotImplemented)
}

/// Free heap every call starts with, beyond what set-up left.
///
/// The host snapshots the instance once `initialize` returns and starts each
/// call from that snapshot, so heap grown here is grown once. Without it, a
/// call that receives 5000 provider IDs grows the memory, which costs it two
/// `mprotect` calls and a TLB shootdown when its instance is reset: a sixth
/// of the call. Pages of it that a call does not touch cost nothing.
const CALL_HEAP: usize = 1 << 20;

/// Grows the heap by [`CALL_HEAP`] and frees it again, for calls to take.
fn reserve_call_heap() {
    // `black_box` keeps the allocation: unused, it would be optimised away.
    drop(std::hint::black_box(Vec::<u8>::with_capacity(CALL_HEAP)));
}

impl<T: Instance> exports::provider::Guest for Glue<T> {
    fn name() -> String {
        T::Provider::NAME.to_owned()
    }

    fn initialize(config: Vec<u8>, cluster_name: String) -> Result<(), Error> {
        if T::slot().with(|slot| slot.get().is_some()) {
            return Err(Error::Other("the provider was initialized twice".into()));
        }
        // The instance lives for one call: leaking the provider costs nothing.
        let provider: &'static T::Provider = Box::leak(Box::new(T::Provider::new(&config, &cluster_name)?));
        T::slot().with(|slot| {
            slot.get_or_init(|| provider);
        });
        reserve_call_heap();
        Ok(())
    }

    fn has_cluster_id() -> bool {
        provider::<T>().is_ok_and(Provider::has_cluster_id)
    }

    fn supported_parts() -> Parts {
        let Ok(provider) = provider::<T>() else {
            return Parts::empty();
        };
        [
            (Parts::LOAD_BALANCER, provider.load_balancer().is_some()),
            (Parts::INSTANCES, provider.instances().is_some()),
            (Parts::INSTANCES_V2, provider.instances_v2().is_some()),
            (Parts::ZONES, provider.zones().is_some()),
            (Parts::CLUSTERS, provider.clusters().is_some()),
            (Parts::ROUTES, provider.routes().is_some()),
        ]
        .into_iter()
        .filter(|(_, supported)| *supported)
        .fold(Parts::empty(), |parts, (part, _)| parts | part)
    }
}

impl<T: Instance> exports::load_balancer::Guest for Glue<T> {
    fn get(cluster_name: String, service: Service) -> Result<Option<LoadBalancerStatus>, Error> {
        part::<T, _>(Provider::load_balancer)?.get_load_balancer(&cluster_name, &service)
    }

    fn get_name(cluster_name: String, service: Service) -> String {
        match part::<T, _>(Provider::load_balancer) {
            Ok(lb) => lb.get_load_balancer_name(&cluster_name, &service),
            Err(_) => crate::default_load_balancer_name(&service),
        }
    }

    fn ensure(cluster_name: String, service: Service, nodes: &LentNodes) -> Result<LoadBalancerStatus, Error> {
        part::<T, _>(Provider::load_balancer)?.ensure_load_balancer(&cluster_name, &service, &NodeSet::lent(nodes))
    }

    fn update(cluster_name: String, service: Service, nodes: &LentNodes) -> Result<(), Error> {
        part::<T, _>(Provider::load_balancer)?.update_load_balancer(&cluster_name, &service, &NodeSet::lent(nodes))
    }

    fn ensure_deleted(cluster_name: String, service: Service) -> Result<(), Error> {
        part::<T, _>(Provider::load_balancer)?.ensure_load_balancer_deleted(&cluster_name, &service)
    }
}

impl<T: Instance> exports::instances_v2::Guest for Glue<T> {
    fn exists(node: Node) -> Result<bool, Error> {
        part::<T, _>(Provider::instances_v2)?.instance_exists(&node)
    }

    fn shutdown(node: Node) -> Result<bool, Error> {
        part::<T, _>(Provider::instances_v2)?.instance_shutdown(&node)
    }

    fn metadata(node: Node) -> Result<InstanceMetadata, Error> {
        part::<T, _>(Provider::instances_v2)?.instance_metadata(&node)
    }
}

impl<T: Instance> exports::instances_batch::Guest for Glue<T> {
    fn max_batch() -> u32 {
        part::<T, _>(Provider::instances_v2).map_or(0, |instances| instances.max_batch())
    }

    fn states(nodes: &LentNodes) -> Result<Vec<Result<InstanceState, Error>>, Error> {
        part::<T, _>(Provider::instances_v2)?.instance_states(&NodeSet::lent(nodes))
    }
}

impl<T: Instance> exports::metadata_batch::Guest for Glue<T> {
    fn metadata(nodes: &LentNodes) -> Result<Vec<Result<InstanceMetadata, Error>>, Error> {
        part::<T, _>(Provider::instances_v2)?.batch_metadata(&NodeSet::lent(nodes))
    }
}

impl<T: Instance> exports::instances::Guest for Glue<T> {
    fn node_addresses(node_name: String) -> Result<Vec<NodeAddress>, Error> {
        part::<T, _>(Provider::instances)?.node_addresses(&node_name)
    }

    fn node_addresses_by_provider_id(provider_id: String) -> Result<Vec<NodeAddress>, Error> {
        part::<T, _>(Provider::instances)?.node_addresses_by_provider_id(&provider_id)
    }

    fn instance_id(node_name: String) -> Result<String, Error> {
        part::<T, _>(Provider::instances)?.instance_id(&node_name)
    }

    fn instance_type(node_name: String) -> Result<String, Error> {
        part::<T, _>(Provider::instances)?.instance_type(&node_name)
    }

    fn instance_type_by_provider_id(provider_id: String) -> Result<String, Error> {
        part::<T, _>(Provider::instances)?.instance_type_by_provider_id(&provider_id)
    }

    fn add_ssh_key_to_all_instances(user: String, key_data: Vec<u8>) -> Result<(), Error> {
        part::<T, _>(Provider::instances)?.add_ssh_key_to_all_instances(&user, &key_data)
    }

    fn current_node_name(hostname: String) -> Result<String, Error> {
        part::<T, _>(Provider::instances)?.current_node_name(&hostname)
    }

    fn instance_exists_by_provider_id(provider_id: String) -> Result<bool, Error> {
        part::<T, _>(Provider::instances)?.instance_exists_by_provider_id(&provider_id)
    }

    fn instance_shutdown_by_provider_id(provider_id: String) -> Result<bool, Error> {
        part::<T, _>(Provider::instances)?.instance_shutdown_by_provider_id(&provider_id)
    }
}

impl<T: Instance> exports::zones::Guest for Glue<T> {
    fn get_zone() -> Result<Zone, Error> {
        part::<T, _>(Provider::zones)?.get_zone()
    }

    fn get_zone_by_provider_id(provider_id: String) -> Result<Zone, Error> {
        part::<T, _>(Provider::zones)?.get_zone_by_provider_id(&provider_id)
    }

    fn get_zone_by_node_name(node_name: String) -> Result<Zone, Error> {
        part::<T, _>(Provider::zones)?.get_zone_by_node_name(&node_name)
    }
}

impl<T: Instance> exports::clusters::Guest for Glue<T> {
    fn list_clusters() -> Result<Vec<String>, Error> {
        part::<T, _>(Provider::clusters)?.list_clusters()
    }

    fn master(cluster_name: String) -> Result<String, Error> {
        part::<T, _>(Provider::clusters)?.master(&cluster_name)
    }
}

impl<T: Instance> exports::routes::Guest for Glue<T> {
    fn list_routes(cluster_name: String) -> Result<Vec<Route>, Error> {
        part::<T, _>(Provider::routes)?.list_routes(&cluster_name)
    }

    fn create_route(cluster_name: String, name_hint: String, route: Route) -> Result<(), Error> {
        part::<T, _>(Provider::routes)?.create_route(&cluster_name, &name_hint, &route)
    }

    fn delete_route(cluster_name: String, route: Route) -> Result<(), Error> {
        part::<T, _>(Provider::routes)?.delete_route(&cluster_name, &route)
    }
}

/// Exports a [`Provider`] as the component's implementation of the
/// `wasm-ccm:provider` world.
///
/// Use it once, at the root of the provider's crate:
///
/// ```no_run
/// # use wasm_ccm_sdk::{Error, Provider};
/// struct Acme;
///
/// impl Provider for Acme {
///     const NAME: &'static str = "acme";
///     fn new(_config: &[u8], _cluster_name: &str) -> Result<Self, Error> {
///         Ok(Acme)
///     }
/// }
///
/// wasm_ccm_sdk::export_provider!(Acme);
/// ```
#[macro_export]
macro_rules! export_provider {
    ($provider:ty) => {
        #[allow(unsafe_code)]
        const _: () = {
            struct __WasmCcmInstance;

            impl $crate::export::Instance for __WasmCcmInstance {
                type Provider = $provider;

                fn slot() -> &'static ::std::thread::LocalKey<::std::cell::OnceCell<&'static $provider>> {
                    ::std::thread_local! {
                        static SLOT: ::std::cell::OnceCell<&'static $provider> = const { ::std::cell::OnceCell::new() };
                    }
                    &SLOT
                }
            }

            #[cfg(target_family = "wasm")]
            type __WasmCcmGlue = $crate::export::Glue<__WasmCcmInstance>;

            #[cfg(target_family = "wasm")]
    $crate::wit::export_world!(__WasmCcmGlue with_types_in $crate::wit);
        };
    };
}
