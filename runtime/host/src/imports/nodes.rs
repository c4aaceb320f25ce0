//! The `nodes` import: the node set a load-balancer call lends its
//! provider. The guest reads what it needs of the nodes through the
//! resource's methods; each view is computed once per snapshot of the
//! cluster's nodes and shared by every call, so a call costs what its
//! provider reads, not what the cluster holds.

use wasm_ccm_cloud::{NodeRef, NodeSet, PackedStrings};
use wasmtime::component::{HasData, Resource, ResourceTable};

use crate::bindings::LentNodes;
use crate::bindings::nodes::{Host, HostNodeSet};
use crate::bindings::types as wit;
use crate::call::convert;

/// What the `nodes` import works on: the call's resource table.
pub(crate) struct NodesImport;

impl HasData for NodesImport {
    type Data<'a> = NodesView<'a>;
}

/// The call's resource table, seen by the `nodes` import.
pub(crate) struct NodesView<'a>(pub(crate) &'a mut ResourceTable);

impl NodesView<'_> {
    fn set(&self, set: &Resource<LentNodes>) -> wasmtime::Result<&NodeSet> {
        Ok(&self.0.get(set)?.0)
    }
}

fn packed(strings: &PackedStrings) -> wit::PackedStrings {
    wit::PackedStrings { text: strings.text.clone(), ends: strings.ends.clone() }
}

fn node_ref(node: NodeRef) -> wit::NodeRef {
    wit::NodeRef { name: node.name, provider_id: node.provider_id }
}

impl Host for NodesView<'_> {}

impl HostNodeSet for NodesView<'_> {
    fn len(&mut self, set: Resource<LentNodes>) -> wasmtime::Result<u32> {
        Ok(u32::try_from(self.set(&set)?.current().len()).unwrap_or(u32::MAX))
    }

    fn names(&mut self, set: Resource<LentNodes>) -> wasmtime::Result<wit::PackedStrings> {
        Ok(packed(self.set(&set)?.current().names()))
    }

    fn provider_ids(&mut self, set: Resource<LentNodes>) -> wasmtime::Result<wit::PackedStrings> {
        Ok(packed(self.set(&set)?.current().provider_ids()))
    }

    fn addresses(
        &mut self,
        set: Resource<LentNodes>,
        address_type: wit::NodeAddressType,
    ) -> wasmtime::Result<wit::PackedStrings> {
        let addresses = self.set(&set)?.current().addresses(convert::address_type_name(address_type));
        Ok(packed(&addresses))
    }

    fn get(&mut self, set: Resource<LentNodes>, index: u32) -> wasmtime::Result<Option<wit::Node>> {
        let nodes = self.set(&set)?.current().nodes();
        Ok(usize::try_from(index).ok().and_then(|index| nodes.get(index)).map(|node| convert::node(node)))
    }

    fn has_previous(&mut self, set: Resource<LentNodes>) -> wasmtime::Result<bool> {
        Ok(self.set(&set)?.previous().is_some())
    }

    fn added(&mut self, set: Resource<LentNodes>) -> wasmtime::Result<Vec<u32>> {
        Ok(self.set(&set)?.added())
    }

    fn removed(&mut self, set: Resource<LentNodes>) -> wasmtime::Result<Vec<wit::NodeRef>> {
        Ok(self.set(&set)?.removed().into_iter().map(node_ref).collect())
    }

    fn drop(&mut self, set: Resource<LentNodes>) -> wasmtime::Result<()> {
        self.0.delete(set)?;
        Ok(())
    }
}
