//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis` and each group and group version.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::resources::{self, RESOURCES, STATUS_VERBS};

/// The Kubernetes version the server reports.
pub(crate) const GIT_VERSION: &str = "v1.33.0+wasm-ccm";

/// The discovery document at `path`, if `path` is a discovery path.
pub(crate) fn document(path: &str, address: SocketAddr) -> Option<Value> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["version"] => Some(version()),
        ["api"] => Some(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": address.to_string() }],
        })),
        ["api", "v1"] => Some(resource_list("", "v1")),
        ["apis"] => Some(json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": resources::groups().into_iter().map(|(g, v)| group(g, v)).collect::<Vec<_>>(),
        })),
        ["apis", name] => resources::groups().into_iter().find(|(g, _)| g == name).map(|(g, v)| {
            let mut group = group(g, v);
            group["kind"] = json!("APIGroup");
            group["apiVersion"] = json!("v1");
            group
        }),
        ["apis", name, version] => resources::groups().contains(&(name, version)).then(|| resource_list(name, version)),
        _ => None,
    }
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

fn group(name: &str, version: &str) -> Value {
    let group_version = json!({ "groupVersion": format!("{name}/{version}"), "version": version });
    json!({ "name": name, "versions": [group_version.clone()], "preferredVersion": group_version })
}

fn resource_list(group: &str, version: &str) -> Value {
    let mut entries = Vec::new();
    for resource in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        let mut entry = json!({
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": resource.verbs,
        });
        if !resource.short_names.is_empty() {
            entry["shortNames"] = json!(resource.short_names);
        }
        if !resource.categories.is_empty() {
            entry["categories"] = json!(resource.categories);
        }
        entries.push(entry);
        if resource.status {
            entries.push(json!({
                "name": format!("{}/status", resource.plural),
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": STATUS_VERBS,
            }));
        }
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address() -> SocketAddr {
        "127.0.0.1:6443".parse().unwrap()
    }

    #[test]
    fn core_resources_include_status_subresources_and_short_names() {
        let list = document("/api/v1", address()).unwrap();
        let resources = list["resources"].as_array().unwrap();
        let named = |name: &str| resources.iter().find(|r| r["name"] == name).cloned().unwrap();
        assert_eq!(named("nodes/status")["verbs"], json!(["get", "patch", "update"]));
        assert_eq!(named("services")["shortNames"], json!(["svc"]));
        assert_eq!(named("nodes")["namespaced"], false);
    }

    #[test]
    fn groups_are_discoverable() {
        let groups = document("/apis", address()).unwrap();
        let names: Vec<&str> = groups["groups"].as_array().unwrap().iter().filter_map(|g| g["name"].as_str()).collect();
        assert!(names.contains(&"coordination.k8s.io"));
        assert!(names.contains(&"events.k8s.io"));
        assert_eq!(document("/apis/events.k8s.io/v1", address()).unwrap()["resources"][0]["name"], "events");
        assert!(document("/apis/widgets.example.com", address()).is_none());
        assert_eq!(document("/version", address()).unwrap()["minor"], "33");
    }
}
