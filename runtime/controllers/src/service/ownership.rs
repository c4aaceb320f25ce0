//! Which provider ensured a Service's load balancer, recorded in the
//! Service's own status as a condition rather than trusted from anything a
//! tenant who owns the Service can write.
//!
//! The condition [`OWNER_CONDITION`] names the provider in its message. It
//! is written through the status subresource together with the finalizer,
//! in the one patch that upstream's `addFinalizer` makes before the first
//! ensure, so a crash in the middle of an ensure leaves it, and it costs no
//! write more than upstream's. It goes with the finalizer, in one patch
//! too, once the load balancer is deleted. The API server guards it: a
//! Service's status is cleared on create and kept on every update of the
//! Service itself, so only holders of `services/status` (the controller
//! manager, cluster administrators; not the `admin` and `edit` roles
//! tenants get) can set it, and it lives and dies with the Service's UID.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::{Value, json};

use super::rules::{LOAD_BALANCER_FINALIZER, PROVIDER_ANNOTATION};

/// The condition type of the record.
pub const OWNER_CONDITION: &str = "wasm-ccm.io/LoadBalancerProvider";
/// The condition's reason; its message is the provider's name.
const REASON: &str = "Ensured";

/// The provider recorded as the owner of `service`'s load balancer.
pub fn recorded(service: &Service) -> Option<&str> {
    record(service).map(|condition| condition.message.as_str()).filter(|provider| !provider.is_empty())
}

/// When the record of `service` was written: when its provider claimed it.
pub fn claimed_at(service: &Service) -> Option<&Time> {
    record(service).map(|condition| &condition.last_transition_time)
}

fn record(service: &Service) -> Option<&Condition> {
    let conditions = service.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|condition| condition.type_ == OWNER_CONDITION && condition.status == "True")
}

/// The strategic merge patch of the status subresource that adds the
/// finalizer, records `provider` and names it in the annotation, for people
/// to read.
pub fn claim_patch(provider: &str, now: Time) -> Value {
    json!({
        "metadata": {
            "finalizers": [LOAD_BALANCER_FINALIZER],
            "annotations": {PROVIDER_ANNOTATION: provider},
        },
        "status": {"conditions": [{
            "type": OWNER_CONDITION,
            "status": "True",
            "reason": REASON,
            "message": provider,
            "lastTransitionTime": now,
        }]},
    })
}

/// The strategic merge patch of the status subresource that takes the
/// finalizer, the record and the annotation away from `service`. The record
/// is deleted only where `service` has a condition of its type: given a
/// Service without conditions, kube-apiserver keeps the delete directive's
/// element as a condition of zero values, which no client can read.
pub fn release_patch(service: &Service) -> Value {
    let mut patch = json!({
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": [LOAD_BALANCER_FINALIZER],
            "annotations": {PROVIDER_ANNOTATION: null},
        },
    });
    let conditions = service.status.as_ref().and_then(|status| status.conditions.as_deref()).unwrap_or_default();
    if conditions.iter().any(|condition| condition.type_ == OWNER_CONDITION) {
        patch["status"] = json!({"conditions": [{"type": OWNER_CONDITION, "$patch": "delete"}]});
    }
    patch
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ServiceStatus;

    use super::*;
    use crate::fixtures::ServiceFixture;

    fn with_condition(status: &str, message: &str) -> Service {
        let mut service = Service::test("web");
        let condition = Condition {
            type_: OWNER_CONDITION.into(),
            status: status.into(),
            reason: REASON.into(),
            message: message.into(),
            last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            observed_generation: None,
        };
        service.status = Some(ServiceStatus { conditions: Some(vec![condition]), ..ServiceStatus::default() });
        service
    }

    #[test]
    fn only_a_true_condition_naming_a_provider_is_a_record() {
        assert_eq!(recorded(&with_condition("True", "vendor-a")), Some("vendor-a"));
        assert_eq!(recorded(&with_condition("False", "vendor-a")), None);
        assert_eq!(recorded(&with_condition("True", "")), None);
        assert_eq!(recorded(&Service::test("web")), None);
    }

    #[test]
    fn the_claim_is_a_valid_condition_the_release_removes() {
        let claim = claim_patch("vendor-a", Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        let condition: Condition = serde_json::from_value(claim["status"]["conditions"][0].clone()).unwrap();
        assert_eq!((condition.type_.as_str(), condition.message.as_str()), (OWNER_CONDITION, "vendor-a"));
        assert_eq!(release_patch(&with_condition("True", "vendor-a"))["status"]["conditions"][0]["$patch"], "delete");
    }

    #[test]
    fn the_release_deletes_a_record_only_where_there_is_one() {
        assert_eq!(release_patch(&with_condition("False", ""))["status"]["conditions"][0]["$patch"], "delete");
        let unrecorded = release_patch(&Service::test("web"));
        assert_eq!(unrecorded.get("status"), None, "{unrecorded}");
        assert_eq!(unrecorded["metadata"]["$deleteFromPrimitiveList/finalizers"][0], LOAD_BALANCER_FINALIZER);
    }
}
