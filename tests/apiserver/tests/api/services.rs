use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::{Service, ServicePort};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use wasm_ccm_test_support::{ServiceFixture, ServicePortFixture};

use crate::{api_code, server, within};

/// A Service in `default` with `ports` as (name, port, node port).
fn service(name: &str, type_: &str, ports: &[(&str, i32, Option<i32>)]) -> Service {
    let ports = ports
        .iter()
        .map(|(name, port, node_port)| ServicePort { node_port: *node_port, ..ServicePort::test(name, *port) });
    Service::test(name).with_type(type_).with_ports(ports)
}

fn node_ports(service: &Service) -> Vec<i32> {
    service.spec.as_ref().unwrap().ports.iter().flatten().filter_map(|p| p.node_port).collect()
}

#[tokio::test]
async fn load_balancers_are_defaulted_and_get_unique_node_ports() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client, "default");
        let mut seen = BTreeSet::new();
        let mut ips = BTreeSet::new();
        for index in 0..5 {
            let name = format!("web-{index}");
            let created = services
                .create(
                    &PostParams::default(),
                    &service(&name, "LoadBalancer", &[("http", 80, None), ("https", 443, None)]),
                )
                .await?;
            let spec = created.spec.clone().unwrap();
            let ip: Ipv4Addr = spec.cluster_ip.clone().unwrap().parse()?;
            assert_eq!(ip.octets()[0..1], [10]);
            assert!((96..112).contains(&ip.octets()[1]), "{ip} is outside 10.96.0.0/12");
            assert_eq!(spec.cluster_ips, Some(vec![ip.to_string()]));
            assert_eq!(spec.ip_families, Some(vec!["IPv4".to_string()]));
            assert_eq!(spec.ip_family_policy.as_deref(), Some("SingleStack"));
            assert_eq!(spec.session_affinity.as_deref(), Some("None"));
            assert_eq!(spec.internal_traffic_policy.as_deref(), Some("Cluster"));
            assert_eq!(spec.external_traffic_policy.as_deref(), Some("Cluster"));
            assert_eq!(spec.allocate_load_balancer_node_ports, Some(true));
            assert_eq!(spec.health_check_node_port, None);
            let port = &spec.ports.as_ref().unwrap()[0];
            assert_eq!(port.protocol.as_deref(), Some("TCP"));
            assert_eq!(port.target_port, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80)));
            for node_port in node_ports(&created) {
                assert!((30000..=32767).contains(&node_port));
                assert!(seen.insert(node_port), "node port {node_port} handed out twice");
            }
            assert!(ips.insert(ip), "cluster IP {ip} handed out twice");
            assert!(created.status.and_then(|s| s.load_balancer).is_some());
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn local_traffic_policy_gets_a_health_check_node_port() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client, "default");
        let mut local = service("local", "LoadBalancer", &[("http", 80, None)]);
        local.spec.as_mut().unwrap().external_traffic_policy = Some("Local".into());
        let created = services.create(&PostParams::default(), &local).await?;
        let health = created.spec.as_ref().unwrap().health_check_node_port.expect("healthCheckNodePort");
        assert!((30000..=32767).contains(&health));
        assert!(!node_ports(&created).contains(&health));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn requested_node_ports_are_kept_refused_when_taken_and_released() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        let services: Api<Service> = Api::namespaced(client.clone(), "default");
        let first = services
            .create(&PostParams::default(), &service("first", "NodePort", &[("http", 80, Some(30080))]))
            .await?;
        assert_eq!(node_ports(&first), vec![30080]);

        let taken =
            services.create(&PostParams::default(), &service("second", "NodePort", &[("http", 80, Some(30080))])).await;
        assert_eq!(api_code(taken), Ok((422, "Invalid".into())));
        let out_of_range =
            services.create(&PostParams::default(), &service("third", "NodePort", &[("http", 80, Some(80))])).await;
        assert_eq!(api_code(out_of_range), Ok((422, "Invalid".into())));

        let mut omitted = first.clone();
        omitted.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].node_port = None;
        omitted.spec.as_mut().unwrap().cluster_ip = None;
        omitted.spec.as_mut().unwrap().cluster_ips = None;
        let updated = services.replace("first", &PostParams::default(), &omitted).await?;
        assert_eq!(node_ports(&updated), vec![30080], "an update keeps node ports it omits");
        assert_eq!(updated.spec.as_ref().unwrap().cluster_ip, first.spec.as_ref().unwrap().cluster_ip);

        let mut to_cluster_ip = updated.clone();
        to_cluster_ip.spec.as_mut().unwrap().type_ = Some("ClusterIP".into());
        let switched = services.replace("first", &PostParams::default(), &to_cluster_ip).await?;
        assert!(node_ports(&switched).is_empty());
        assert_eq!(switched.spec.as_ref().unwrap().external_traffic_policy, None);

        let reused = services
            .create(&PostParams::default(), &service("second", "NodePort", &[("http", 80, Some(30080))]))
            .await?;
        assert_eq!(node_ports(&reused), vec![30080], "the released port can be taken again");

        services.delete("second", &DeleteParams::default()).await?;
        services.create(&PostParams::default(), &service("fourth", "NodePort", &[("http", 80, Some(30080))])).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn services_list_across_namespaces() -> anyhow::Result<()> {
    within(10, async {
        let (_server, client) = server().await?;
        for namespace in ["default", "kube-system"] {
            let services: Api<Service> = Api::namespaced(client.clone(), namespace);
            let dns = service("dns", "ClusterIP", &[("dns", 53, None)]).with_namespace(namespace);
            services.create(&PostParams::default(), &dns).await?;
        }
        let all: Api<Service> = Api::all(client.clone());
        let listed = all.list(&ListParams::default()).await?;
        let namespaces: Vec<_> = listed.iter().map(|s| s.metadata.namespace.clone().unwrap()).collect();
        assert_eq!(namespaces, ["default", "kube-system"]);
        let in_one: Api<Service> = Api::namespaced(client, "kube-system");
        assert_eq!(in_one.list(&ListParams::default()).await?.items.len(), 1);
        Ok(())
    })
    .await
}
