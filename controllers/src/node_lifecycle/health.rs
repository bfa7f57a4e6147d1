//! Node health as upstream's node lifecycle controller judges it (tryUpdateNodeHealth): a
//! kubelet that has neither posted status nor renewed its Lease within the grace period has
//! its conditions set to Unknown, so that the node is tainted and its pods evicted.

use chrono::{DateTime, Duration, Utc};
use registry::object;
use registry::types::ConditionStatus;
use serde_json::{json, Value};

/// The conditions a kubelet owns, set to Unknown when it goes silent.
pub const KUBELET_CONDITIONS: [&str; 4] =
    ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

#[derive(Clone, Copy, Debug)]
pub struct HealthConfig {
    /// How long a running node may be silent (`--node-monitor-grace-period`, upstream's 40 s).
    pub monitor_grace: Duration,
    /// How long a node that never posted status may be silent (upstream's 60 s).
    pub startup_grace: Duration,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            monitor_grace: Duration::seconds(40),
            startup_grace: Duration::seconds(60),
        }
    }
}

pub fn condition<'a>(node: &'a Value, type_: &str) -> Option<&'a Value> {
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn time(v: &Value) -> Option<DateTime<Utc>> {
    v.as_str().and_then(object::parse_time)
}

/// When the kubelet was last heard from: its Ready heartbeat, its Lease's renewTime, or else
/// the node's creation.
pub fn last_heard(node: &Value, lease: Option<&Value>) -> Option<DateTime<Utc>> {
    let heartbeat = condition(node, "Ready").and_then(|c| time(&c["lastHeartbeatTime"]));
    let renewed = lease.and_then(|l| time(&l["spec"]["renewTime"]));
    heartbeat
        .max(renewed)
        .or_else(|| time(&node["metadata"]["creationTimestamp"]))
}

/// When the node will be judged silent, if it is not yet.
pub fn silent_at(
    node: &Value,
    lease: Option<&Value>,
    config: HealthConfig,
) -> Option<DateTime<Utc>> {
    let grace = if condition(node, "Ready").is_some() {
        config.monitor_grace
    } else {
        config.startup_grace
    };
    last_heard(node, lease).map(|t| t + grace)
}

/// The node's conditions with every kubelet-owned one Unknown, if the kubelet has been silent
/// past its grace period and some are not Unknown yet; None when nothing changes.
pub fn silenced_conditions(
    node: &Value,
    lease: Option<&Value>,
    now: DateTime<Utc>,
    config: HealthConfig,
) -> Option<Value> {
    if silent_at(node, lease, config).is_some_and(|at| at > now) {
        return None;
    }
    let stamp = object::timestamp(now);
    let created = node["metadata"]["creationTimestamp"].clone();
    let mut conditions = node["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut changed = false;
    for type_ in KUBELET_CONDITIONS {
        match conditions.iter_mut().find(|c| c["type"] == type_) {
            Some(c)
                if ConditionStatus::from_value(&c["status"]) == Some(ConditionStatus::Unknown) => {}
            Some(c) => {
                c["status"] = json!("Unknown");
                c["reason"] = json!("NodeStatusUnknown");
                c["message"] = json!("Kubelet stopped posting node status.");
                c["lastTransitionTime"] = json!(stamp);
                changed = true;
            }
            None => {
                conditions.push(json!({
                    "type": type_,
                    "status": "Unknown",
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastHeartbeatTime": created,
                    "lastTransitionTime": stamp,
                }));
                changed = true;
            }
        }
    }
    changed.then_some(Value::Array(conditions))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        object::parse_time(text).unwrap_or_default()
    }

    fn node(ready: Option<&str>, heartbeat: &str) -> Value {
        let conditions: Vec<Value> = ready
            .map(|s| {
                vec![
                    json!({"type": "Ready", "status": s, "lastHeartbeatTime": heartbeat,
                            "lastTransitionTime": heartbeat}),
                ]
            })
            .unwrap_or_default();
        json!({"metadata": {"name": "n", "creationTimestamp": "2024-01-01T00:00:00Z"},
               "status": {"conditions": conditions}})
    }

    #[test]
    fn a_silent_node_goes_unknown_after_the_grace_period() {
        let n = node(Some("True"), "2024-01-01T00:01:00Z");
        let cfg = HealthConfig::default();
        assert_eq!(
            silenced_conditions(&n, None, at("2024-01-01T00:01:39Z"), cfg),
            None
        );
        let conditions =
            silenced_conditions(&n, None, at("2024-01-01T00:01:41Z"), cfg).unwrap_or_default();
        let ready = conditions
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
        assert_eq!(ready.map(|c| c["status"].clone()), Some(json!("Unknown")));
        assert_eq!(
            ready.map(|c| c["reason"].clone()),
            Some(json!("NodeStatusUnknown"))
        );
        assert_eq!(conditions.as_array().map(Vec::len), Some(4));
    }

    #[test]
    fn a_renewed_lease_keeps_the_node_healthy() {
        let n = node(Some("True"), "2024-01-01T00:01:00Z");
        let lease = json!({"spec": {"renewTime": "2024-01-01T00:05:00.000000Z"}});
        let now = at("2024-01-01T00:05:30Z");
        assert_eq!(
            silenced_conditions(&n, Some(&lease), now, HealthConfig::default()),
            None
        );
        assert!(silenced_conditions(&n, None, now, HealthConfig::default()).is_some());
    }

    #[test]
    fn a_node_that_never_posted_gets_the_startup_grace() {
        let n = node(None, "");
        let cfg = HealthConfig::default();
        assert_eq!(
            silenced_conditions(&n, None, at("2024-01-01T00:00:59Z"), cfg),
            None
        );
        let c = silenced_conditions(&n, None, at("2024-01-01T00:01:01Z"), cfg).unwrap_or_default();
        assert_eq!(c[0]["reason"], "NodeStatusNeverUpdated");
        // Once Unknown, nothing more changes.
        let mut unknown = n.clone();
        unknown["status"]["conditions"] = c;
        assert_eq!(
            silenced_conditions(&unknown, None, at("2024-01-01T01:00:00Z"), cfg),
            None
        );
    }
}
