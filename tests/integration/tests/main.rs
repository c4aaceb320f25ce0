//! wasm-ccm's integration tests, one test binary of the `wasm-ccm` package
//! (`cargo test -p wasm-ccm --test integration`); every file here is one of
//! its modules. The helpers they share are the `wasm-ccm-tests` library
//! beside them (`../src`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers: a failure stops the test that met it"
)]

use std::path::Path;

mod admin_auth;
mod api_server_outage;
mod aws_controllers;
mod aws_provider;
mod chart;
mod compile_cache;
mod conformance;
mod contract;
mod controllers;
mod cosign;
mod deploy;
mod loading;
mod local_cluster;
mod monitoring;
mod oci;
mod oci_clients;
mod provider_cli;
mod provider_new;
mod providers;
mod rate_limits;
mod registry_answers;
mod reload;
mod replicas;
mod sandbox;
mod shell;
mod upstream;

/// The `wasm-ccm` binary Cargo built for this run of the tests.
fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_wasm-ccm"))
}

/// Cargo compiles only this file: a file beside it that no `mod` names
/// would never run.
#[test]
fn every_file_here_is_a_module() {
    let modules: Vec<&str> =
        include_str!("main.rs").lines().filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';')).collect();
    let dir = wasm_ccm_tests::repository().join("tests/integration/tests");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|stem| stem.to_str()) else { continue };
        if path.extension().is_some_and(|ext| ext == "rs") && name != "main" {
            assert!(modules.contains(&name), "{} is not a module of tests/integration/tests/main.rs", path.display());
        }
    }
}
