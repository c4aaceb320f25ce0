//! Conversion between the stored form of objects and the form of the resource a client asked for.
//!
//! Core `v1` Events and `events.k8s.io/v1` Events are one stored object served in two shapes, as in the
//! real server: an Event recorded through either API is listed and watched through both.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::resources::{Conversion, ResourceType};

/// Fields that differ between the two Event shapes: (core `v1` name, `events.k8s.io/v1` name).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

fn rename(object: &mut Map<String, Value>, pairs: impl Iterator<Item = (&'static str, &'static str)>) {
    for (from, to) in pairs {
        if let Some(value) = object.remove(from) {
            object.insert(to.to_string(), value);
        }
    }
}

/// Converts `object` as a client of `resource` sent it into the stored form.
pub(crate) fn to_storage(resource: &ResourceType, mut object: Value) -> Value {
    if resource.conversion == Conversion::EventsV1
        && let Some(map) = object.as_object_mut()
    {
        rename(map, EVENT_FIELDS.iter().map(|(core, events)| (*events, *core)));
        map.insert("apiVersion".into(), Value::String("v1".into()));
    }
    object
}

/// Converts a stored object into the form clients of `resource` see.
pub(crate) fn to_client(resource: &ResourceType, object: &Arc<Value>) -> Arc<Value> {
    match resource.conversion {
        Conversion::Identity => object.clone(),
        Conversion::EventsV1 => {
            let mut converted = (**object).clone();
            if let Some(map) = converted.as_object_mut() {
                rename(map, EVENT_FIELDS.iter().copied());
                map.insert("apiVersion".into(), Value::String(resource.api_version()));
            }
            Arc::new(converted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_name;
    use serde_json::json;

    #[test]
    fn events_round_trip_between_the_two_shapes() {
        let events_v1 = by_name("events.events.k8s.io").unwrap();
        let sent = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Node", "name": "n1"}, "note": "hello", "reason": "Synced",
            "reportingController": "ccm", "reportingInstance": "ccm-1",
        });
        let stored = to_storage(events_v1, sent.clone());
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(stored["involvedObject"]["name"], "n1");
        assert_eq!(stored["message"], "hello");
        assert_eq!(stored["reportingComponent"], "ccm");
        assert_eq!(*to_client(events_v1, &Arc::new(stored.clone())), sent);
        let core = by_name("events").unwrap();
        assert_eq!(*to_client(core, &Arc::new(stored.clone())), stored);
    }
}
