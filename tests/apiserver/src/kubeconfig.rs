//! The kubeconfig that points clients and `kubectl` at a running server.

use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

/// The name of the cluster, user and context in the kubeconfig.
pub(crate) const NAME: &str = "wasm-ccm";

/// A kubeconfig with one cluster at `server` (plain HTTP, no credentials), a user and a current context.
pub(crate) fn kubeconfig(server: &str) -> Kubeconfig {
    Kubeconfig {
        clusters: vec![NamedCluster {
            name: NAME.into(),
            cluster: Some(Cluster { server: Some(server.into()), ..Default::default() }),
            ..Default::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: NAME.into(),
            auth_info: Some(AuthInfo::default()),
            ..Default::default()
        }],
        contexts: vec![NamedContext {
            name: NAME.into(),
            context: Some(Context { cluster: NAME.into(), user: Some(NAME.into()), ..Default::default() }),
            ..Default::default()
        }],
        current_context: Some(NAME.into()),
        kind: Some("Config".into()),
        api_version: Some("v1".into()),
        ..Default::default()
    }
}
