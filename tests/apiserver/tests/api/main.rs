//! Scenario tests through a real `kube::Client` against the API server harness.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers: a failure stops the test that met it"
)]

mod crud;
mod discovery;
mod events;
mod faults;
mod finalizers;
mod kubectl;
mod lists;
mod patches;
mod services;
mod status;
mod watches;

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use wasm_ccm_apiserver::ApiServer;

/// Fails a scenario that takes longer than `seconds`, so a bug cannot hang the run.
async fn within<T>(seconds: u64, scenario: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(seconds), scenario).await.expect("the scenario timed out")
}

/// A fresh server and a client for it.
async fn server() -> anyhow::Result<(ApiServer, Client)> {
    let server = ApiServer::start().await.context("starting the API server")?;
    let client = server.client().await;
    Ok((server, client))
}

/// The status code of a failed request, or a description of what else happened.
fn api_code<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Result<(u16, String), String> {
    match result {
        Err(kube::Error::Api(status)) => Ok((status.code, status.reason.clone())),
        other => Err(format!("expected an API error, got {other:?}")),
    }
}
