//! The table of resource types the server serves, as discovery reports them.

/// How a resource names its objects, checked on create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// A DNS-1123 subdomain: lowercase alphanumerics, `-` and `.`, at most 253 characters.
    Subdomain,
    /// A DNS-1123 label: lowercase alphanumerics and `-`, at most 63 characters.
    Label,
    /// A DNS-1035 label: like [`NameRule::Label`] but starting with a letter (Services).
    Rfc1035Label,
    /// Any path segment: not `.` or `..`, without `/` or `%` (RBAC objects).
    PathSegment,
}

/// How objects of a resource are converted between the stored form and the form clients see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// Stored as clients send them.
    Identity,
    /// `events.k8s.io/v1` Events, stored as core `v1` Events.
    EventsV1,
}

/// A field a field selector may name, where it lives in the object, and its value when absent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldLabel {
    /// The label used in `fieldSelector`.
    pub label: &'static str,
    /// The dotted path of the field in the object as clients see it.
    pub path: &'static str,
    /// The value compared when the field is absent.
    pub absent: &'static str,
}

/// One resource type: its discovery facts and the few rules that differ between types.
#[derive(Debug)]
pub(crate) struct ResourceType {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub status: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub verbs: &'static [&'static str],
    /// The name of the resource in request counts and [`crate::ApiServer::object`].
    pub key: &'static str,
    /// The storage shared by every resource that serves the same objects.
    pub storage: &'static str,
    pub conversion: Conversion,
    pub name_rule: NameRule,
    /// Field selector labels beyond `metadata.name` and `metadata.namespace`.
    pub field_labels: &'static [FieldLabel],
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
}

const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// The verbs of every status subresource.
pub(crate) const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

const fn field(label: &'static str) -> FieldLabel {
    FieldLabel { label, path: label, absent: "" }
}

const fn flag(label: &'static str) -> FieldLabel {
    FieldLabel { label, path: label, absent: "false" }
}

const CORE_EVENT_FIELDS: &[FieldLabel] = &[
    field("involvedObject.kind"),
    field("involvedObject.namespace"),
    field("involvedObject.name"),
    field("involvedObject.uid"),
    field("involvedObject.apiVersion"),
    field("involvedObject.resourceVersion"),
    field("involvedObject.fieldPath"),
    field("reason"),
    field("reportingComponent"),
    FieldLabel { label: "source", path: "source.component", absent: "" },
    field("type"),
];

const EVENTS_V1_FIELDS: &[FieldLabel] = &[
    field("regarding.kind"),
    field("regarding.namespace"),
    field("regarding.name"),
    field("regarding.uid"),
    field("regarding.apiVersion"),
    field("regarding.resourceVersion"),
    field("regarding.fieldPath"),
    field("reason"),
    field("reportingController"),
    field("type"),
];

const POD_FIELDS: &[FieldLabel] = &[
    field("spec.nodeName"),
    field("spec.restartPolicy"),
    field("spec.schedulerName"),
    field("spec.serviceAccountName"),
    flag("spec.hostNetwork"),
    field("status.phase"),
    field("status.podIP"),
    field("status.nominatedNodeName"),
];

/// A resource with the common defaults; each table entry overrides what differs.
const BASE: ResourceType = ResourceType {
    group: "",
    version: "v1",
    plural: "",
    singular: "",
    kind: "",
    namespaced: true,
    status: false,
    short_names: &[],
    categories: &[],
    verbs: VERBS,
    key: "",
    storage: "",
    conversion: Conversion::Identity,
    name_rule: NameRule::Subdomain,
    field_labels: &[],
    generation: false,
};

/// Every resource the server serves. Adding a plain stored resource takes one entry.
pub(crate) static RESOURCES: &[ResourceType] = &[
    ResourceType {
        plural: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        namespaced: false,
        status: true,
        short_names: &["ns"],
        key: "namespaces",
        storage: "namespaces",
        name_rule: NameRule::Label,
        field_labels: &[field("status.phase")],
        ..BASE
    },
    ResourceType {
        plural: "nodes",
        singular: "node",
        kind: "Node",
        namespaced: false,
        status: true,
        short_names: &["no"],
        key: "nodes",
        storage: "nodes",
        field_labels: &[flag("spec.unschedulable")],
        ..BASE
    },
    ResourceType {
        plural: "services",
        singular: "service",
        kind: "Service",
        status: true,
        short_names: &["svc"],
        categories: &["all"],
        key: "services",
        storage: "services",
        name_rule: NameRule::Rfc1035Label,
        field_labels: &[field("spec.clusterIP"), field("spec.type")],
        ..BASE
    },
    ResourceType {
        plural: "events",
        singular: "event",
        kind: "Event",
        short_names: &["ev"],
        key: "events",
        storage: "events",
        field_labels: CORE_EVENT_FIELDS,
        ..BASE
    },
    ResourceType {
        plural: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        short_names: &["cm"],
        key: "configmaps",
        storage: "configmaps",
        ..BASE
    },
    ResourceType {
        plural: "secrets",
        singular: "secret",
        kind: "Secret",
        key: "secrets",
        storage: "secrets",
        field_labels: &[field("type")],
        ..BASE
    },
    ResourceType {
        plural: "serviceaccounts",
        singular: "serviceaccount",
        kind: "ServiceAccount",
        short_names: &["sa"],
        key: "serviceaccounts",
        storage: "serviceaccounts",
        ..BASE
    },
    ResourceType {
        plural: "pods",
        singular: "pod",
        kind: "Pod",
        status: true,
        short_names: &["po"],
        categories: &["all"],
        key: "pods",
        storage: "pods",
        field_labels: POD_FIELDS,
        ..BASE
    },
    ResourceType {
        group: "events.k8s.io",
        plural: "events",
        singular: "event",
        kind: "Event",
        short_names: &["ev"],
        key: "events.events.k8s.io",
        storage: "events",
        conversion: Conversion::EventsV1,
        field_labels: EVENTS_V1_FIELDS,
        ..BASE
    },
    ResourceType {
        group: "coordination.k8s.io",
        plural: "leases",
        singular: "lease",
        kind: "Lease",
        key: "leases",
        storage: "leases",
        ..BASE
    },
    ResourceType {
        group: "apps",
        plural: "deployments",
        singular: "deployment",
        kind: "Deployment",
        status: true,
        short_names: &["deploy"],
        categories: &["all"],
        key: "deployments",
        storage: "deployments",
        generation: true,
        ..BASE
    },
    ResourceType {
        group: "rbac.authorization.k8s.io",
        plural: "clusterroles",
        singular: "clusterrole",
        kind: "ClusterRole",
        namespaced: false,
        key: "clusterroles",
        storage: "clusterroles",
        name_rule: NameRule::PathSegment,
        ..BASE
    },
    ResourceType {
        group: "rbac.authorization.k8s.io",
        plural: "clusterrolebindings",
        singular: "clusterrolebinding",
        kind: "ClusterRoleBinding",
        namespaced: false,
        key: "clusterrolebindings",
        storage: "clusterrolebindings",
        name_rule: NameRule::PathSegment,
        ..BASE
    },
    ResourceType {
        group: "rbac.authorization.k8s.io",
        plural: "roles",
        singular: "role",
        kind: "Role",
        key: "roles",
        storage: "roles",
        name_rule: NameRule::PathSegment,
        ..BASE
    },
    ResourceType {
        group: "rbac.authorization.k8s.io",
        plural: "rolebindings",
        singular: "rolebinding",
        kind: "RoleBinding",
        key: "rolebindings",
        storage: "rolebindings",
        name_rule: NameRule::PathSegment,
        ..BASE
    },
];

impl PartialEq for ResourceType {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for ResourceType {}

impl ResourceType {
    /// The `apiVersion` of objects of this resource: `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.to_string() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The resource as error messages name it: `services` or `leases.coordination.k8s.io`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() { self.plural.to_string() } else { format!("{}.{}", self.plural, self.group) }
    }

    /// The `kind` of a list of this resource.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// The field selector label of this resource named `label`, including the metadata ones.
    pub fn field_label(&self, label: &str) -> Option<FieldLabel> {
        const METADATA: &[FieldLabel] = &[field("metadata.name"), field("metadata.namespace")];
        METADATA.iter().chain(self.field_labels).find(|known| known.label == label).copied()
    }
}

/// The resource served at `group`/`version` under `plural`.
pub(crate) fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resource called `name`: its key (`services`, `events.events.k8s.io`) or `plural.group`.
pub(crate) fn by_name(name: &str) -> Option<&'static ResourceType> {
    RESOURCES.iter().find(|r| r.key == name).or_else(|| RESOURCES.iter().find(|r| r.qualified() == name))
}

/// The API groups other than the core group, in the order discovery lists them.
pub(crate) fn groups() -> Vec<(&'static str, &'static str)> {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for resource in RESOURCES.iter().filter(|r| !r.group.is_empty()) {
        if !groups.contains(&(resource.group, resource.version)) {
            groups.push((resource.group, resource.version));
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_resolve() {
        for resource in RESOURCES {
            assert_eq!(by_name(resource.key).map(|r| r.key), Some(resource.key));
            assert_eq!(by_name(&resource.qualified()).map(|r| r.key), Some(resource.key));
        }
        assert_eq!(by_name("events").map(|r| r.group), Some(""));
        assert_eq!(by_name("events.events.k8s.io").map(|r| r.group), Some("events.k8s.io"));
        assert_eq!(by_name("leases.coordination.k8s.io").map(|r| r.key), Some("leases"));
        assert!(by_name("widgets").is_none());
    }

    #[test]
    fn groups_are_listed_once() {
        let groups = groups();
        assert_eq!(groups.len(), 4);
        assert!(groups.contains(&("apps", "v1")));
    }
}
