//! The taints a node's conditions call for (upstream's TaintNodesByCondition and the NoExecute
//! tainting pass): NoSchedule taints for every unhealthy condition and for `unschedulable`,
//! and `not-ready` / `unreachable` NoExecute taints that evict pods. Taints of other keys are
//! left as they are.

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::ConditionStatus;
use serde_json::{json, Value};

use super::health::condition;

pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
const DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
const PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

const MANAGED: [&str; 7] = [
    NOT_READY,
    UNREACHABLE,
    MEMORY_PRESSURE,
    DISK_PRESSURE,
    PID_PRESSURE,
    NETWORK_UNAVAILABLE,
    UNSCHEDULABLE,
];

/// (key, effect) of every taint the node's state calls for.
fn wanted(node: &Value) -> Vec<(&'static str, &'static str)> {
    let status = |type_: &str| {
        condition(node, type_).and_then(|c| ConditionStatus::from_value(&c["status"]))
    };
    let mut taints = Vec::new();
    match status("Ready") {
        Some(ConditionStatus::False) => {
            taints.extend([(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")])
        }
        Some(ConditionStatus::Unknown) => {
            taints.extend([(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")])
        }
        _ => {}
    }
    for (type_, key) in [
        ("MemoryPressure", MEMORY_PRESSURE),
        ("DiskPressure", DISK_PRESSURE),
        ("PIDPressure", PID_PRESSURE),
        ("NetworkUnavailable", NETWORK_UNAVAILABLE),
    ] {
        if status(type_) == Some(ConditionStatus::True) {
            taints.push((key, "NoSchedule"));
        }
    }
    if node["spec"]["unschedulable"] == true {
        taints.push((UNSCHEDULABLE, "NoSchedule"));
    }
    taints
}

/// The node's taints as its state calls for, or None when they already are. Taints kept keep
/// their timeAdded; new ones are stamped `now` (NoExecute evictions count from it).
pub fn reconciled_taints(node: &Value, now: DateTime<Utc>) -> Option<Value> {
    let current = node["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let wanted = wanted(node);
    let is = |t: &Value, (key, effect): &(&str, &str)| t["key"] == *key && t["effect"] == *effect;
    let mut next: Vec<Value> = current
        .iter()
        .filter(|t| {
            let key = t["key"].as_str().unwrap_or_default();
            !MANAGED.contains(&key) || wanted.iter().any(|w| is(t, w))
        })
        .cloned()
        .collect();
    for w in &wanted {
        if !next.iter().any(|t| is(t, w)) {
            next.push(json!({"key": w.0, "effect": w.1, "timeAdded": object::timestamp(now)}));
        }
    }
    (next != current).then_some(Value::Array(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ready: &str, taints: Value) -> Value {
        json!({"spec": {"taints": taints},
               "status": {"conditions": [{"type": "Ready", "status": ready}]}})
    }

    #[test]
    fn unknown_ready_brings_unreachable_taints_and_ready_takes_them_away() {
        let now = Utc::now();
        let custom = json!([{"key": "team", "value": "a", "effect": "NoSchedule"}]);
        let tainted = reconciled_taints(&node("Unknown", custom.clone()), now).unwrap_or_default();
        let keys: Vec<_> = tainted
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                format!(
                    "{}:{}",
                    t["key"].as_str().unwrap_or(""),
                    t["effect"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                "team:NoSchedule",
                "node.kubernetes.io/unreachable:NoSchedule",
                "node.kubernetes.io/unreachable:NoExecute"
            ]
        );
        assert_eq!(
            reconciled_taints(&node("Unknown", tainted.clone()), now),
            None
        );
        assert_eq!(reconciled_taints(&node("True", tainted), now), Some(custom));
    }

    #[test]
    fn not_ready_and_cordoned() {
        let mut n = node("False", Value::Null);
        n["spec"]["unschedulable"] = json!(true);
        let taints = reconciled_taints(&n, Utc::now()).unwrap_or_default();
        assert_eq!(taints.as_array().map(Vec::len), Some(3));
        assert!(taints[2]["key"] == UNSCHEDULABLE);
    }
}
