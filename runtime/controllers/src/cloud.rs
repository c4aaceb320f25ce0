//! What the provider knows of a node, through InstancesV2 when it has it and
//! through the first instances API otherwise, as upstream does.

use k8s_openapi::api::core::v1::Node;
use wasm_ccm_host::types::InstanceMetadata;
use wasm_ccm_host::{ProviderError, ProviderHandle};

fn provider_id(node: &Node) -> Option<String> {
    node.spec.as_ref().and_then(|spec| spec.provider_id.clone()).filter(|id| !id.is_empty())
}

/// The node's provider ID: its own, or `<provider>://<instance ID>`.
async fn provider_id_or_lookup(provider: &ProviderHandle, node: &Node) -> Result<String, ProviderError> {
    match provider_id(node) {
        Some(id) => Ok(id),
        None => {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let instance = provider.instance_id(name).await?;
            Ok(format!("{}://{instance}", provider.info().name))
        }
    }
}

/// The node's instance metadata.
///
/// # Errors
/// The provider's, including `NotImplemented` when it supports neither
/// instances API.
pub async fn instance_metadata(provider: &ProviderHandle, node: &Node) -> Result<InstanceMetadata, ProviderError> {
    let parts = provider.info().parts;
    if parts.instances_v2 {
        return provider.instance_metadata(node).await;
    }
    if !parts.instances {
        return Err(ProviderError::NotImplemented);
    }
    let provider_id = provider_id_or_lookup(provider, node).await?;
    let instance_type = provider.instance_type_by_provider_id(&provider_id).await?;
    let node_addresses = provider.node_addresses_by_provider_id(&provider_id).await?;
    let (zone, region) = if parts.zones {
        let zone = provider.get_zone_by_provider_id(&provider_id).await?;
        (zone.failure_domain, zone.region)
    } else {
        Default::default()
    };
    Ok(InstanceMetadata {
        provider_id,
        instance_type,
        node_addresses,
        zone,
        region,
        additional_labels: Default::default(),
    })
}

/// Whether the node's instance exists; a provider that cannot tell counts as
/// yes, so that no node is deleted on a guess.
///
/// # Errors
/// The provider's.
pub async fn instance_exists(provider: &ProviderHandle, node: &Node) -> Result<bool, ProviderError> {
    let parts = provider.info().parts;
    let answer = if parts.instances_v2 {
        provider.instance_exists(node).await
    } else if parts.instances {
        match provider_id_or_lookup(provider, node).await {
            Ok(id) => provider.instance_exists_by_provider_id(&id).await,
            Err(ProviderError::InstanceNotFound) => Ok(false),
            Err(err) => Err(err),
        }
    } else {
        Ok(true)
    };
    match answer {
        Err(ProviderError::NotImplemented | ProviderError::ImplementedElsewhere) => Ok(true),
        other => other,
    }
}

/// Whether the node's instance is shut down; a provider that cannot tell
/// counts as no.
///
/// # Errors
/// The provider's.
pub async fn instance_shutdown(provider: &ProviderHandle, node: &Node) -> Result<bool, ProviderError> {
    let parts = provider.info().parts;
    let answer = if parts.instances_v2 {
        provider.instance_shutdown(node).await
    } else if parts.instances {
        let id = provider_id_or_lookup(provider, node).await?;
        provider.instance_shutdown_by_provider_id(&id).await
    } else {
        Ok(false)
    };
    match answer {
        Err(ProviderError::NotImplemented | ProviderError::ImplementedElsewhere) => Ok(false),
        other => other,
    }
}
