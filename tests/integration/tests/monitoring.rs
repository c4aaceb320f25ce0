//! The monitoring in `deploy/monitoring`: its alerting rules and dashboard
//! name only metrics a running `wasm-ccm` exports, the series of the rules'
//! unit tests (`make monitoring-checks` runs them with promtool) carry the
//! labels wasm-ccm gives them, and the kustomize component and the chart
//! carry the same rules and dashboard.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use wasm_ccm_apiserver::ApiServer;
use wasm_ccm_fake_cloud::FakeCloud;
use wasm_ccm_tests::process::{Process, http_get};
use wasm_ccm_tests::{free_port, guest, repository};

use crate::deploy::yaml_documents;

const PATIENCE: Duration = Duration::from_secs(30);

/// The labels the ServiceMonitor's scrape adds to every series.
const TARGET_LABELS: &[&str] = &["job", "instance", "namespace", "pod", "service", "endpoint", "container"];

/// PromQL's words that are not metric names: operators and keywords, and
/// aggregations, which a grouping may part from their parenthesis.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// The metric names a PromQL expression selects: every identifier outside
/// label matchers, ranges and grouping lists that is not a function, an
/// aggregation or a keyword.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut index = 0;
    let mut after_grouping = false;
    while index < chars.len() {
        let c = chars[index];
        match c {
            '{' | '[' | '"' => {
                let close = match c {
                    '{' => '}',
                    '[' => ']',
                    _ => '"',
                };
                index += 1;
                while index < chars.len() && chars[index] != close {
                    index += 1;
                }
                index += 1;
            }
            '(' if after_grouping => {
                while index < chars.len() && chars[index] != ')' {
                    index += 1;
                }
                after_grouping = false;
                index += 1;
            }
            c if c.is_ascii_digit() || c == '$' => {
                index += 1;
                while index < chars.len() && (chars[index].is_ascii_alphanumeric() || chars[index] == '_') {
                    index += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = index;
                while index < chars.len()
                    && (chars[index].is_ascii_alphanumeric() || chars[index] == '_' || chars[index] == ':')
                {
                    index += 1;
                }
                let word: String = chars[start..index].iter().collect();
                let next = chars[index..].iter().find(|c| !c.is_whitespace());
                if matches!(word.as_str(), "by" | "without" | "on" | "ignoring" | "group_left" | "group_right") {
                    // Its label list, when it has one.
                    after_grouping = next == Some(&'(');
                } else if next != Some(&'(') && !KEYWORDS.contains(&word.as_str()) {
                    names.insert(word);
                }
            }
            _ => index += 1,
        }
    }
    names
}

#[test]
fn metric_names_are_read_from_promql() {
    let expr = r#"sum by (namespace, provider) (rate(provider_call_duration_seconds_count{job="x", outcome=~"a|b"}[5m]))
        / on (provider) group_left sum(provider_calls) > 0.1 or absent(up{job="y"} == 1) unless a offset 30m"#;
    let expected = ["a", "provider_call_duration_seconds_count", "provider_calls", "up"];
    assert_eq!(metric_names(expr), expected.iter().map(|name| (*name).to_owned()).collect());
    assert_eq!(metric_names("histogram_quantile(0.99, sum by (le) (rate(x_bucket[$__rate_interval])))").len(), 1);
}

/// What `/metrics` of a running wasm-ccm says: the names of its samples,
/// and the label names of each one's series.
struct Exported {
    names: BTreeSet<String>,
    labels: BTreeMap<String, BTreeSet<String>>,
}

impl Exported {
    fn parse(text: &str) -> Self {
        let mut names = BTreeSet::new();
        let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                let suffixes: &[&str] = match kind {
                    "counter" => &["_total"],
                    "histogram" => &["_bucket", "_sum", "_count"],
                    "info" => &["_info"],
                    _ => &[""],
                };
                names.extend(suffixes.iter().map(|suffix| format!("{name}{suffix}")));
            } else if !line.starts_with('#')
                && let Some((name, rest)) = line.split_once('{')
            {
                let set = rest.rsplit_once('}').unwrap().0;
                let found = labels.entry(name.to_owned()).or_default();
                found.extend(set.split("\",").filter_map(|pair| pair.split_once('=')).map(|(key, _)| key.to_owned()));
                found.remove("le");
            }
        }
        Exported { names, labels }
    }
}

/// Runs `wasm-ccm run` with the fake provider under leader election on
/// the API server harness, has it make a load balancer and reject a new
/// version of its provider, and scrapes `/metrics`.
async fn scrape_a_running_wasm_ccm() -> Exported {
    let api = ApiServer::start().await.unwrap();
    let cloud = FakeCloud::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = |file: &str| dir.path().join(file).display().to_string();
    api.write_kubeconfig(&dir.path().join("kubeconfig")).unwrap();
    std::fs::write(dir.path().join("fake.json"), json!({"cloud": cloud.url()}).to_string()).unwrap();
    std::fs::write(dir.path().join("provider.wasm"), guest("provider-fake")).unwrap();
    let port = free_port().unwrap();
    let args: Vec<String> = [
        "run",
        "--kubeconfig",
        &path("kubeconfig"),
        "--provider",
        &path("provider.wasm"),
        "--provider-name",
        "fake",
        "--cloud-config",
        &path("fake.json"),
        "--provider-allow",
        &cloud.url(),
        "--provider-poll-interval",
        "200ms",
        "--leader-elect=true",
        "--configure-cloud-routes=false",
        "--secure-port",
        &port.to_string(),
        "--bind-address",
        "127.0.0.1",
        "--admin-plain-http",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let env = [("POD_NAME", "wasm-ccm-0"), ("POD_NAMESPACE", "kube-system")];
    let mut process = Process::start(crate::binary(), &args, &env);
    let admin = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + PATIENCE;
    let scrape = async || http_get(admin, "/metrics").await.map(|(_, text)| text).unwrap_or_default();

    let services: Api<Service> = Api::namespaced(api.client().await, "default");
    let service = json!({"metadata": {"name": "web"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}});
    services.create(&PostParams::default(), &serde_json::from_value(service).unwrap()).await.unwrap();
    let mut rejected = false;
    loop {
        if let Some(status) = process.wait(Duration::from_millis(10)).await {
            panic!("wasm-ccm exited with {status}");
        }
        let text = scrape().await;
        let leading = text.contains("leader_election_master_status{name=\"cloud-controller-manager\"} 1");
        let synced = text.contains("function=\"load-balancer.ensure\",outcome=\"ok\"");
        if leading && synced && !rejected {
            // A version that is no component: rejected, and the one serving keeps serving.
            std::fs::write(dir.path().join("provider.wasm"), b"not a component").unwrap();
            rejected = true;
        }
        if rejected && text.contains("provider_rejections_total{") {
            process.signal("TERM");
            process.wait(PATIENCE).await.expect("it stops");
            return Exported::parse(&text);
        }
        assert!(Instant::now() < deadline, "wasm-ccm did not lead, sync and reject in time:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The files registering wasm-ccm's metrics.
const SOURCES: &[&str] = &[
    "runtime/controllers/src/framework/metrics.rs",
    "runtime/host/src/metrics.rs",
    "runtime/reload/src/metrics.rs",
    "runtime/cli/src/run/process.rs",
];

/// Whether the sample name `name` is of a family the sources register, by
/// its name under its sub-registry's prefix: prometheus-client leaves a
/// family without series (no deadline hit yet, say) out of the scrape.
fn registered(name: &str) -> bool {
    let family =
        ["_total", "_bucket", "_sum", "_count"].iter().find_map(|suffix| name.strip_suffix(suffix)).unwrap_or(name);
    SOURCES.iter().any(|path| {
        let source = read(path);
        source.contains(&format!("\"{family}\""))
            || family.match_indices('_').any(|(at, _)| {
                source.contains(&format!("sub_registry_with_prefix(\"{}\")", &family[..at]))
                    && source.contains(&format!("\"{}\"", &family[at + 1..]))
            })
    })
}

#[test]
fn registered_families_are_found_in_the_sources() {
    for name in [
        "provider_deadline_exceeded_total",
        "provider_call_throttled_total",
        "workqueue_depth",
        "service_controller_nodesync_error_total",
        "wasm_ccm_build_info",
    ] {
        assert!(registered(name), "{name}");
    }
    for name in ["provider_deadlines_total", "workqueue_deepness", "controller_nodesync_error_total"] {
        assert!(!registered(name), "{name}");
    }
}

/// Every `expr` of the rule file `groups`.
fn rule_expressions(groups: &Value) -> Vec<String> {
    let groups = groups["groups"].as_array().expect("groups");
    groups
        .iter()
        .flat_map(|group| group["rules"].as_array().unwrap())
        .map(|rule| rule["expr"].as_str().unwrap().to_owned())
        .collect()
}

/// Every `expr` of the dashboard's panels.
fn dashboard_expressions(dashboard: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            found.push(target["expr"].as_str().unwrap().to_owned());
        }
    }
    found
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repository().join(path)).unwrap_or_else(|err| panic!("{path}: {err}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rules_and_dashboard_use_what_wasm_ccm_exports() {
    let exported = scrape_a_running_wasm_ccm().await;
    // The deadline counter is there at 0 before any deadline, so that the
    // timeout alert's increase() sees the first.
    for name in [
        "wasm_ccm_build_info",
        "process_cpu_seconds_total",
        "provider_call_duration_seconds_count",
        "provider_deadline_exceeded_total",
    ] {
        assert!(exported.names.contains(name), "{name} is exported: {:?}", exported.names);
    }

    let rules = yaml_documents(&read("deploy/monitoring/rules.yaml")).remove(0);
    let dashboard: Value = serde_json::from_str(&read("deploy/monitoring/dashboard.json")).unwrap();
    let expressions: Vec<(&str, String)> = rule_expressions(&rules)
        .into_iter()
        .map(|expr| ("rules.yaml", expr))
        .chain(dashboard_expressions(&dashboard).into_iter().map(|expr| ("dashboard.json", expr)))
        .collect();
    assert!(expressions.len() > 20, "{expressions:?}");
    // Grafana's label_values(SELECTOR, LABEL) lists the namespaces.
    let variable = dashboard["templating"]["list"][1]["query"]["query"].as_str().unwrap();
    let variable = variable.strip_prefix("label_values(").and_then(|rest| rest.rsplit_once(',')).unwrap().0;
    let mut used = BTreeSet::new();
    for (file, expr) in
        expressions.iter().map(|(file, expr)| (*file, expr.as_str())).chain([("dashboard.json", variable)])
    {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "{file}: {expr}");
        for name in names {
            assert!(
                exported.names.contains(&name) || registered(&name),
                "{file} uses {name}, which wasm-ccm does not export: {expr}"
            );
            used.insert(name);
        }
    }
    let scraped = used.iter().filter(|name| exported.names.contains(*name)).count();
    assert!(scraped * 2 > used.len(), "most names used are in the scrape: {scraped} of {used:?}");

    // The unit tests' series: exported names, with the labels wasm-ccm
    // gives them and those the scrape adds.
    let tests = yaml_documents(&read("deploy/monitoring/rules_test.yaml")).remove(0);
    let mut checked = BTreeSet::new();
    for test in tests["tests"].as_array().unwrap() {
        for series in test["input_series"].as_array().unwrap() {
            let series = series["series"].as_str().unwrap();
            let (name, labels) = series.split_once('{').unwrap();
            assert!(exported.names.contains(name) || registered(name), "the test series {series} is not exported");
            assert!(used.contains(name), "the test series {series} is not used by a rule");
            let given: BTreeSet<String> = labels
                .trim_end_matches('}')
                .split(',')
                .map(|pair| pair.split_once('=').unwrap().0.trim().to_owned())
                .filter(|label| !TARGET_LABELS.contains(&label.as_str()))
                .collect();
            if let Some(own) = exported.labels.get(name) {
                assert_eq!(&given, own, "the labels of {series}");
                checked.insert(name.to_owned());
            }
        }
    }
    for name in ["provider_call_duration_seconds_count", "provider_rejections_total", "leader_election_master_status"] {
        assert!(checked.contains(name), "{name}'s labels were checked: {checked:?}");
    }
}

#[test]
fn the_component_and_the_chart_carry_the_same_rules_and_dashboard() {
    let rules = yaml_documents(&read("deploy/monitoring/rules.yaml")).remove(0);
    let component = yaml_documents(&read("deploy/components/monitoring/prometheusrule.yaml")).remove(0);
    assert_eq!(component["kind"], "PrometheusRule");
    assert_eq!(component["spec"], rules, "deploy/components/monitoring/prometheusrule.yaml");
    let chart = yaml_documents(&read("deploy/chart/wasm-ccm/files/rules.yaml")).remove(0);
    assert_eq!(chart, rules, "deploy/chart/wasm-ccm/files/rules.yaml");
    assert_eq!(
        read("deploy/chart/wasm-ccm/files/dashboard.json"),
        read("deploy/monitoring/dashboard.json"),
        "deploy/chart/wasm-ccm/files/dashboard.json"
    );
    let alerts: Vec<&str> =
        rules["groups"][0]["rules"].as_array().unwrap().iter().filter_map(|rule| rule["alert"].as_str()).collect();
    assert_eq!(
        alerts,
        [
            "WasmCcmProviderRejected",
            "WasmCcmProviderCallsFailing",
            "WasmCcmProviderCallsTimingOut",
            "WasmCcmLoadBalancerSyncFailing",
            "WasmCcmNoLeader",
            "WasmCcmNodeInitialisationStuck"
        ]
    );
}
