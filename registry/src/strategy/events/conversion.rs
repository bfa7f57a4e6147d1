//! core/v1 Event ⇄ events.k8s.io/v1 Event, as upstream's conversion functions map them through
//! the internal type: the events.k8s.io names on the left, the core ones on the right. Fields
//! named alike in both (reason, type, eventTime, series, action, related, reportingInstance,
//! metadata) pass through as they are.

use serde_json::{Map, Value};

use crate::strategy::conversion::Conversion;

const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// Serves the core-shaped stored event as events.k8s.io/v1.
pub struct EventsV1;

fn rename(map: &mut Map<String, Value>, pairs: impl Iterator<Item = (&'static str, &'static str)>) {
    // Taken out first, then put back, so a name that is the source of one pair and the target
    // of another never overwrites a value not yet moved.
    let moved: Vec<(&str, Value)> = pairs
        .filter_map(|(from, to)| map.remove(from).map(|v| (to, v)))
        .collect();
    for (to, value) in moved {
        map.insert(to.to_string(), value);
    }
}

impl Conversion for EventsV1 {
    fn to_served(&self, obj: &mut Value) {
        if let Some(map) = obj.as_object_mut() {
            rename(map, RENAMED.iter().map(|(events, core)| (*core, *events)));
            map.insert("apiVersion".into(), Value::from("events.k8s.io/v1"));
        }
    }

    fn to_stored(&self, obj: &mut Value) {
        if let Some(map) = obj.as_object_mut() {
            rename(map, RENAMED.iter().copied());
            map.insert("apiVersion".into(), Value::from("v1"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trips_between_the_shapes() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "ns"},
            "reason": "Started", "message": "started", "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:01:00Z",
            "count": 3, "reportingComponent": "kubelet", "reportingInstance": "n1",
            "action": "Start", "eventTime": null,
        });
        let mut served = core.clone();
        EventsV1.to_served(&mut served);
        assert_eq!(served["apiVersion"], "events.k8s.io/v1");
        assert_eq!(served["regarding"]["name"], "web");
        assert_eq!(served["note"], "started");
        assert_eq!(served["deprecatedSource"]["host"], "n1");
        assert_eq!(served["deprecatedCount"], 3);
        assert_eq!(served["deprecatedFirstTimestamp"], "2024-01-01T00:00:00Z");
        assert_eq!(served["deprecatedLastTimestamp"], "2024-01-01T00:01:00Z");
        assert_eq!(served["reportingController"], "kubelet");
        assert_eq!(served["reportingInstance"], "n1");
        assert!(served.get("involvedObject").is_none() && served.get("message").is_none());
        let mut back = served;
        EventsV1.to_stored(&mut back);
        assert_eq!(back, core);
    }
}
