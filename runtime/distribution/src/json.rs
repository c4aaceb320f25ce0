//! The JSON the crate writes: manifests, configs, signature payloads and
//! bundles.

use serde::Serialize;

/// `value` as JSON bytes.
#[expect(
    clippy::expect_used,
    reason = "only the crate's own types and JSON values are written: string keys, no failing Serialize impl"
)]
pub(crate) fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("the crate's own types serialise")
}
