//! A Kubernetes API server harness on loopback that behaves like kube-apiserver in what a
//! cloud-controller-manager relies on: CRUD, the status subresource, finalizers, patches, lists with
//! selectors and consistent pages, watches with bookmarks and expiry, Service IP and node port
//! allocation, discovery and `kubectl` tables. Faults can be injected and requests are counted.
//!
//! See `DIFFERENCES.md` in this crate for everything it does differently from the real server.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

mod allocator;
mod conversion;
mod create;
mod delete;
mod discovery;
mod error;
mod faults;
mod handler;
mod history;
mod identity;
mod kubeconfig;
mod list;
mod meta;
mod patch;
mod render;
mod requests;
mod resources;
mod review;
mod route;
mod selector;
mod server;
mod service;
mod store;
mod strategic;
mod strategy;
mod table;
mod update;
mod watch;

pub use faults::Faults;
pub use requests::{RequestAttributes, RequestCounts};
pub use server::{ApiServer, Config};
