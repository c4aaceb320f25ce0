//! Compiling a provider component, or loading its code from the compile
//! cache, and checking that it is one: the binary is a component, it
//! exports the whole world at this host's contract version, and it imports
//! nothing the host does not provide.

use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use wasm_ccm_cloud::Interface;
use wasmtime::component::Component;
use wasmtime::component::types::{ComponentExtern, ComponentItem};

use crate::compile::cache::{CacheOutcome, CompileCache, Lookup};
use crate::compile::compiler::build;
use crate::compile::engine::{Backend, Engine};
use crate::compile::tier::Tier;
use crate::error::LoadError;

/// The package and version of the contract this host speaks.
pub const CONTRACT: &str = "wasm-ccm:provider@0.2.2";
/// The world a provider implements.
pub const WORLD: &str = "wasm-ccm:provider/cloud-provider@0.2.2";
const PACKAGE: &str = "wasm-ccm:provider";
const VERSION: &str = "0.2.2";

/// The contract's own interfaces a provider may import.
const CONTRACT_IMPORTS: &[&str] = &["types", "http", "credentials", "log", "nodes"];

/// The interfaces a provider must export, named as a component names them:
/// `wasm-ccm:provider/<interface>@<version>`.
pub fn required_exports() -> Vec<String> {
    Interface::ALL
        .iter()
        .filter(|interface| interface.is_required())
        .map(|interface| format!("{PACKAGE}/{interface}@{VERSION}"))
        .collect()
}

/// Whether a provider built against contract `version` is served: one of
/// the same major version, or before 1.0 of the same minor version, whose
/// other releases only add what a provider may leave out.
fn compatible(version: &str) -> bool {
    let significant = |version: &str| {
        let mut numbers = version.split('.');
        match numbers.next() {
            Some("0") => numbers.next().map(|minor| format!("0.{minor}")),
            major => major.map(str::to_owned),
        }
    };
    version.split('.').count() == 3 && significant(version) == significant(VERSION)
}

/// Whether this host provides the import `name`: one of the contract's own
/// interfaces at a compatible version, or a WASI interface it links.
pub fn provides_import(name: &str) -> bool {
    let Some((package, interface, version)) = split_name(name) else { return false };
    if package == PACKAGE {
        CONTRACT_IMPORTS.contains(&interface) && compatible(version)
    } else {
        crate::imports::wasi::PROVIDED.contains(&format!("{package}/{interface}").as_str())
    }
}

/// Tells a core module, a component and anything else apart by the header.
fn check_header(bytes: &[u8]) -> Result<(), LoadError> {
    const MAGIC: &[u8] = b"\0asm";
    match bytes.get(..8) {
        Some(header) if header.starts_with(MAGIC) => match &header[4..] {
            [1, 0, 0, 0] => Err(LoadError::CoreModule),
            [_, _, 1, 0] => Ok(()),
            _ => Err(LoadError::NotWasm("unknown WebAssembly version".into())),
        },
        _ => Err(LoadError::NotWasm(format!("{} bytes without the \\0asm header", bytes.len()))),
    }
}

/// Compiles `bytes` on this thread and checks it is a provider of this
/// contract.
///
/// # Errors
/// When the bytes are not a component, do not compile, or do not export
/// and import what a provider must.
pub fn compile(engine: &Engine, bytes: &[u8]) -> Result<Component, LoadError> {
    check_header(bytes)?;
    let component = build(engine.wasmtime(), bytes)?;
    check(&component)?;
    Ok(component)
}

/// What a compile does with the engine's compile cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caching {
    /// Neither looks the code up nor stores it: code compiled once per
    /// load, which the cache would only grow with.
    Bypass,
    /// Loads the code from the cache when it is there, and stores it when
    /// it was compiled.
    Use,
    /// Stores the code it compiles without looking it up first: a lookup
    /// of the same code missed just before.
    Store,
}

/// Compiles `wasm` with the engine's compiler of `tier`, or loads its code
/// from the engine's compile cache, as `caching` says, and checks it is a
/// provider; a component that failed before for `tier` fails again at once.
///
/// # Errors
/// When the component is too large, is not a provider, does not
/// compile, or its compile does not end in time.
pub(crate) async fn compile_cached(
    engine: &Engine,
    wasm: Arc<[u8]>,
    caching: Caching,
    tier: Tier,
) -> Result<(Component, CacheOutcome), LoadError> {
    let limit = engine.settings().max_component_size;
    if wasm.len() > limit {
        return Err(LoadError::TooLarge { size: wasm.len(), limit });
    }
    let digest = format!("{:x}", Sha256::digest(&wasm));
    if let Some(err) = engine.failures().recall(tier, &digest) {
        tracing::debug!(digest = %format_args!("sha256:{digest}"), "not compiling again a component that failed: {err}");
        return Err(err);
    }
    let compiled = compile_or_load(engine, wasm, &digest, caching, tier).await;
    if let Err(err) = &compiled {
        engine.failures().remember(tier, &digest, err);
    }
    compiled
}

/// The code of `wasm` for `tier` from the engine's compile cache, without
/// compiling it: see [`lookup`].
///
/// # Errors
/// When `wasm` is not a component, or the cache's entry is not a
/// provider.
pub(crate) async fn cached(
    engine: &Engine,
    wasm: &[u8],
    tier: Tier,
) -> Result<(Option<Component>, CacheOutcome), LoadError> {
    let digest = format!("{:x}", Sha256::digest(wasm));
    lookup(engine, wasm, &digest, tier).await
}

/// Loads the component of `bytes`, whose sha256 is `digest` (hex), from the
/// engine's compile cache, or compiles it with the engine's compiler of
/// `tier`, as `caching` says; checks it is a provider of this contract and
/// says where the code came from.
///
/// Only components that pass the checks are stored in the cache; an entry
/// that does not verify or load is logged, compiled again and overwritten.
///
/// # Errors
/// As [`compile`], and when the compile does not end in time.
async fn compile_or_load(
    engine: &Engine,
    bytes: Arc<[u8]>,
    digest: &str,
    caching: Caching,
    tier: Tier,
) -> Result<(Component, CacheOutcome), LoadError> {
    check_header(&bytes)?;
    let outcome = match caching {
        Caching::Use => match lookup(engine, &bytes, digest, tier).await? {
            (Some(component), outcome) => return Ok((component, outcome)),
            (None, outcome) => outcome,
        },
        Caching::Store if engine.compile_cache().is_some() => CacheOutcome::Miss,
        Caching::Store | Caching::Bypass => CacheOutcome::Disabled,
    };
    let (component, compiled_by) = engine.compile_fresh(bytes, &engine.backends(tier)).await?;
    check(&component)?;
    let cache =
        engine.backends(tier).into_iter().find(|backend| backend.tier == compiled_by && backend.cache.is_some());
    if let Some(backend) = cache.filter(|_| caching != Caching::Bypass) {
        let stored = component.clone();
        match blocking(backend, digest, move |cache, _, digest| cache.put(digest, &stored)).await? {
            Ok(path) => tracing::debug!(entry = %path.display(), "stored compiled code in the cache"),
            Err(err) => tracing::warn!(error = %err, "cannot store compiled code in the cache"),
        }
    }
    Ok((component, outcome))
}

/// The code of `bytes` in the compile caches of `tier`'s compilers, the
/// first that has it, without compiling: `Hit` with the component, `Miss`
/// or `Rejected` (an entry that did not verify or load) without, and
/// `Disabled` when the engine has no cache.
///
/// # Errors
/// When the bytes are not a component, or the cache's entry is not a
/// provider.
async fn lookup(
    engine: &Engine,
    bytes: &[u8],
    digest: &str,
    tier: Tier,
) -> Result<(Option<Component>, CacheOutcome), LoadError> {
    check_header(bytes)?;
    let mut outcome = CacheOutcome::Disabled;
    for backend in engine.backends(tier).into_iter().filter(|backend| backend.cache.is_some()) {
        match blocking(backend, digest, |cache, engine, digest| cache.get(engine, digest)).await? {
            Lookup::Hit(component) => {
                check(&component)?;
                tracing::debug!(digest = %format_args!("sha256:{digest}"), "loaded compiled code from the cache");
                return Ok((Some(component), CacheOutcome::Hit));
            }
            Lookup::Miss => outcome = outcome.and(CacheOutcome::Miss),
            Lookup::Rejected(reason) => {
                let entry = backend.cache.as_ref().map(|cache| cache.entry_path(bytes)).unwrap_or_default();
                tracing::warn!(entry = %entry.display(), %reason, "compile cache entry refused; compiling again");
                outcome = CacheOutcome::Rejected;
            }
        }
    }
    Ok((None, outcome))
}

/// Runs `work` on `backend`'s compile cache on a blocking thread: it reads
/// and writes files.
async fn blocking<T: Send + 'static>(
    backend: &Backend,
    digest: &str,
    work: impl FnOnce(&CompileCache, &wasmtime::Engine, &str) -> T + Send + 'static,
) -> Result<T, LoadError> {
    let (backend, digest) = (backend.clone(), digest.to_owned());
    tokio::task::spawn_blocking(move || {
        #[expect(clippy::expect_used, reason = "called for engines with a compile cache only")]
        let cache = backend.cache.as_ref().expect("called with a compile cache only");
        work(cache, &backend.engine, &digest)
    })
    .await
    .map_err(|err| LoadError::Engine(format!("the compile cache stopped: {err}")))
}

/// Checks that `component` imports only what the host provides and exports
/// the whole world.
fn check(component: &Component) -> Result<(), LoadError> {
    check_imports(component)?;
    check_exports(component)
}

/// Splits `package/interface@version` into its parts.
fn split_name(name: &str) -> Option<(&str, &str, &str)> {
    let (path, version) = name.split_once('@').unwrap_or((name, ""));
    let (package, interface) = path.split_once('/')?;
    Some((package, interface, version))
}

fn check_exports(component: &Component) -> Result<(), LoadError> {
    let (ty, engine) = (component.component_type(), component.engine());
    let exports: Vec<(&str, ComponentExtern<'_>)> = ty.exports(engine).collect();
    let mut problems = Vec::new();
    for interface in Interface::ALL {
        let wanted = format!("{PACKAGE}/{interface}@{VERSION}");
        let found = exports.iter().find(|(name, _)| {
            split_name(name).is_some_and(|(package, iface, version)| {
                package == PACKAGE && iface == interface.wit_name() && compatible(version)
            })
        });
        let Some((_, item)) = found else {
            if !interface.is_required() {
                continue;
            }
            let other_version = exports.iter().find_map(|(name, _)| {
                split_name(name).filter(|(package, iface, _)| *package == PACKAGE && *iface == interface.wit_name())
            });
            problems.push(match other_version {
                Some((_, _, version)) => {
                    format!("exports {PACKAGE}/{interface}@{version}, built against another contract version")
                }
                None => format!("missing export {wanted}"),
            });
            continue;
        };
        let ComponentItem::ComponentInstance(instance) = &item.ty else {
            problems.push(format!("export {wanted} is not an interface"));
            continue;
        };
        let present: Vec<&str> = instance.exports(engine).map(|(name, _)| name).collect();
        for function in interface.functions().filter(|function| !present.contains(&function.wit_name())) {
            problems.push(format!("missing function {} in {wanted}", function.wit_name()));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(LoadError::WrongWorld { expected: CONTRACT, missing: problems.join("; ") })
    }
}

fn check_imports(component: &Component) -> Result<(), LoadError> {
    let ty = component.component_type();
    let unsupported: Vec<String> = ty
        .imports(component.engine())
        .filter(|(name, _)| !provides_import(name))
        .map(|(name, _)| name.to_owned())
        .collect();
    if unsupported.is_empty() { Ok(()) } else { Err(LoadError::UnsupportedImports(unsupported.join(", "))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_binaries_apart() {
        assert!(matches!(check_header(b"garbage!"), Err(LoadError::NotWasm(_))));
        assert!(matches!(check_header(b"\0as"), Err(LoadError::NotWasm(_))));
        assert!(matches!(check_header(b"\0asm\x01\0\0\0"), Err(LoadError::CoreModule)));
        assert!(check_header(b"\0asm\x0d\0\x01\0").is_ok());
    }

    #[test]
    fn names_what_a_provider_exports_and_may_import() {
        assert_eq!(required_exports().len(), 7, "instances-batch is optional");
        assert!(required_exports().contains(&"wasm-ccm:provider/instances-v2@0.2.2".to_owned()));
        assert!(provides_import("wasm-ccm:provider/http@0.2.2"));
        assert!(provides_import("wasm-ccm:provider/http@0.2.0"), "a provider of an earlier patch release");
        assert!(!provides_import("wasm-ccm:provider/http@0.1.0"));
        assert!(!provides_import("wasm-ccm:provider/http@0.3.0"));
        assert!(!provides_import("wasm-ccm:provider/http@0.2"));
        assert!(!provides_import("wasm-ccm:provider/zones@0.2.0"));
        assert!(provides_import("wasi:io/poll@0.2.6"));
        assert!(!provides_import("wasi:sockets/tcp@0.2.6"));
        assert!(!provides_import("plain"));
    }

    #[test]
    fn splits_interface_names() {
        assert_eq!(split_name("wasi:io/poll@0.2.3"), Some(("wasi:io", "poll", "0.2.3")));
        assert_eq!(split_name("wasm-ccm:provider/http@0.2.0"), Some(("wasm-ccm:provider", "http", "0.2.0")));
        assert_eq!(split_name("plain"), None);
    }
}
