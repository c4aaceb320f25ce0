//! What wasm-ccm's unit tests, integration tests and benchmarks build their
//! inputs from: nodes and Services ([`NodeFixture`], [`ServiceFixture`],
//! [`ServicePortFixture`]), a free loopback port, and the components
//! `providers/build.sh` builds.
//!
//! ```
//! use k8s_openapi::api::core::v1::{Node, Service, ServicePort};
//! use wasm_ccm_test_support::{NodeFixture, ServiceFixture, ServicePortFixture};
//!
//! let node = Node::test("node-a").with_provider_id("fake://i-a");
//! let web = Service::test("web").with_ports([ServicePort::test("http", 80).with_node_port(30080)]);
//! # assert_eq!(node.spec.unwrap().provider_id.as_deref(), Some("fake://i-a"));
//! # assert_eq!(web.spec.unwrap().ports.unwrap()[0].node_port, Some(30080));
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failure stops the test that met it"
)]

mod guest;
mod kubectl;
mod node;
mod port;
mod service;

pub use guest::{guest, guest_path, repository};
pub use kubectl::kubectl;
pub use node::NodeFixture;
pub use port::free_port;
pub use service::{ServiceFixture, ServicePortFixture};
