//! Names of the AWS objects made for a Service, and the tags that mark them.

use wasm_ccm_sdk::types::Service;

/// The tag naming the Service an object was made for, as `<namespace>/<name>`.
pub const SERVICE_NAME_TAG: &str = "kubernetes.io/service-name";

/// The tag key that marks objects of the cluster `cluster_name`.
pub fn cluster_tag(cluster_name: &str) -> String {
    format!("kubernetes.io/cluster/{cluster_name}")
}

/// `<namespace>/<name>` of a Service.
pub fn service_name(service: &Service) -> String {
    format!("{}/{}", service.namespace, service.name)
}

/// The tags put on everything made for `service`: owned by the cluster, and
/// the Service's name.
pub fn tags(cluster_name: &str, service: &Service) -> Vec<(String, String)> {
    vec![(cluster_tag(cluster_name), "owned".to_owned()), (SERVICE_NAME_TAG.to_owned(), service_name(service))]
}

/// The start of every target group name of a Service:
/// `k8s-<namespace:8>-<name:8>-`, with only letters and digits kept.
pub fn target_group_prefix(namespace: &str, name: &str) -> String {
    format!("k8s-{}-{}-", short(namespace), short(name))
}

/// A target group name of at most 32 characters: the Service's prefix and
/// ten hexadecimal digits of a hash of everything a target group cannot
/// change once created (its port, protocol and health check), so that a
/// change yields a new target group.
pub fn target_group_name(namespace: &str, name: &str, identity: &[&str]) -> String {
    let bytes = identity.iter().flat_map(|part| part.bytes().chain(std::iter::once(0)));
    let digest = format!("{:016x}", fnv1a(bytes));
    format!("{}{}", target_group_prefix(namespace, name), &digest[..10])
}

fn short(text: &str) -> String {
    text.chars().filter(char::is_ascii_alphanumeric).take(8).collect()
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.into_iter().fold(OFFSET_BASIS, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_its_reference_values() {
        assert_eq!(fnv1a(*b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(*b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(*b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn target_group_names_are_short_deterministic_and_distinct() {
        let name = target_group_name("production-east", "web-frontend", &["cluster", "80", "30080", "TCP"]);
        assert!(name.starts_with("k8s-producti-webfront-"), "{name}");
        assert_eq!(name.len(), 32);
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        assert_eq!(name, target_group_name("production-east", "web-frontend", &["cluster", "80", "30080", "TCP"]));
        assert_ne!(name, target_group_name("production-east", "web-frontend", &["cluster", "80", "30081", "TCP"]));
        assert_ne!(name, target_group_name("production-east", "web-frontend", &["cluster", "8", "030080", "TCP"]));
        assert_eq!(target_group_name("ns", "web", &[]).len(), "k8s-ns-web-".len() + 10);
    }

    #[test]
    fn tags_name_the_cluster_and_the_service() {
        let service = crate::testing::service("shop", "web", Vec::new());
        assert_eq!(
            tags("prod", &service),
            [
                ("kubernetes.io/cluster/prod".to_owned(), "owned".to_owned()),
                ("kubernetes.io/service-name".to_owned(), "shop/web".to_owned())
            ]
        );
    }
}
