//! Events, for both core/v1 and events.k8s.io/v1. Upstream prints both through the core
//! type; the two JSON shapes use different field names, read here side by side.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::format::since;
use super::zero_values::{get, int, text, time};
use super::{name, text_column, wide, TableColumn};

pub(in crate::catalogue) fn event_columns() -> Vec<TableColumn> {
    vec![
        text_column("Last Seen", "The time at which the most recent occurrence of this event was recorded.", last_seen),
        text_column("Type", "Type of this event (Normal, Warning), new types could be added in the future", event_type),
        text_column("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", reason),
        text_column("Object", "The object that this event is about.", object),
        wide(text_column("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.", subobject)),
        wide(text_column("Source", "The component reporting this event. Should be a short machine understandable string.", source)),
        text_column("Message", "A human-readable description of the status of this operation.", message),
        wide(text_column("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", first_seen)),
        // Declared a string upstream, filled with the integer count.
        wide(text_column("Count", "The number of times this event has occurred.", count)),
        wide(name()),
    ]
}

/// The first of `keys` present on the event: core/v1 name first, events.k8s.io/v1 second.
fn either<'a>(event: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter()
        .find_map(|k| event.get(*k).filter(|v| !v.is_null()))
}

fn either_text<'a>(event: &'a Value, keys: &[&str]) -> &'a str {
    either(event, keys).and_then(Value::as_str).unwrap_or("")
}

fn involved(event: &Value) -> Option<&Value> {
    either(event, &["involvedObject", "regarding"])
}

fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

fn first_seen_at(event: &Value, now: DateTime<Utc>) -> String {
    match time(event, &["firstTimestamp"]).or(time(event, &["deprecatedFirstTimestamp"])) {
        Some(t) => since(Some(t), now),
        None => since(time(event, &["eventTime"]), now),
    }
}

fn last_seen_at(event: &Value, now: DateTime<Utc>) -> String {
    if get(event, &["series"]).is_some_and(Value::is_object) {
        return since(time(event, &["series", "lastObservedTime"]), now);
    }
    match time(event, &["lastTimestamp"]).or(time(event, &["deprecatedLastTimestamp"])) {
        Some(t) => since(Some(t), now),
        None => first_seen_at(event, now),
    }
}

fn first_seen(event: &Value) -> Value {
    string(&first_seen_at(event, Utc::now()))
}

fn last_seen(event: &Value) -> Value {
    string(&last_seen_at(event, Utc::now()))
}

fn event_type(event: &Value) -> Value {
    string(text(event, &["type"]))
}

fn reason(event: &Value) -> Value {
    string(text(event, &["reason"]))
}

/// `kind/name` of the involved object, lower-cased kind.
fn object(event: &Value) -> Value {
    let (kind, name) =
        involved(event).map_or(("", ""), |o| (text(o, &["kind"]), text(o, &["name"])));
    let kind = kind.to_lowercase();
    string(&if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    })
}

fn subobject(event: &Value) -> Value {
    string(involved(event).map_or("", |o| text(o, &["fieldPath"])))
}

/// The reporting component, then the host, each falling back to the newer reporting fields.
fn source(event: &Value) -> Value {
    let legacy = either(event, &["source", "deprecatedSource"]);
    let pick = |legacy_key: &str, keys: &[&str]| {
        let old = legacy.map_or("", |s| text(s, &[legacy_key]));
        if old.is_empty() {
            either_text(event, keys)
        } else {
            old
        }
    };
    let component = pick("component", &["reportingComponent", "reportingController"]);
    let instance = pick("host", &["reportingInstance"]);
    string(&if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    })
}

fn message(event: &Value) -> Value {
    string(either_text(event, &["message", "note"]).trim())
}

/// series.count when the event is a series, else the legacy count, where unset means once.
fn count(event: &Value) -> Value {
    if get(event, &["series"]).is_some_and(Value::is_object) {
        return Value::from(int(event, &["series", "count"]).unwrap_or(0));
    }
    let n = either(event, &["count", "deprecatedCount"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    Value::from(if n == 0 { 1 } else { n })
}

#[cfg(test)]
mod tests {
    use chrono::{SecondsFormat, TimeDelta};
    use serde_json::json;

    use super::*;

    fn ago(now: DateTime<Utc>, secs: i64) -> String {
        (now - TimeDelta::seconds(secs)).to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    #[test]
    fn core_event() {
        let now = Utc::now();
        let ev = json!({
            "metadata": {"name": "web.17a"},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
            "reason": "BackOff", "type": "Warning",
            "message": "Back-off restarting failed container\n",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": ago(now, 3600), "lastTimestamp": ago(now, 120), "count": 7,
        });
        assert_eq!(last_seen_at(&ev, now), "2m");
        assert_eq!(first_seen_at(&ev, now), "60m");
        assert_eq!(object(&ev), "pod/web");
        assert_eq!(subobject(&ev), "spec.containers{app}");
        assert_eq!(source(&ev), "kubelet, node-1");
        assert_eq!(message(&ev), "Back-off restarting failed container");
        assert_eq!(count(&ev), 7);
        assert_eq!(event_type(&ev), "Warning");
    }

    #[test]
    fn events_v1_event() {
        let now = Utc::now();
        let ev = json!({
            "regarding": {"kind": "Node", "name": "node-1"},
            "note": "Node is ready", "reason": "NodeReady", "type": "Normal",
            "reportingController": "node-controller",
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "series": {"count": 4, "lastObservedTime": ago(now, 30)},
        });
        assert_eq!(last_seen_at(&ev, now), "30s");
        assert_eq!(object(&ev), "node/node-1");
        assert_eq!(source(&ev), "node-controller");
        assert_eq!(message(&ev), "Node is ready");
        assert_eq!(count(&ev), 4);
        assert_eq!(count(&json!({})), 1);
        assert_eq!(last_seen_at(&json!({}), now), "<unknown>");
    }
}
