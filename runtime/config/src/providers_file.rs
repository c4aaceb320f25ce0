//! `--providers-config`: the providers one process runs side by side, each
//! with its own source, sandbox, limits and share of the work, as YAML or
//! JSON. A file is checked whole: every error of every provider is listed.

use std::collections::BTreeSet;
use std::collections::btree_map::Entry;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytesize::ByteSize;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::Selector;
use serde::Deserialize;
use wasm_ccm_controllers::{IngressRanges, LoadBalancerPolicy, Serves, max_ingress};
use wasm_ccm_distribution::TransparencyLog;
use wasm_ccm_fleet::{Planned, error_chain};
use wasm_ccm_host::{Confinement, Limits, ProviderSpec, Rate};
use wasm_ccm_reload::{InputFiles, Location, SourceSettings};

use crate::settings::cpu_millicores;
use crate::{OptionError, RegistryArgs, SettingsArgs, SourceArgs, Trust, TrustFile, Trusted};

/// The file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProvidersFile {
    /// The providers, by unique name.
    pub providers: Vec<ProviderEntry>,
}

/// One provider.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderEntry {
    /// The name its metrics, events, `/providers` entry and load balancer
    /// annotations carry.
    pub name: String,
    /// Its component, as `--provider`: a file, `configmap:NS/NAME/KEY` or
    /// `oci://REF`.
    pub source: String,
    /// As `--provider-sha256`.
    #[serde(default)]
    pub sha256: Option<String>,
    /// As `--provider-public-key`.
    #[serde(default)]
    pub public_key: Option<PathBuf>,
    /// As `--provider-signature`.
    #[serde(default)]
    pub signature: Option<PathBuf>,
    /// As `--provider-minimum-version`.
    #[serde(default)]
    pub minimum_version: Option<String>,
    /// As `--cloud-config`.
    #[serde(default)]
    pub cloud_config: Option<PathBuf>,
    /// As `--provider-credentials`.
    #[serde(default)]
    pub credentials: Option<PathBuf>,
    /// As `--provider-sealed-credentials`: `NAME=ROLE@ORIGIN` entries.
    #[serde(default)]
    pub sealed_credentials: Vec<String>,
    /// As `--provider-ca-file`.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// As `--provider-allow`.
    #[serde(default)]
    pub allow: Vec<String>,
    /// What it may use.
    #[serde(default)]
    pub limits: LimitsEntry,
    /// The `spec.loadBalancerClass`es of the Services it serves.
    #[serde(default)]
    pub load_balancer_classes: Vec<String>,
    /// Whether it serves Services without a class; one provider at most.
    #[serde(default)]
    pub default_load_balancer: bool,
    /// The labels of the namespaces whose Services it serves
    /// (`matchLabels`, `matchExpressions`); unset: every namespace.
    #[serde(default)]
    pub namespaces: Option<LabelSelector>,
    /// Whether it serves the node controllers; one provider at most.
    #[serde(default)]
    pub nodes: bool,
    /// Whether it serves the route controller; one provider at most.
    #[serde(default)]
    pub routes: bool,
    /// Where its load balancer ingress answers must fall: networks, IP
    /// addresses, host names and `*.suffix`es; unset: anywhere not refused
    /// for every provider.
    #[serde(default)]
    pub ingress_ranges: Vec<String>,
    /// The most entries one of its ingress answers may hold (1 to 16);
    /// unset: an address for each of the Service's IP families for each of
    /// its ports.
    #[serde(default)]
    pub max_ingress: Option<usize>,
    /// Whether its load balancers are ensured again each resync period;
    /// unset: they are.
    #[serde(default)]
    pub resync: Option<bool>,
}

/// A provider's limits; each unset one takes the default of its flag.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsEntry {
    /// Memory of one instance, as `--provider-memory` (`64MiB`).
    #[serde(default)]
    pub memory: Option<String>,
    /// Time one call may take, as `--provider-deadline` (`30s`).
    #[serde(default)]
    pub deadline: Option<String>,
    /// Calls at once, as `--provider-concurrency`.
    #[serde(default)]
    pub concurrent_calls: Option<usize>,
    /// Instances kept between calls, as `--provider-kept-instances`.
    #[serde(default)]
    pub kept_instances: Option<usize>,
    /// Calls started per second; unset: no limit.
    #[serde(default)]
    pub calls_per_second: Option<NonZeroU32>,
    /// Outbound HTTP requests per second; unset: no limit.
    #[serde(default)]
    pub http_requests_per_second: Option<NonZeroU32>,
    /// Outbound HTTP requests at once after a quiet spell; by default one
    /// second's worth.
    #[serde(default)]
    pub http_burst: Option<NonZeroU32>,
    /// The largest HTTP response body, as `--provider-max-response`.
    #[serde(default)]
    pub max_response: Option<String>,
    /// The CPU of its guest code, all calls together, as `--provider-cpu`
    /// (`1`, `0.5`, `250m`).
    #[serde(default)]
    pub cpu: Option<String>,
}

/// A provider of the file, read and checked: ready to load.
pub type PlannedProvider = Planned<ProviderLoad>;

/// What loading a provider needs. Two loads are the same when their
/// entries, less what the provider serves, are: a change of what it serves
/// reaches the provider serving without a reload, and the files an entry
/// names are followed by the provider's reloader, not compared here.
#[derive(Clone)]
pub struct ProviderLoad {
    /// Its entry, less what it serves.
    loading: ProviderEntry,
    /// Its sandbox, configuration and credentials.
    pub template: ProviderSpec,
    /// Where its versions come from; `None`: the template's component,
    /// fixed.
    pub source: Option<SourceSettings>,
    /// Its configuration file and credentials directory, watched.
    pub inputs: InputFiles,
    /// Whether the versions it serves are recorded for roll-back
    /// protection: a single provider's are, and a providers file's when the
    /// trust file names it.
    pub records_versions: bool,
}

impl PartialEq for ProviderLoad {
    fn eq(&self, other: &Self) -> bool {
        self.loading == other.loading
    }
}

impl ProviderLoad {
    /// The load of the one provider of a single-provider run, named as its
    /// template.
    pub fn single(template: ProviderSpec, source: Option<SourceSettings>, inputs: InputFiles) -> Self {
        let loading = ProviderEntry { name: template.name.clone(), ..ProviderEntry::default() };
        ProviderLoad { loading, template, source, inputs, records_versions: true }
    }
}

impl ProviderEntry {
    /// The entry without what the provider serves: what loading it takes.
    fn loading(&self) -> ProviderEntry {
        ProviderEntry {
            load_balancer_classes: Vec::new(),
            default_load_balancer: false,
            namespaces: None,
            ingress_ranges: Vec::new(),
            max_ingress: None,
            resync: None,
            ..self.clone()
        }
    }
}

/// Why a providers file was refused: every problem found.
#[derive(Debug, thiserror::Error)]
#[error("the providers file is invalid:\n  - {}", .problems.join("\n  - "))]
pub struct InvalidProvidersFile {
    /// Each problem, naming its provider.
    pub problems: Vec<String>,
}

impl InvalidProvidersFile {
    fn one(problem: String) -> Self {
        InvalidProvidersFile { problems: vec![problem] }
    }
}

/// How every provider of a file is read: what flags give them all.
#[derive(Debug, Clone)]
pub struct FileDefaults {
    /// The cluster's name, passed to every provider.
    pub cluster_name: String,
    /// How often sources and inputs are polled.
    pub poll_interval: Duration,
    /// How registries are reached.
    pub registry: RegistryArgs,
    /// Where the file's paths may lead (`--providers-root`).
    pub roots: Confinement,
    /// What each provider is trusted with (`--provider-trust`), which its
    /// entry may only narrow.
    pub trust: TrustFile,
    /// The operator's `--provider-*` limits: each provider's unless its
    /// entry sets a lower one; a higher one is refused.
    pub ceilings: Limits,
    /// What sigstore bundles' log entries are checked against
    /// (`--provider-tlog-public-key`, `--provider-insecure-ignore-tlog`).
    pub transparency_log: TransparencyLog,
}

/// Parses `bytes` (YAML, of which JSON is a part) and checks every
/// provider: its sandbox and source as their flags are checked, and what
/// it serves against the others.
///
/// # Errors
/// Every problem found, each naming its provider.
pub fn plan(bytes: &[u8], defaults: &FileDefaults) -> Result<Vec<PlannedProvider>, InvalidProvidersFile> {
    let file: ProvidersFile = serde_norway::from_slice(bytes)
        .map_err(|err| InvalidProvidersFile::one(format!("not a providers file: {err}")))?;
    let mut problems = Vec::new();
    if file.providers.is_empty() {
        problems.push("no providers".to_owned());
    }
    let mut names = BTreeSet::new();
    let mut classes = std::collections::BTreeMap::<&str, &str>::new();
    let mut holders = std::collections::BTreeMap::<&str, &str>::new();
    for entry in &file.providers {
        let name = entry.name.as_str();
        if name.trim().is_empty() || name.len() > 63 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            problems.push(format!("provider {name:?}: a name is 1 to 63 letters, digits and dashes"));
        }
        if !names.insert(name) {
            problems.push(format!("provider {name}: the name is used twice"));
        }
        for class in &entry.load_balancer_classes {
            if class.trim().is_empty() {
                problems.push(format!("provider {name}: an empty load balancer class"));
            } else if let Some(other) = classes.insert(class, name) {
                problems.push(format!("provider {name}: load balancer class {class} is served by {other} already"));
            }
        }
        let singles =
            [("defaultLoadBalancer", entry.default_load_balancer), ("nodes", entry.nodes), ("routes", entry.routes)];
        for (what, _) in singles.into_iter().filter(|(_, serves)| *serves) {
            match holders.entry(what) {
                Entry::Occupied(other) => {
                    problems.push(format!("provider {name}: {what} is served by {} already", other.get()));
                }
                Entry::Vacant(free) => {
                    free.insert(name);
                }
            }
        }
        if entry.load_balancer_classes.is_empty() && !entry.default_load_balancer && !entry.nodes && !entry.routes {
            problems.push(format!(
                "provider {name}: serves nothing (set loadBalancerClasses, defaultLoadBalancer, nodes or routes)"
            ));
        }
    }
    let mut planned = Vec::new();
    for entry in file.providers {
        let namespaces = match entry.namespaces.clone().map(Selector::try_from).transpose() {
            Ok(namespaces) => namespaces,
            Err(err) => {
                problems.push(format!("provider {}: namespaces: {err}", entry.name));
                continue;
            }
        };
        let load_balancers = load_balancer_policy(&entry);
        match plan_one(&entry, defaults).and_then(|planned| Ok((planned, load_balancers?))) {
            Ok(((template, source, inputs, records_versions), load_balancers)) => {
                let serves = Serves {
                    load_balancer_classes: entry.load_balancer_classes.iter().cloned().collect(),
                    default_load_balancer: entry.default_load_balancer,
                    namespaces,
                    nodes: entry.nodes,
                    routes: entry.routes,
                };
                planned.push(PlannedProvider {
                    name: Arc::from(entry.name.as_str()),
                    spec: ProviderLoad {
                        loading: entry.loading(),
                        template,
                        source: Some(source),
                        inputs,
                        records_versions,
                    },
                    serves,
                    load_balancers,
                    fit_to_support: false,
                });
            }
            Err(err) => problems.push(format!("provider {}: {}", entry.name, error_chain(&err))),
        }
    }
    if problems.is_empty() { Ok(planned) } else { Err(InvalidProvidersFile { problems }) }
}

/// What `entry` sets for its load balancers.
fn load_balancer_policy(entry: &ProviderEntry) -> Result<LoadBalancerPolicy, OptionError> {
    let max_ingress = entry
        .max_ingress
        .map(max_ingress)
        .transpose()
        .map_err(|err| OptionError::Unparsable { option: "maxIngress", problem: err.to_string() })?;
    Ok(LoadBalancerPolicy {
        ingress_ranges: IngressRanges::new(&entry.ingress_ranges)?,
        resync: entry.resync.unwrap_or(true),
        max_ingress,
    })
}

/// `asked`, the providers file's value of `field`, or the operator's
/// `ceiling` (the flag `flag`) where the file sets none.
///
/// # Errors
/// When `asked` is above the ceiling.
fn within<T: PartialOrd>(
    field: &'static str,
    flag: &'static str,
    asked: Option<T>,
    ceiling: T,
    shown: impl Fn(&T) -> String,
) -> Result<T, OptionError> {
    match asked {
        Some(asked) if asked > ceiling => {
            Err(OptionError::AboveCeiling { field, flag, asked: shown(&asked), ceiling: shown(&ceiling) })
        }
        Some(asked) => Ok(asked),
        None => Ok(ceiling),
    }
}

/// One provider's sandbox, source and inputs, read through the flags'
/// own checks, and whether the trust file names it.
fn plan_one(
    entry: &ProviderEntry,
    defaults: &FileDefaults,
) -> Result<(ProviderSpec, SourceSettings, InputFiles, bool), OptionError> {
    let location: Location =
        entry.source.parse().map_err(|source| OptionError::Source { option: "source", source: Box::new(source) })?;
    if defaults.roots.is_closed() {
        let local = matches!(location, Location::File(_)).then_some("source");
        let named = [
            ("publicKey", entry.public_key.is_some()),
            ("signature", entry.signature.is_some()),
            ("cloudConfig", entry.cloud_config.is_some()),
            ("credentials", entry.credentials.is_some()),
            ("caFile", entry.ca_file.is_some()),
        ];
        if let Some(field) = local.or_else(|| named.iter().find(|(_, set)| *set).map(|(field, _)| *field)) {
            return Err(OptionError::Unconfined { field });
        }
    }
    let limits = &entry.limits;
    let ceilings = &defaults.ceilings;
    let unparsable = |option| move |problem: String| OptionError::Unparsable { option, problem };
    let size = |value: &Option<String>, option| {
        value.as_deref().map(str::parse::<ByteSize>).transpose().map_err(unparsable(option))
    };
    let sealed_credentials = entry
        .sealed_credentials
        .iter()
        .map(|sealed| sealed.parse().map_err(|source| OptionError::Seal { option: "sealedCredentials", source }))
        .collect::<Result<_, _>>()?;
    let minimum_version = entry
        .minimum_version
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|err: semver::Error| unparsable("minimumVersion")(err.to_string()))?;
    let confined = SourceArgs {
        public_key: entry.public_key.clone(),
        confinement: defaults.roots.clone(),
        ..SourceArgs::default()
    };
    let asked = Trust {
        public_key: confined.read_public_key()?,
        minimum_version,
        sealed_credentials,
        credentials: entry.credentials.clone(),
    };
    let Trusted { trust: trusted, by_name } = defaults.trust.of(&entry.name)?;
    if let Some(path) = asked.credentials.as_deref().filter(|path| !by_name && defaults.trust.names_credentials(path)) {
        return Err(OptionError::CredentialsOfAnother { provider: entry.name.clone(), path: path.to_owned() });
    }
    let credentials_confinement = match trusted.credentials {
        Some(_) => Confinement::default(),
        None => defaults.roots.clone(),
    };
    let trust = trusted.narrow(asked)?;
    let settings = SettingsArgs {
        cloud_config: entry.cloud_config.clone(),
        credentials: trust.credentials,
        sealed_credentials: trust.sealed_credentials,
        ca_file: entry.ca_file.clone(),
        allow: entry.allow.clone(),
        deadline: Some(within(
            "limits.deadline",
            "--provider-deadline",
            limits
                .deadline
                .as_deref()
                .map(humantime::parse_duration)
                .transpose()
                .map_err(|err| unparsable("limits.deadline")(err.to_string()))?,
            ceilings.deadline,
            |deadline| format!("{}s", deadline.as_secs_f64()),
        )?),
        memory: Some(within(
            "limits.memory",
            "--provider-memory",
            size(&limits.memory, "limits.memory")?,
            ByteSize(ceilings.memory),
            |memory| memory.to_string(),
        )?),
        concurrency: Some(within(
            "limits.concurrentCalls",
            "--provider-concurrency",
            limits.concurrent_calls,
            ceilings.concurrency,
            |calls| calls.to_string(),
        )?),
        kept_instances: Some(within(
            "limits.keptInstances",
            "--provider-kept-instances",
            limits.kept_instances,
            ceilings.kept_instances,
            |kept| kept.to_string(),
        )?),
        max_response: Some(within(
            "limits.maxResponse",
            "--provider-max-response",
            size(&limits.max_response, "limits.maxResponse")?,
            ByteSize(ceilings.http_response_body as u64),
            |size| size.to_string(),
        )?),
        cpu: Some(within(
            "limits.cpu",
            "--provider-cpu",
            limits.cpu.as_deref().map(cpu_millicores).transpose().map_err(unparsable("limits.cpu"))?,
            ceilings.cpu_millicores,
            |cpu| format!("{cpu}m"),
        )?),
        confinement: defaults.roots.clone(),
        credentials_confinement,
    };
    let mut template = settings.template(&entry.name, &defaults.cluster_name)?;
    template.limits.calls = limits.calls_per_second.map(|per_second| Rate { per_second, burst: per_second });
    template.limits.http_requests = limits
        .http_requests_per_second
        .map(|per_second| Rate { per_second, burst: limits.http_burst.unwrap_or(per_second) });
    if limits.http_burst.is_some() && limits.http_requests_per_second.is_none() {
        return Err(OptionError::BurstWithoutRate);
    }
    let source_args = SourceArgs {
        sha256: entry.sha256.clone(),
        public_key: None,
        signature: entry.signature.clone(),
        tlog_public_key: None,
        ignore_tlog: false,
        poll_interval: defaults.poll_interval,
        minimum_version: trust.minimum_version,
        registry: defaults.registry.clone(),
        confinement: defaults.roots.clone(),
    };
    let mut source = source_args.settings_with_key(location, trust.public_key)?;
    source.verification.transparency_log = defaults.transparency_log.clone();
    Ok((template, source, settings.input_files(), by_name))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn defaults() -> FileDefaults {
        FileDefaults {
            cluster_name: "kubernetes".into(),
            poll_interval: Duration::from_secs(30),
            registry: RegistryArgs::default(),
            roots: Confinement::beneath(&["/".into()]).unwrap(),
            trust: TrustFile::default(),
            ceilings: Limits { cpu_millicores: NonZeroU32::new(2000).unwrap(), ..Limits::default() },
            transparency_log: TransparencyLog::Unconfigured,
        }
    }

    #[test]
    fn a_file_of_two_providers_is_planned_with_their_limits_and_classes() {
        let file = br#"
providers:
  - name: vendor-a
    source: /providers/a.wasm
    allow: ["https://api.a.example"]
    limits: {memory: 32MiB, deadline: 5s, concurrentCalls: 8, callsPerSecond: 50, httpRequestsPerSecond: 10, httpBurst: 20, cpu: 250m}
    loadBalancerClasses: [a.example/lb]
    defaultLoadBalancer: true
    nodes: true
  - name: vendor-b
    source: configmap:kube-system/vendor-b/provider.wasm
    loadBalancerClasses: [b.example/lb, b.example/internal]
    ingressRanges: [203.0.113.0/24, "*.lb.b.example"]
    maxIngress: 3
    resync: false
"#;
        let planned = plan(file, &defaults()).unwrap();
        let [a, b] = planned.as_slice() else { panic!("two providers") };
        assert_eq!(a.spec.template.name, "vendor-a");
        assert_eq!(a.spec.template.limits.memory, 32 << 20);
        assert_eq!(a.spec.template.limits.deadline, Duration::from_secs(5));
        assert_eq!(a.spec.template.limits.concurrency, 8);
        let http = a.spec.template.limits.http_requests.unwrap();
        assert_eq!((http.per_second.get(), http.burst.get()), (10, 20));
        assert_eq!(a.spec.template.limits.calls.unwrap().per_second.get(), 50);
        assert_eq!(a.spec.template.limits.cpu_millicores.get(), 250);
        assert_eq!(b.spec.template.limits.cpu_millicores.get(), 2000, "the operator's by default");
        assert!(a.serves.default_load_balancer && a.serves.nodes && !a.serves.routes);
        assert_eq!(b.serves.load_balancer_classes.len(), 2);
        assert_eq!(b.spec.template.limits.http_requests, None);
        assert_eq!(a.load_balancers, LoadBalancerPolicy::default(), "any answer, resynced");
        let ranges = IngressRanges::new(["203.0.113.0/24", "*.lb.b.example"]).unwrap();
        let max_ingress = Some(max_ingress(3).unwrap());
        assert_eq!(b.load_balancers, LoadBalancerPolicy { ingress_ranges: ranges, resync: false, max_ingress });
    }

    #[test]
    fn every_problem_of_a_bad_file_is_listed() {
        let file = br#"{"providers": [
  {"name": "a", "source": "/a.wasm", "loadBalancerClasses": ["x"], "nodes": true},
  {"name": "a", "source": "/b.wasm", "loadBalancerClasses": ["x"], "nodes": true},
  {"name": "c", "source": "/c.wasm"},
  {"name": "d", "source": "/d.wasm", "routes": true, "limits": {"memory": "lots"}},
  {"name": "e", "source": "ftp://nowhere", "routes": true},
  {"name": "f", "source": "/f.wasm", "loadBalancerClasses": ["f"], "ingressRanges": ["10.0.0.0/33"]},
  {"name": "g", "source": "/g.wasm", "loadBalancerClasses": ["g"], "maxIngress": 17}
]}"#;
        let Err(InvalidProvidersFile { problems }) = plan(file, &defaults()) else { panic!("refused") };
        let expected = [
            "provider a: the name is used twice",
            "provider a: load balancer class x is served by a already",
            "provider a: nodes is served by a already",
            "provider c: serves nothing",
            "provider e: routes is served by d already",
            "provider d: limits.memory",
            "provider e: source",
            "provider f: invalid ingress range \"10.0.0.0/33\"",
            "provider g: maxIngress: 17 entries: an answer may hold from 1 to 16",
        ];
        for expected in expected {
            assert!(problems.iter().any(|problem| problem.starts_with(expected)), "{expected}: {problems:#?}");
        }
    }

    #[test]
    fn a_provider_serves_the_namespaces_its_selector_picks() {
        let file = br#"
providers:
  - name: a
    source: /a.wasm
    loadBalancerClasses: [a.example/lb]
    namespaces:
      matchLabels: {tenant: a}
      matchExpressions: [{key: tier, operator: NotIn, values: [sandbox]}]
  - name: b
    source: /b.wasm
    defaultLoadBalancer: true
"#;
        let planned = plan(file, &defaults()).unwrap();
        let labels = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            pairs.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect()
        };
        let a = &planned[0].serves;
        assert!(a.namespace(Some(&labels(&[("tenant", "a")]))));
        assert!(!a.namespace(Some(&labels(&[("tenant", "a"), ("tier", "sandbox")]))));
        assert!(!a.namespace(Some(&labels(&[("tenant", "b")]))));
        assert!(planned[1].serves.namespace(Some(&labels(&[]))), "no selector: every namespace");

        let bad = b"providers: [{name: a, source: /a.wasm, defaultLoadBalancer: true, namespaces: {matchExpressions: [{key: k, operator: Near}]}}]";
        let Err(InvalidProvidersFile { problems }) = plan(bad, &defaults()) else { panic!("refused") };
        assert!(problems[0].starts_with("provider a: namespaces: "), "{problems:?}");
    }

    #[test]
    fn a_file_naming_files_needs_a_root() {
        let closed = FileDefaults { roots: Confinement::beneath(&[]).unwrap(), ..defaults() };
        let file = b"providers: [{name: a, source: /a.wasm, nodes: true}]";
        let err = plan(file, &closed).err().expect("refused").to_string();
        assert!(
            err.contains("provider a: source: a providers file names files only beneath a --providers-root"),
            "{err}"
        );
        let file = b"providers: [{name: a, source: configmap:ns/cm/a.wasm, cloudConfig: /etc/a.json, nodes: true}]";
        let err = plan(file, &closed).err().expect("refused").to_string();
        assert!(err.contains("provider a: cloudConfig: a providers file names files only beneath"), "{err}");
        let file = b"providers: [{name: a, source: configmap:ns/cm/a.wasm, nodes: true}]";
        assert!(plan(file, &closed).is_ok(), "a file naming no file needs no root");
    }

    #[test]
    fn a_file_widening_trust_is_refused_field_by_field() {
        let dir = tempfile::tempdir().unwrap();
        for key in ["trusted.pub", "other.pub"] {
            let pem = wasm_ccm_distribution::SigningKey::generate().unwrap().public_key_pem().unwrap();
            std::fs::write(dir.path().join(key), pem).unwrap();
        }
        let trust = dir.path().join("trust.yaml");
        let text = format!(
            "a: {{publicKey: {}, minimumVersion: 2.0.0, sealedCredentials: [\"token=bearer@https://api.example\"]}}",
            dir.path().join("trusted.pub").display()
        );
        std::fs::write(&trust, text).unwrap();
        let defaults = FileDefaults {
            roots: Confinement::beneath(&[dir.path().to_owned()]).unwrap(),
            trust: TrustFile::read(&trust).unwrap(),
            ..defaults()
        };
        let file = format!(
            r#"{{"providers": [{{"name": "a", "source": "oci://registry.example/a:v1", "nodes": true,
                "publicKey": "{}", "minimumVersion": "1.0.0",
                "sealedCredentials": ["token=bearer@https://echo.example"]}}]}}"#,
            dir.path().join("other.pub").display()
        );
        let Err(InvalidProvidersFile { problems }) = plan(file.as_bytes(), &defaults) else { panic!("refused") };
        let [problem] = problems.as_slice() else { panic!("{problems:#?}") };
        for field in
            ["publicKey: the trust file sets", "minimumVersion: 1.0.0 is below 2.0.0", "sealedCredentials: token="]
        {
            assert!(problem.contains(field), "{field}: {problem}");
        }
        std::fs::create_dir(dir.path().join("credentials")).unwrap();
        std::fs::write(dir.path().join("credentials/token"), "t0ken-value").unwrap();
        let narrowing = format!(
            r#"{{"providers": [{{"name": "a", "source": "oci://registry.example/a:v1", "nodes": true,
                "minimumVersion": "2.1.0", "credentials": "{}"}}]}}"#,
            dir.path().join("credentials").display()
        );
        let planned = plan(narrowing.as_bytes(), &defaults).unwrap_or_else(|err| panic!("{err}"));
        assert!(planned[0].spec.template.credentials.is_sealed("token"), "the trusted seal stays");
        let source = planned[0].spec.source.as_ref().unwrap();
        assert!(source.verification.public_key.is_some(), "the trusted key is required");
        assert_eq!(source.minimum_version, Some(semver::Version::new(2, 1, 0)));
    }

    /// The rename: a provider the trust file requires a key of, named
    /// otherwise in the providers file, is refused, not trusted with nothing.
    #[test]
    fn a_provider_the_trust_file_does_not_name_is_refused_unless_it_allows_others() {
        let dir = tempfile::tempdir().unwrap();
        let pem = wasm_ccm_distribution::SigningKey::generate().unwrap().public_key_pem().unwrap();
        std::fs::write(dir.path().join("a.pub"), pem).unwrap();
        std::fs::create_dir(dir.path().join("a-credentials")).unwrap();
        let trust = dir.path().join("trust.yaml");
        let named = format!(
            "vendor-a: {{publicKey: {}, credentials: {}}}\n",
            dir.path().join("a.pub").display(),
            dir.path().join("a-credentials").display()
        );
        std::fs::write(&trust, &named).unwrap();
        let defaults = |trust: &Path| FileDefaults {
            roots: Confinement::beneath(&[dir.path().to_owned()]).unwrap(),
            trust: TrustFile::read(trust).unwrap(),
            ..defaults()
        };
        let renamed =
            b"providers: [{name: vendor-x, source: oci://registry.example/a:v1, loadBalancerClasses: [a.example/lb]}]";
        let Err(InvalidProvidersFile { problems }) = plan(renamed, &defaults(&trust)) else { panic!("refused") };
        assert!(problems[0].contains("provider vendor-x: --provider-trust does not name it"), "{problems:?}");

        std::fs::write(&trust, format!("{named}\"*\": {{}}\n")).unwrap();
        let planned = plan(renamed, &defaults(&trust)).unwrap_or_else(|err| panic!("{err}"));
        assert!(!planned[0].spec.records_versions, "no roll-back record for a name the operator did not trust");
        let named_provider = b"providers: [{name: vendor-a, source: oci://registry.example/a:v1, nodes: true}]";
        assert!(plan(named_provider, &defaults(&trust)).unwrap()[0].spec.records_versions);
        let borrowing = format!(
            r#"{{"providers": [{{"name": "vendor-x", "source": "oci://registry.example/a:v1", "nodes": true,
                "credentials": "{}"}}]}}"#,
            dir.path().join("a-credentials").display()
        );
        let Err(InvalidProvidersFile { problems }) = plan(borrowing.as_bytes(), &defaults(&trust)) else {
            panic!("refused")
        };
        assert!(problems[0].contains("gives that directory to another provider"), "{problems:?}");
    }

    #[test]
    fn the_operator_s_limits_are_each_provider_s_ceiling_and_default() {
        let planned =
            plan(b"providers: [{name: a, source: /a.wasm, nodes: true, limits: {memory: 32MiB}}]", &defaults());
        let limits = planned.unwrap().remove(0).spec.template.limits;
        assert_eq!(limits.memory, 32 << 20, "lowered");
        assert_eq!((limits.deadline, limits.concurrency), (Duration::from_secs(30), 64), "the operator's, unset");
        assert_eq!(limits.cpu_millicores.get(), 2000, "the operator's, unset");
        let widening = br#"
providers:
  - name: a
    source: /a.wasm
    nodes: true
    limits: {deadline: 1000h, memory: 1GiB, concurrentCalls: 100000, maxResponse: 100GiB, cpu: "1024"}
"#;
        let Err(InvalidProvidersFile { problems }) = plan(widening, &defaults()) else { panic!("refused") };
        let [problem] = problems.as_slice() else { panic!("{problems:#?}") };
        assert!(
            problem.contains("limits.deadline: 3600000s is above the operator's --provider-deadline=30s"),
            "{problem}"
        );
        for (field, flag) in [
            ("limits.memory", "--provider-memory"),
            ("limits.concurrentCalls", "--provider-concurrency"),
            ("limits.maxResponse", "--provider-max-response"),
            ("limits.cpu", "--provider-cpu"),
        ] {
            let one = format!(
                "providers: [{{name: a, source: /a.wasm, nodes: true, limits: {{{}: {}}}}}]",
                field.trim_start_matches("limits."),
                match field {
                    "limits.memory" => "1GiB",
                    "limits.concurrentCalls" => "100000",
                    "limits.maxResponse" => "100GiB",
                    _ => "\"1024\"",
                }
            );
            let Err(InvalidProvidersFile { problems }) = plan(one.as_bytes(), &defaults()) else { panic!("{field}") };
            assert!(problems[0].contains(&format!("{field}: ")) && problems[0].contains(flag), "{problems:?}");
        }
    }

    #[test]
    fn a_change_of_what_a_provider_serves_alone_is_the_same_load() {
        let load = |file: &[u8]| plan(file, &defaults()).unwrap().remove(0).spec;
        let before =
            load(b"providers: [{name: a, source: /a.wasm, loadBalancerClasses: [x], limits: {memory: 32MiB}}]");
        let serving_otherwise = load(
            b"providers: [{name: a, source: /a.wasm, loadBalancerClasses: [x, y], defaultLoadBalancer: true,
               namespaces: {matchLabels: {tenant: a}}, ingressRanges: [10.0.0.0/8], resync: false, limits: {memory: 32MiB}}]",
        );
        assert!(before == serving_otherwise);
        let limited_otherwise =
            load(b"providers: [{name: a, source: /a.wasm, loadBalancerClasses: [x], limits: {memory: 64MiB}}]");
        assert!(before != limited_otherwise);
    }

    #[test]
    fn an_http_burst_needs_a_rate() {
        let file = b"providers: [{name: a, source: /a.wasm, nodes: true, limits: {httpBurst: 5}}]";
        let Err(InvalidProvidersFile { problems }) = plan(file, &defaults()) else { panic!("refused") };
        assert_eq!(problems, ["provider a: limits.httpBurst needs limits.httpRequestsPerSecond"]);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let file = b"providers: [{name: a, source: /a.wasm, nodes: true, memory: 1GiB}]";
        let Err(err) = plan(file, &defaults()) else { panic!("refused") };
        assert!(err.to_string().contains("unknown field `memory`"), "{err}");
    }
}
