//! What a provider file is: component or module, its world, size and digest.

use std::fmt;

use serde::Serialize;
use wit_parser::decoding::{DecodedWasm, decode};
use wit_parser::{Resolve, WorldItem, WorldKey};

use crate::{DistributionError, digest};

/// A description of WebAssembly bytes, for `wasm-ccm provider inspect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    /// Whether the bytes are a component (otherwise a core module, which
    /// has no world and cannot be a provider).
    pub component: bool,
    /// The size in bytes.
    pub size: usize,
    /// `sha256:<hex>` of the bytes, the digest pins and signatures name.
    pub digest: String,
    /// The world's imports: interfaces as `namespace:package/name@version`,
    /// functions by name. Empty for a core module.
    pub imports: Vec<String>,
    /// The world's exports, named as the imports are.
    pub exports: Vec<String>,
}

/// Describes `wasm` without compiling it: decodes the component's world.
///
/// # Errors
/// When the bytes are not WebAssembly, are a WIT package rather than a
/// component, or the component's types cannot be decoded.
///
/// ```
/// let inspection = wasm_ccm_distribution::inspect(b"\0asm\x01\0\0\0").unwrap();
/// assert!(!inspection.component);
/// assert_eq!(inspection.size, 8);
/// ```
pub fn inspect(wasm: &[u8]) -> Result<Inspection, DistributionError> {
    let digest = digest::sha256_digest(wasm);
    if wasmparser::Parser::is_core_wasm(wasm) {
        return Ok(Inspection { component: false, size: wasm.len(), digest, imports: Vec::new(), exports: Vec::new() });
    }
    if !wasmparser::Parser::is_component(wasm) {
        return Err(DistributionError::NotWebAssembly("the bytes do not start with a WebAssembly header".to_owned()));
    }
    let (resolve, world) = match decode(wasm) {
        Ok(DecodedWasm::Component(resolve, world)) => (resolve, world),
        Ok(DecodedWasm::WitPackage(..)) => {
            return Err(DistributionError::NotWebAssembly(
                "it is a WIT package (types only), not a component".to_owned(),
            ));
        }
        Err(err) => return Err(DistributionError::NotWebAssembly(format!("{err:#}"))),
    };
    let world = &resolve.worlds[world];
    Ok(Inspection {
        component: true,
        size: wasm.len(),
        digest,
        imports: names(&resolve, &world.imports),
        exports: names(&resolve, &world.exports),
    })
}

/// The names of a world's interfaces and functions, sorted by name and then
/// by semantic version (`instances@0.1.0` before `instances-v2@0.1.0`, and
/// `@0.2.0` before `@0.10.0`, as a plain string sort would not have them);
/// types are left out.
fn names<'a>(resolve: &Resolve, items: impl IntoIterator<Item = (&'a WorldKey, &'a WorldItem)>) -> Vec<String> {
    let mut names: Vec<String> = items
        .into_iter()
        .filter(|(_, item)| !matches!(item, WorldItem::Type { .. }))
        .map(|(key, _)| match key {
            WorldKey::Name(name) => name.clone(),
            WorldKey::Interface(id) => resolve.id_of(*id).unwrap_or_else(|| "(anonymous interface)".to_owned()),
        })
        .collect();
    names.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    names
}

/// `("ns:pkg/name", Some(1.0.0), "1.0.0")` for `ns:pkg/name@1.0.0`: no
/// version, or one that is not semantic, sorts first, then by its text.
fn sort_key(name: &str) -> (&str, Option<semver::Version>, &str) {
    let (name, version) = name.split_once('@').unwrap_or((name, ""));
    (name, semver::Version::parse(version).ok(), version)
}

impl fmt::Display for Inspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kind     {}", if self.component { "component" } else { "core module (not a component)" })?;
        writeln!(f, "size     {} bytes", self.size)?;
        writeln!(f, "digest   {}", self.digest)?;
        for (title, names) in [("imports", &self.imports), ("exports", &self.exports)] {
            if names.is_empty() {
                writeln!(f, "{title:<8} none")?;
            }
            for (i, name) in names.iter().enumerate() {
                writeln!(f, "{:<8} {name}", if i == 0 { title } else { "" })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_modules_are_not_components() {
        let inspection = inspect(b"\0asm\x01\0\0\0").unwrap();
        assert_eq!(
            inspection,
            Inspection {
                component: false,
                size: 8,
                digest: digest::sha256_digest(b"\0asm\x01\0\0\0"),
                imports: vec![],
                exports: vec![],
            }
        );
        assert!(inspection.to_string().starts_with("kind     core module (not a component)\nsize     8 bytes\n"));
    }

    #[test]
    fn other_bytes_are_refused() {
        let err = inspect(b"#!/bin/sh").unwrap_err().to_string();
        assert_eq!(err, "not a WebAssembly component: the bytes do not start with a WebAssembly header");
        // A component header followed by garbage.
        let err = inspect(b"\0asm\x0d\0\x01\0\xff\xff").unwrap_err();
        assert!(matches!(err, DistributionError::NotWebAssembly(_)), "{err}");
    }

    #[test]
    fn names_sort_by_name_then_version() {
        let mut names = vec!["a:b/x-v2@0.1.0", "a:b/x@0.10.0", "log", "a:b/x@0.2.0", "a:b/x@0.1.0", "a:b/x"];
        names.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        assert_eq!(names, ["a:b/x", "a:b/x@0.1.0", "a:b/x@0.2.0", "a:b/x@0.10.0", "a:b/x-v2@0.1.0", "log"]);
    }

    #[test]
    fn display_lists_the_world() {
        let inspection = Inspection {
            component: true,
            size: 3,
            digest: "sha256:x".into(),
            imports: vec!["a:b/c@1.0.0".into(), "log".into()],
            exports: vec![],
        };
        assert_eq!(
            inspection.to_string(),
            "kind     component\nsize     3 bytes\ndigest   sha256:x\nimports  a:b/c@1.0.0\n         log\nexports  none\n"
        );
    }
}
