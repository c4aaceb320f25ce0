//! Writes answered with the object's metadata alone
//! (`as=PartialObjectMetadata`), for a writer that reads nothing else of
//! the answer: the API server then spends nothing on encoding the whole
//! object, a quarter of what it spends on a Service's ingress write
//! (`--bench status_writes`).

use std::fmt::Debug;

use http::HeaderValue;
use http::header::ACCEPT;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{PartialObjectMeta, Request};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What a client accepts to be answered with an object's metadata alone.
pub const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// Patches the status of object `name` with `patch`, answered with the
/// object's metadata as the patch left it: its `resourceVersion` tells the
/// copy a watch delivers of it.
///
/// # Errors
/// When the API server refuses the patch or cannot be reached.
pub async fn patch_status<K, P>(
    api: &Api<K>,
    name: &str,
    params: &PatchParams,
    patch: &Patch<P>,
) -> kube::Result<PartialObjectMeta<K>>
where
    K: Resource + Clone + DeserializeOwned,
    P: Serialize + Debug,
{
    let mut request = Request::new(api.resource_url())
        .patch_subresource("status", name, params, patch)
        .map_err(kube::Error::BuildRequest)?;
    request.headers_mut().insert(ACCEPT, HeaderValue::from_static(METADATA));
    request.extensions_mut().insert("patch_status");
    api.clone().into_client().request(request).await
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{LoadBalancerIngress, Service};
    use kube::api::PostParams;
    use serde_json::json;
    use wasm_ccm_apiserver::ApiServer;
    use wasm_ccm_test_support::ServiceFixture;

    use super::*;

    #[tokio::test]
    async fn a_status_patch_is_answered_with_the_metadata_alone() {
        let server = ApiServer::start().await.unwrap();
        let services = Api::<Service>::namespaced(server.client().await, "default");
        services.create(&PostParams::default(), &Service::test("web")).await.unwrap();
        let patch = Patch::Strategic(json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]}}}));
        let answer = patch_status(&services, "web", &PatchParams::default(), &patch).await.unwrap();
        let kind = answer.types.as_ref().map(|types| types.kind.as_str());
        assert_eq!(kind, Some("PartialObjectMetadata"), "the metadata alone");

        let stored = services.get("web").await.unwrap();
        assert_eq!(answer.metadata.resource_version, stored.metadata.resource_version, "the copy the patch left");
        let ingress = stored.status.and_then(|status| status.load_balancer).and_then(|status| status.ingress);
        let written = LoadBalancerIngress { ip: Some("203.0.113.1".into()), ..LoadBalancerIngress::default() };
        assert_eq!(ingress, Some(vec![written]), "the status was written");
    }
}
