//! The Go skeleton: the SDK's template module, `guest-sdk-go/template`,
//! renamed for the provider.

use std::path::Path;

use heck::{ToSnakeCase as _, ToUpperCamelCase as _};

/// The template's files, by name.
const TEMPLATE: [(&str, &str); 5] = [
    ("go.mod", include_str!("../../../../../guest-sdk-go/template/go.mod")),
    ("main.go", include_str!("../../../../../guest-sdk-go/template/main.go")),
    ("acme.go", include_str!("../../../../../guest-sdk-go/template/acme.go")),
    ("acme_test.go", include_str!("../../../../../guest-sdk-go/template/acme_test.go")),
    ("README.md", include_str!("../../../../../guest-sdk-go/template/README.md")),
];

/// The template's `go.mod` line that points at the SDK beside it.
const SDK_REPLACE: &str = "replace github.com/wasm-ccm/wasm-ccm/guest-sdk-go => ..\n";

/// Writes the module of the provider `name` into `dir`, its `go.mod`
/// pointing at `sdk` (a checkout's `guest-sdk-go`) when given.
///
/// # Errors
/// When a file cannot be written.
pub(super) fn write_module(name: &str, dir: &Path, sdk: Option<&Path>) -> anyhow::Result<()> {
    for (file, text) in TEMPLATE {
        let mut text = rename(text, name);
        if file == "go.mod" {
            let replace = match sdk {
                Some(sdk) => format!("replace github.com/wasm-ccm/wasm-ccm/guest-sdk-go => {}\n", sdk.display()),
                None => format!("// {SDK_REPLACE}"),
            };
            text = text.replace(SDK_REPLACE, &replace);
        }
        super::write(&dir.join(file.replace("acme", &name.to_snake_case())), &text)?;
    }
    Ok(())
}

/// The template's text for the provider `name`: its module, type, function
/// and file names, and its name where the template says `acme`.
fn rename(text: &str, name: &str) -> String {
    let snake = name.to_snake_case();
    text.replace("provider_acme", &format!("provider_{snake}"))
        .replace("newAcme", &format!("new{}", name.to_upper_camel_case()))
        .replace("Acme", &name.to_upper_camel_case())
        .replace("acme.go", &format!("{snake}.go"))
        .replace("acme", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_provider() {
        let renamed = rename("provider_acme.wasm provider-acme newAcme(x) *Acme acme.go \"acme\"", "big-cloud");
        assert_eq!(
            renamed,
            "provider_big_cloud.wasm provider-big-cloud newBigCloud(x) *BigCloud big_cloud.go \"big-cloud\""
        );
    }

    #[test]
    fn the_template_points_at_its_sdk_as_this_module_expects() {
        let go_mod = TEMPLATE.iter().find(|(file, _)| *file == "go.mod").unwrap().1;
        assert!(go_mod.contains(SDK_REPLACE), "{go_mod}");
    }
}
