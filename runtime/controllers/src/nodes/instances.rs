//! What the cloud knows of a node, through InstancesV2 when the provider
//! has it and through the first instances API otherwise, with upstream's
//! fallbacks from the by-provider-ID calls to the by-name ones, so that a
//! provider that only knows nodes by name still serves.

use k8s_openapi::api::core::v1::{Node, NodeAddress};
use wasm_ccm_cloud::{InstanceMetadata, ProviderError};

use wasm_ccm_cloud::Cloud;

fn own_provider_id(node: &Node) -> Option<String> {
    node.spec.as_ref().and_then(|spec| spec.provider_id.clone()).filter(|id| !id.is_empty())
}

fn name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// The node's provider ID: its own, else `<provider>://<InstanceID>`, as
/// upstream's `GetInstanceProviderID`.
async fn provider_id<C: Cloud>(cloud: &C, node: &Node) -> Result<String, ProviderError> {
    match own_provider_id(node) {
        Some(id) => Ok(id),
        None => Ok(format!("{}://{}", cloud.info().name, cloud.instance_id(name(node)).await?)),
    }
}

/// The first answer of `by_id` (when there is an ID) or else of `by_name`;
/// the by-name error says both.
async fn by_id_or_name<T>(
    provider_id: &str,
    by_id: impl Future<Output = Result<T, ProviderError>>,
    by_name: impl Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    let id_error = if provider_id.is_empty() {
        ProviderError::NotImplemented
    } else {
        match by_id.await {
            Ok(value) => return Ok(value),
            Err(err) => err,
        }
    };
    by_name.await.map_err(|err| match err {
        ProviderError::Cloud(message) => {
            ProviderError::Cloud(format!("by provider ID: {id_error}; by node name: {message}"))
        }
        other => other,
    })
}

/// The node's instance metadata, as upstream's cloud node controller gets
/// it to initialise a node.
///
/// # Errors
/// The provider's, `NotImplemented` when it supports neither instances API,
/// and `InvalidResult` when InstancesV2 gives no provider ID for a node
/// without one.
pub async fn instance_metadata<C: Cloud>(cloud: &C, node: &Node) -> Result<InstanceMetadata, ProviderError> {
    let parts = cloud.info().parts;
    if parts.instances_v2 {
        let mut metadata = cloud.instance_metadata(node).await?;
        if metadata.provider_id.is_empty() {
            metadata.provider_id = own_provider_id(node).ok_or_else(|| {
                ProviderError::InvalidResult(format!(
                    "cloud provider does not set node provider ID for node {}",
                    name(node)
                ))
            })?;
        }
        return Ok(metadata);
    }
    if !parts.instances {
        return Err(ProviderError::NotImplemented);
    }
    let provider_id = match provider_id(cloud, node).await {
        Ok(id) => id,
        Err(ProviderError::NotImplemented) => {
            tracing::debug!(node = name(node), "the provider gives no instance IDs: using the node's name");
            String::new()
        }
        Err(err) => return Err(err),
    };
    let node_addresses = by_id_or_name(
        &provider_id,
        cloud.node_addresses_by_provider_id(&provider_id),
        cloud.node_addresses(name(node)),
    )
    .await?;
    let instance_type =
        by_id_or_name(&provider_id, cloud.instance_type_by_provider_id(&provider_id), cloud.instance_type(name(node)))
            .await?;
    let (zone, region) = if parts.zones {
        let zone = by_id_or_name(
            &provider_id,
            cloud.get_zone_by_provider_id(&provider_id),
            cloud.get_zone_by_node_name(name(node)),
        )
        .await?;
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

/// The node's addresses, as upstream's periodic node status update gets
/// them.
///
/// # Errors
/// The provider's, `NotImplemented` when it supports neither instances API.
pub async fn node_addresses<C: Cloud>(cloud: &C, node: &Node) -> Result<Vec<NodeAddress>, ProviderError> {
    let parts = cloud.info().parts;
    if parts.instances_v2 {
        return Ok(cloud.instance_metadata(node).await?.node_addresses);
    }
    if !parts.instances {
        return Err(ProviderError::NotImplemented);
    }
    let provider_id = own_provider_id(node).unwrap_or_default();
    by_id_or_name(&provider_id, cloud.node_addresses_by_provider_id(&provider_id), cloud.node_addresses(name(node)))
        .await
}

/// Whether the node's instance exists. Through the first instances API, an
/// instance the cloud does not find by name does not exist; one it gives an
/// empty ID is asked about as `<provider>://`, as upstream 1.33 asks.
///
/// # Errors
/// The provider's, `NotImplemented` included: the caller cannot tell.
pub async fn instance_exists<C: Cloud>(cloud: &C, node: &Node) -> Result<bool, ProviderError> {
    let parts = cloud.info().parts;
    if parts.instances_v2 {
        return cloud.instance_exists(node).await;
    }
    if !parts.instances {
        return Err(ProviderError::NotImplemented);
    }
    let provider_id = match provider_id(cloud, node).await {
        Ok(id) => id,
        Err(ProviderError::InstanceNotFound) => return Ok(false),
        Err(err) => return Err(err),
    };
    cloud.instance_exists_by_provider_id(&provider_id).await
}

/// Whether the node's instance is shut down; through the first instances
/// API, one the cloud does not find or cannot tell about is not.
///
/// # Errors
/// The provider's.
pub async fn instance_shutdown<C: Cloud>(cloud: &C, node: &Node) -> Result<bool, ProviderError> {
    let parts = cloud.info().parts;
    if parts.instances_v2 {
        return cloud.instance_shutdown(node).await;
    }
    if !parts.instances {
        return Err(ProviderError::NotImplemented);
    }
    let provider_id = match provider_id(cloud, node).await {
        Ok(id) => id,
        Err(ProviderError::InstanceNotFound) => return Ok(false),
        Err(err) => return Err(err),
    };
    match cloud.instance_shutdown_by_provider_id(&provider_id).await {
        Err(ProviderError::NotImplemented) => Ok(false),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use wasm_ccm_cloud::{Function, Parts};

    use super::*;
    use crate::fixtures::{NodeFixture, TestCloud};

    fn first_api_cloud() -> TestCloud {
        TestCloud::default().with_parts(Parts { instances: true, ..Parts::default() })
    }

    #[tokio::test]
    async fn an_empty_instance_id_is_asked_about_as_the_provider_s_bare_scheme() {
        let cloud = first_api_cloud().with_instance("node-a", "", "10.0.0.1");
        assert!(instance_exists(&cloud, &Node::test("node-a")).await.unwrap(), "the cloud knows test://");
        assert_eq!(cloud.take_calls(), ["instance-id node-a", "instance-exists-by-provider-id test://"]);
    }

    #[tokio::test]
    async fn an_instance_the_cloud_does_not_find_by_name_does_not_exist() {
        let cloud = first_api_cloud();
        assert!(!instance_exists(&cloud, &Node::test("node-a")).await.unwrap());
        cloud.fail(Function::InstanceId, ProviderError::Cloud("throttled".into()));
        assert!(instance_exists(&cloud, &Node::test("node-a")).await.is_err(), "another error is not an answer");
    }
}
