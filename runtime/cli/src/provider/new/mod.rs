//! `wasm-ccm provider new`: a provider crate to start from, with the SDK
//! skeleton of the chosen parts, a native unit test and a README; or the
//! same of a Go module.

mod go;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::ValueEnum;

/// A part of `cloudprovider.Interface`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Part {
    /// `LoadBalancer()`.
    LoadBalancer,
    /// `InstancesV2()`.
    InstancesV2,
    /// `Instances()`, the older API the controllers fall back to.
    Instances,
    /// `Zones()`.
    Zones,
    /// `Clusters()`.
    Clusters,
    /// `Routes()`.
    Routes,
}

impl Part {
    /// The SDK trait, and the `Provider` method that returns it.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Part::LoadBalancer => ("LoadBalancer", "load_balancer"),
            Part::InstancesV2 => ("InstancesV2", "instances_v2"),
            Part::Instances => ("Instances", "instances"),
            Part::Zones => ("Zones", "zones"),
            Part::Clusters => ("Clusters", "clusters"),
            Part::Routes => ("Routes", "routes"),
        }
    }
}

/// The language a provider is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// A crate using `wasm-ccm-sdk`.
    Rust,
    /// A Go module using the Go SDK, `guest-sdk-go`, with the load balancer
    /// and instances (v2) parts.
    Go,
}

/// `provider new` flags.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The provider's name: the scheme of its provider IDs, and the crate
    /// `provider-NAME` in the directory NAME.
    pub name: String,
    /// The language of the skeleton.
    #[arg(long, value_enum, default_value = "rust")]
    pub lang: Lang,
    /// The parts it supports, comma-separated (a Rust skeleton's; the Go
    /// skeleton has the defaults).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "load-balancer,instances-v2")]
    pub parts: Vec<Part>,
    /// Where to write the crate; the directory must not exist.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A local checkout's `guest-sdk` (`guest-sdk-go` for Go) to depend on,
    /// instead of the SDK from the project's repository (for Go, the
    /// `replace` directive of `go.mod` to fill in).
    #[arg(long, value_name = "DIR")]
    pub sdk: Option<PathBuf>,
}

/// Writes the crate.
///
/// # Errors
/// When the name is not usable or a file cannot be written.
pub fn new(args: NewArgs) -> anyhow::Result<()> {
    let name = args.name.as_str();
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-');
    anyhow::ensure!(valid, "{name:?} is not a provider name: lower-case letters, digits and dashes, from a letter");
    let mut parts = args.parts.clone();
    parts.sort();
    parts.dedup();
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from(name));
    anyhow::ensure!(!dir.exists(), "{} already exists", dir.display());
    if args.lang == Lang::Go {
        anyhow::ensure!(
            parts == [Part::LoadBalancer, Part::InstancesV2],
            "the Go skeleton has the load balancer and instances (v2) parts; add others in its Go code"
        );
        let sdk =
            args.sdk.as_ref().map(|path| path.canonicalize().with_context(|| format!("--sdk {}", path.display())));
        go::write_module(name, &dir, sdk.transpose()?.as_deref())?;
        println!("created {} (provider-{name}, Go: {})", dir.display(), part_list(&parts));
        match &args.sdk {
            Some(_) => println!("next: cd {} && go test ./..., then build it as its README says", dir.display()),
            None => println!("next: point go.mod's replace directive at guest-sdk-go, then go test ./..."),
        }
        return Ok(());
    }
    let sdk = match &args.sdk {
        Some(path) => {
            let path = path.canonicalize().with_context(|| format!("--sdk {}", path.display()))?;
            format!("{{ path = {:?} }}", path.display().to_string())
        }
        None => format!("{{ git = {:?} }}", env!("CARGO_PKG_REPOSITORY")),
    };
    write(&dir.join("Cargo.toml"), &cargo_toml(name, &sdk))?;
    write(&dir.join("src/lib.rs"), &lib_rs(name, &parts))?;
    write(&dir.join("README.md"), &readme(name))?;
    write(&dir.join(".gitignore"), "/target\n")?;
    write(&dir.join("rustfmt.toml"), "max_width = 120\nuse_small_heuristics = \"Max\"\n")?;
    println!("created {} (provider-{name}: {})", dir.display(), part_list(&parts));
    println!("next: cd {} && cargo test, then build it as its README says", dir.display());
    Ok(())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn part_list(parts: &[Part]) -> String {
    let names: Vec<String> =
        parts.iter().filter_map(|part| part.to_possible_value()).map(|value| value.get_name().to_owned()).collect();
    names.join(", ")
}

/// `acme-cloud` → `AcmeCloud`.
fn type_name(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

fn cargo_toml(name: &str, sdk: &str) -> String {
    format!(
        r#"[package]
name = "provider-{name}"
description = "The {name} cloud provider for wasm-ccm"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
serde_json = "1"
wasm-ccm-sdk = {sdk}

# Line tables keep a panic's location readable in the host's log.
[profile.release]
debug = "line-tables-only"

# What wasm-ccm's guest build (providers/build.sh) builds with; the same as
# wasm-ccm's own providers, so that they share one build of the standard
# library.
[profile.guest]
inherits = "release"
debug = false
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"

# A crate of its own, not a member of an enclosing workspace.
[workspace]
"#
    )
}

fn lib_rs(name: &str, parts: &[Part]) -> String {
    let type_name = type_name(name);
    let traits: Vec<&str> = parts.iter().map(|part| part.names().0).collect();
    let instances_v2 = parts.contains(&Part::InstancesV2);
    let mut text = format!(
        r#"//! The `{name}` cloud provider for wasm-ccm: a WebAssembly component of the
//! `wasm-ccm:provider` world, written with `wasm-ccm-sdk`.

"#
    );
    if instances_v2 {
        text.push_str("use wasm_ccm_sdk::http::Request;\nuse wasm_ccm_sdk::types::Node;\n");
    }
    let mut imports = vec!["Error", "Provider"];
    imports.extend(&traits);
    imports.sort_unstable();
    let _ = write!(
        text,
        r#"use wasm_ccm_sdk::{{{imports}}};

/// The provider, built once per configuration: every call starts from a
/// fresh copy of it, so what must last lives in the cloud.
pub struct {type_name} {{
    /// The cloud's API, from the `endpoint` of the configuration.
    endpoint: String,
}}

impl Provider for {type_name} {{
    /// The scheme of its provider IDs: `{name}://<instance>`.
    const NAME: &'static str = "{name}";

    /// Reads the configuration (`--cloud-config`), JSON here.
    fn new(config: &[u8], _cluster_name: &str) -> Result<Self, Error> {{
        let config: serde_json::Value =
            if config.is_empty() {{ serde_json::Value::Null }} else {{ serde_json::from_slice(config)? }};
        let endpoint = config["endpoint"].as_str().unwrap_or("https://api.{name}.example");
        Ok({type_name} {{ endpoint: endpoint.trim_end_matches('/').to_owned() }})
    }}
"#,
        imports = imports.join(", ")
    );
    for part in parts {
        let (trait_name, method) = part.names();
        let _ = write!(text, "\n    fn {method}(&self) -> Option<&dyn {trait_name}> {{\n        Some(self)\n    }}\n");
    }
    text.push_str("}\n");
    for part in parts {
        let (trait_name, _) = part.names();
        if *part == Part::InstancesV2 {
            let _ = write!(
                text,
                r#"
/// `cloudprovider.InstancesV2`. `instance_exists` shows how to call the
/// cloud; `instance_shutdown` and `instance_metadata` answer "not
/// implemented" until written.
impl InstancesV2 for {type_name} {{
    fn instance_exists(&self, node: &Node) -> Result<bool, Error> {{
        // The host attaches the credential `token`; the guest never sees it.
        let response = Request::get(format!("{{}}/instances/{{}}", self.endpoint, node.name)).bearer("token").send()?;
        match response.status() {{
            404 => Ok(false),
            _ => response.error_for_status().map(|_| true),
        }}
    }}
}}
"#
            );
        } else {
            let _ = write!(
                text,
                "\n/// `cloudprovider.{trait_name}`: every method answers \"not implemented\" until written.\n\
                 impl {trait_name} for {type_name} {{}}\n"
            );
        }
    }
    let _ = write!(text, "\nwasm_ccm_sdk::export_provider!({type_name});\n");
    text.push_str(&unit_test(&type_name, parts));
    text
}

fn unit_test(type_name: &str, parts: &[Part]) -> String {
    let methods: Vec<&str> = parts.iter().map(|part| part.names().1).collect();
    let supported = methods.iter().map(|method| format!("provider.{method}().is_some()")).collect::<Vec<_>>();
    let mut text = format!(
        r##"
#[cfg(test)]
mod tests {{
    use super::*;

    #[test]
    fn reads_its_configuration_and_supports_its_parts() {{
        let provider = {type_name}::new(br#"{{"endpoint": "https://api.test/"}}"#, "test").unwrap();
        assert_eq!(provider.endpoint, "https://api.test");
        assert!({supported});
    }}
"##,
        supported = supported.join(" && ")
    );
    if parts.contains(&Part::InstancesV2) {
        let _ = write!(
            text,
            r##"
    /// A cloud with the instance `node-a` only, in place of the host's HTTP.
    struct Cloud;

    impl wasm_ccm_sdk::native::Host for Cloud {{
        fn send(
            &self,
            request: &wasm_ccm_sdk::native::Request,
        ) -> Result<wasm_ccm_sdk::native::Response, wasm_ccm_sdk::native::HttpError> {{
            let status = if request.url == "https://api.test/instances/node-a" {{ 200 }} else {{ 404 }};
            Ok(wasm_ccm_sdk::native::Response {{ status, headers: Vec::new(), body: b"{{}}".to_vec() }})
        }}
    }}

    fn node(name: &str) -> Node {{
        Node {{
            name: name.into(),
            uid: format!("uid-{{name}}"),
            provider_id: None,
            labels: Vec::new(),
            annotations: Vec::new(),
            addresses: Vec::new(),
            pod_cidrs: Vec::new(),
            conditions: Vec::new(),
            taints: Vec::new(),
        }}
    }}

    #[test]
    fn asks_the_cloud_whether_an_instance_exists() {{
        wasm_ccm_sdk::native::set_host(std::sync::Arc::new(Cloud));
        let provider = {type_name}::new(br#"{{"endpoint": "https://api.test"}}"#, "test").unwrap();
        assert!(provider.instance_exists(&node("node-a")).unwrap());
        assert!(!provider.instance_exists(&node("node-b")).unwrap());
    }}
"##
        );
    }
    text.push_str("}\n");
    text
}

fn readme(name: &str) -> String {
    format!(
        r#"# provider-{name}

The `{name}` cloud provider for [wasm-ccm](https://github.com/wasm-ccm/wasm-ccm): a WebAssembly
component that wasm-ccm's cloud controllers call as upstream's call `cloudprovider.Interface`. Each
part it supports is a `wasm_ccm_sdk` trait in `src/lib.rs`; a method not written answers "not
implemented". Every call starts from a fresh copy of the provider `new` built: keep state in the cloud.

## Test it natively

```sh
cargo test
```

`wasm_ccm_sdk::native::set_host` stands in for the host's HTTP, credentials and logs.

## Build the component

In a wasm-ccm checkout, `providers/build.sh path/to/{name}` writes `target/wasm/provider_{name}.wasm`
here (it uses rustup's `wasm32-wasip2` target when installed, and builds the standard library from
source otherwise). With rustup's target:

```sh
cargo build --profile guest --target wasm32-wasip2   # target/wasm32-wasip2/guest/provider_{name}.wasm
```

## Certify it

```sh
wasm-ccm provider call info --provider target/wasm/provider_{name}.wasm
wasm-ccm provider conformance target/wasm/provider_{name}.wasm --fixture fixture.yaml \
  --cloud-config config.json --provider-credentials ./credentials --provider-allow https://api.{name}.example
```

The fixture names nodes your cloud has and Services to create load balancers for; the suite checks
every part the provider says it supports and exits non-zero on a failure (`--output junit` for CI).

## Ship and deploy it

```sh
wasm-ccm provider push target/wasm/provider_{name}.wasm oci://registry.example/providers/{name}:v0.1.0 --sign-key cosign.key
wasm-ccm run --provider oci://registry.example/providers/{name}:v0.1.0 --provider-public-key cosign.pub \
  --cloud-config /etc/{name}/config.json --provider-credentials /etc/{name}/credentials \
  --provider-allow https://api.{name}.example
```

or in a cluster, with wasm-ccm's `deploy/` kustomize base.
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parts() {
        assert_eq!(type_name("acme-cloud"), "AcmeCloud");
        assert_eq!(part_list(&[Part::LoadBalancer, Part::InstancesV2]), "load-balancer, instances-v2");
        let text = lib_rs("acme", &[Part::LoadBalancer, Part::Routes]);
        assert!(text.contains("use wasm_ccm_sdk::{Error, LoadBalancer, Provider, Routes};"), "{text}");
        assert!(text.contains("impl Routes for Acme {}"), "{text}");
        assert!(text.contains("assert!(provider.load_balancer().is_some() && provider.routes().is_some());"), "{text}");
        assert!(!text.contains("native::Host"), "{text}");
    }
}
