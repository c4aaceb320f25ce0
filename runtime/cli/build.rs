//! Embeds the fake provider component in the binary when it has been built
//! (by `providers/build.sh`), so that `wasm-ccm local` runs without files.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(embedded_fake)");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let fake = manifest.join("../../target/wasm/provider_fake.wasm");
    println!("cargo::rerun-if-changed={}", fake.display());
    if fake.exists() {
        println!("cargo::rustc-cfg=embedded_fake");
        println!("cargo::rustc-env=WASM_CCM_EMBEDDED_FAKE={}", fake.display());
    }
}
