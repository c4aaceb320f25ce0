//! Embeds the fake provider component in the binary when it has been built
//! (by `providers/build.sh`), so that `wasm-ccm local` runs without files;
//! and stamps the build for `wasm_ccm_build_info`: the Git commit (from
//! `WASM_CCM_GIT_COMMIT`, else the checkout's `HEAD`) and the compiler's
//! version.

use std::path::Path;
use std::process::Command;

fn main() {
    embed_fake();
    stamp();
}

fn embed_fake() {
    println!("cargo::rustc-check-cfg=cfg(embedded_fake)");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fake = manifest.join("../../target/wasm/provider_fake.wasm");
    println!("cargo::rerun-if-changed={}", fake.display());
    if fake.exists() {
        println!("cargo::rustc-cfg=embedded_fake");
        println!("cargo::rustc-env=WASM_CCM_EMBEDDED_FAKE={}", fake.display());
    }
}

/// What `program args` prints, trimmed; `None` when it fails.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

fn stamp() {
    println!("cargo::rerun-if-env-changed=WASM_CCM_GIT_COMMIT");
    let commit = std::env::var("WASM_CCM_GIT_COMMIT")
        .ok()
        .filter(|commit| !commit.is_empty())
        .or_else(|| output("git", &["rev-parse", "HEAD"]));
    if let Some(commit) = commit {
        println!("cargo::rustc-env=WASM_CCM_GIT_COMMIT={commit}");
    }
    // A new commit, or another branch checked out, stamps the build again
    // (a missing file would rerun this script at every build).
    let branch = output("git", &["symbolic-ref", "-q", "HEAD"]);
    for path in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(file) = output("git", &["rev-parse", "--git-path", path]).filter(|file| Path::new(file).exists()) {
            println!("cargo::rerun-if-changed={file}");
        }
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    if let Some(version) = output(&rustc, &["--version"]) {
        println!("cargo::rustc-env=WASM_CCM_RUST_VERSION={version}");
    }
}
