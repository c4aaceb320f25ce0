//! The places a function of the contract is written by hand, beyond the
//! [`Function`] table: the checklist of `docs/contract.md`, and the test
//! that every function is in each of them or skips it for a stated reason.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{Function, Interface};

use Function as F;

/// A place of the checklist: where a function is written, what is written
/// there, and the text that shows it was.
struct Place {
    /// The file from the repository's root: `dir/*.rs` stands for the
    /// directory's `.rs` files read as one (Go tests left out), and
    /// `{interface}` for the function's interface in snake case.
    path: &'static str,
    /// What a function needs there, for whoever forgot it.
    what: &'static str,
    /// The texts that show it is there, each as a whole word.
    tokens: fn(Function) -> Vec<String>,
    /// The functions it does without, and why.
    skips: &'static [(&'static [Function], &'static str)],
}

/// Asked once when the provider is loaded, and answered by `Cloud::info`.
const AT_LOAD: &[Function] = &[F::ProviderName, F::Initialize, F::HasClusterId, F::SupportedParts, F::MaxBatch];

/// The provider's own functions, written once for every provider.
const PROVIDER_OWN: &[Function] = &[F::ProviderName, F::Initialize, F::HasClusterId, F::SupportedParts];

/// The batch forms, which upstream's `cloudprovider.Interface` has not.
const BATCH: &[Function] = &[F::MaxBatch, F::InstanceStates, F::BatchMetadata];

/// Every place of the checklist the test can check.
const PLACES: &[Place] = &[
    Place {
        path: "runtime/cloud/src/cloud.rs",
        what: "its method of the `Cloud` trait",
        tokens: |f| vec![format!("fn {}(", rust_method(f))],
        skips: &[(AT_LOAD, "asked when the provider is loaded; `Cloud::info` answers it")],
    },
    Place {
        path: "runtime/cloud/src/testing.rs",
        what: "`TestCloud`'s method, recording the call with `self.call(Function::…, …)`",
        tokens: |f| vec![format!("Function::{f:?}")],
        skips: &[(AT_LOAD, "asked when the provider is loaded; `TestCloud::info` answers it")],
    },
    Place {
        path: "runtime/host/src/handle.rs",
        what: "`ProviderHandle`'s method, calling the export with `self.call(Function::…, operation!(…))`",
        tokens: |f| vec![format!("Function::{f:?}")],
        skips: &[(AT_LOAD, "called when the provider is loaded (`runtime/host/src/provider.rs`)")],
    },
    Place {
        path: "runtime/cli/src/provider/call.rs",
        what: "its arms in `provider call`'s `Input::of` and `invoke`",
        tokens: |f| vec![format!("F::{f:?}")],
        skips: &[],
    },
    Place {
        path: "runtime/conformance/src/*.rs",
        what: "a check of the conformance kit, calling it through `calls.run(Function::…, …)`",
        tokens: |f| vec![format!("Function::{f:?}")],
        skips: &[
            (AT_LOAD, "asked when the provider is loaded; the kit reads `info()`"),
            (
                &[
                    F::NodeAddressesByProviderId,
                    F::InstanceTypeByProviderId,
                    F::InstanceExistsByProviderId,
                    F::InstanceShutdownByProviderId,
                    F::GetZoneByProviderId,
                ],
                "not checked yet: the Instances (v1) and Zones checks ask by node name",
            ),
            (&[F::AddSshKeyToAllInstances, F::CurrentNodeName, F::GetZone, F::Master], "no controller calls it"),
        ],
    },
    Place {
        path: "guest-sdk/src/provider.rs",
        what: "the method of its part's trait in the Rust SDK, answering `Error::NotImplemented` by default",
        tokens: |f| vec![format!("fn {}(", rust_method(f))],
        skips: &[(
            &[F::ProviderName, F::Initialize, F::SupportedParts],
            "written as `NAME`, `new` and the part accessors",
        )],
    },
    Place {
        path: "guest-sdk/src/export.rs",
        what: "the Rust SDK's export, calling the part's method",
        tokens: |f| vec![format!(".{}(", rust_method(f))],
        skips: &[(PROVIDER_OWN, "the provider's own exports, written once in `exports::provider::Guest`")],
    },
    Place {
        path: "guest-sdk-go/cloudprovider/cloud.go",
        what: "the method of its part's interface in the Go SDK, as upstream's",
        tokens: |f| go_methods(f).map(|method| format!("\t{method}(")).collect(),
        skips: &[],
    },
    Place {
        path: "guest-sdk-go/internal/wit/glue/*.go",
        what: "the Go SDK's glue, calling the registered provider's method",
        tokens: |f| go_methods(f).map(|method| format!(".{method}(")).collect(),
        skips: &[],
    },
    Place {
        path: "guest-sdk-go/internal/wit/exports/export_wasm_ccm_provider_{interface}/exports.go",
        what: "the hand-written export calling the glue, named as the bindings name it",
        tokens: |f| vec![format!("func {}(", pascal_case(f.wit_name()))],
        skips: &[],
    },
    Place {
        path: "guest-sdk-go/upstream/*.go",
        what: "the upstream adapter's method, calling upstream's",
        tokens: |f| go_methods(f).map(|method| format!(") {method}(")).collect(),
        skips: &[
            (&[F::Initialize], "`Serve` calls upstream's `Initialize(clientBuilder, stop)` itself"),
            (BATCH, "upstream has no batch forms: an adapted provider answers one node at a time"),
        ],
    },
    Place {
        path: "guest-sdk-go/template/acme.go",
        what: "the Go skeleton's method, answering `cloudprovider.NotImplemented` until written",
        tokens: |f| go_methods(f).map(|method| format!(") {method}(")).collect(),
        skips: &[
            (&[F::Initialize], "`Initializer` is optional, and the skeleton needs no cluster name"),
            (BATCH, "the batch interfaces are optional, and the skeleton answers one node at a time"),
            (
                &[
                    F::NodeAddresses,
                    F::NodeAddressesByProviderId,
                    F::InstanceId,
                    F::InstanceType,
                    F::InstanceTypeByProviderId,
                    F::AddSshKeyToAllInstances,
                    F::CurrentNodeName,
                    F::InstanceExistsByProviderId,
                    F::InstanceShutdownByProviderId,
                    F::GetZone,
                    F::GetZoneByProviderId,
                    F::GetZoneByNodeName,
                    F::ListClusters,
                    F::Master,
                    F::ListRoutes,
                    F::CreateRoute,
                    F::DeleteRoute,
                ],
                "the skeleton implements the load balancer and InstancesV2 only",
            ),
        ],
    },
    Place {
        path: "providers/fake/src/*.rs",
        what: "the Rust fake's method, starting with `self.config.inject(\"<interface>.<name>\")?`",
        tokens: |f| vec![format!("inject(\"{}\")", f.call_name())],
        skips: &[
            (&[F::ProviderName, F::HasClusterId, F::SupportedParts, F::MaxBatch], "read from the configuration"),
            (&[F::GetLoadBalancerName], "returns a name and no error: nothing to inject"),
            (&[F::AddSshKeyToAllInstances], "not implemented by the fake"),
        ],
    },
    Place {
        path: "providers/fake-go/*.go",
        what: "the Go fake's method, starting with `f.config.Inject(\"<interface>.<name>\")`",
        tokens: |f| vec![format!("Inject(\"{}\")", f.call_name())],
        skips: &[
            (&[F::ProviderName, F::HasClusterId, F::SupportedParts, F::MaxBatch], "read from the configuration"),
            (&[F::GetLoadBalancerName], "returns a name and no error: nothing to inject"),
            (&[F::AddSshKeyToAllInstances], "not implemented by the fake"),
        ],
    },
    Place {
        path: "tests/integration/tests/contract.rs",
        what: "its call through both fake providers",
        tokens: |f| vec![format!(".{}(", rust_method(f))],
        skips: &[(AT_LOAD, "asked when the provider is loaded; the tests check `info()`")],
    },
];

/// The name of the `Cloud` and SDK method: `EnsureLoadBalancer` →
/// `ensure_load_balancer`.
fn rust_method(function: Function) -> String {
    let mut snake = String::new();
    for c in format!("{function:?}").chars() {
        if c.is_ascii_uppercase() && !snake.is_empty() {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
}

/// The Go methods it stands for: one, or the part accessors for
/// `supported-parts`.
fn go_methods(function: Function) -> impl Iterator<Item = &'static str> {
    function.go_method().split('/')
}

/// `has-cluster-id` → `HasClusterId`.
fn pascal_case(kebab: &str) -> String {
    kebab
        .split('-')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_ascii_uppercase()).into_iter().chain(chars)
        })
        .collect()
}

/// Whether `token` is in `text` and not part of a longer identifier:
/// `Function::GetZone` is not in `Function::GetZoneByNodeName`.
fn mentions(text: &str, token: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let (starts_word, ends_word) = (word(token.chars().next()), word(token.chars().next_back()));
    text.match_indices(token).any(|(at, _)| {
        let joined_before = starts_word && word(text[..at].chars().next_back());
        let joined_after = ends_word && word(text[at + token.len()..].chars().next());
        !joined_before && !joined_after
    })
}

impl Place {
    /// Its file for the functions of `interface`.
    fn path(&self, interface: Interface) -> String {
        self.path.replace("{interface}", &interface.wit_name().replace('-', "_"))
    }

    fn skipped(&self, function: Function) -> Option<&'static str> {
        self.skips.iter().find(|(functions, _)| functions.contains(&function)).map(|(_, reason)| *reason)
    }

    /// What is wrong of `function` in `text`, the place's text: a token
    /// missing, or one found that a skip says is not there.
    fn problem(&self, function: Function, text: &str) -> Option<String> {
        let path = self.path(function.interface());
        let tokens = (self.tokens)(function);
        let missing: Vec<&String> = tokens.iter().filter(|token| !mentions(text, token)).collect();
        match self.skipped(function) {
            None if !missing.is_empty() => Some(format!(
                "{function} ({function:?}) is missing from {path}: write {what} (no {missing} there), or, if it \
                 has no place there, add it to the place's skips in runtime/cloud/src/checklist.rs with the reason",
                what = self.what,
                missing = quoted(&missing),
            )),
            Some(reason) if missing.is_empty() => Some(format!(
                "{function} is skipped in {path} ({reason}), but {found} is there: remove the skip",
                found = quoted(&tokens),
            )),
            _ => None,
        }
    }
}

/// The tokens as Rust strings, `"a", "b"`: a tab shows as `\t`.
fn quoted(tokens: &[impl std::fmt::Debug]) -> String {
    tokens.iter().map(|token| format!("{token:?}")).collect::<Vec<_>>().join(", ")
}

/// Reads a place's path from `root`, caching what it read.
fn read(root: &Path, path: &str, cache: &mut BTreeMap<String, String>) -> String {
    let text = cache.entry(path.to_owned()).or_insert_with(|| match path.split_once("/*") {
        None => std::fs::read_to_string(root.join(path)).unwrap_or_else(|err| panic!("cannot read {path}: {err}")),
        Some((dir, extension)) => {
            let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
                .unwrap_or_else(|err| panic!("cannot read {dir}: {err}"))
                .map(|entry| entry.expect("a directory entry").path())
                .filter(|file| file.to_string_lossy().ends_with(extension))
                .filter(|file| !file.to_string_lossy().ends_with("_test.go"))
                .collect();
            files.sort();
            files.iter().map(|file| std::fs::read_to_string(file).expect("a readable file")).collect()
        }
    });
    text.clone()
}

#[test]
fn every_function_is_in_every_place_of_the_checklist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut texts = BTreeMap::new();
    let mut problems = Vec::new();
    for place in PLACES {
        for function in Function::ALL.iter().copied() {
            let text = read(&root, &place.path(function.interface()), &mut texts);
            problems.extend(place.problem(function, &text));
        }
    }
    assert!(problems.is_empty(), "docs/contract.md's checklist is not followed:\n{}", problems.join("\n"));
}

#[test]
fn a_function_missing_from_a_place_is_named_with_the_file_and_what_to_write() {
    let handle = PLACES.iter().find(|place| place.path == "runtime/host/src/handle.rs").expect("handle.rs");
    let text = "self.call(Function::EnsureLoadBalancerDeleted, operation)";
    assert_eq!(
        handle.problem(F::EnsureLoadBalancer, text).as_deref(),
        Some(
            "load-balancer.ensure (EnsureLoadBalancer) is missing from runtime/host/src/handle.rs: write \
             `ProviderHandle`'s method, calling the export with `self.call(Function::…, operation!(…))` \
             (no \"Function::EnsureLoadBalancer\" there), or, if it has no place there, add it to the place's \
             skips in runtime/cloud/src/checklist.rs with the reason"
        )
    );
    assert_eq!(handle.problem(F::EnsureLoadBalancerDeleted, text), None);
    assert!(handle.problem(F::Initialize, "Function::Initialize").is_some_and(|p| p.contains("remove the skip")));
}

#[test]
fn names_follow_each_language() {
    assert_eq!(rust_method(F::AddSshKeyToAllInstances), "add_ssh_key_to_all_instances");
    assert_eq!(pascal_case("node-addresses-by-provider-id"), "NodeAddressesByProviderId");
    assert_eq!(go_methods(F::SupportedParts).count(), 6);
    assert!(mentions("\tGetZone(ctx)", "\tGetZone("));
    assert!(!mentions("Function::GetZoneByNodeName", "Function::GetZone"));
}
