//! Deployment conditions (Available, Progressing, ReplicaFailure) with upstream's rules for
//! their times, and the predicates the progress check is made of.

use chrono::{DateTime, Utc};
use registry::object;
use serde_json::{json, Value};

use super::spec_replicas;

pub const AVAILABLE: &str = "Available";
pub const PROGRESSING: &str = "Progressing";
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

pub const MIN_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const MIN_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";
pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS: &str = "FoundNewReplicaSet";
pub const RS_UPDATED: &str = "ReplicaSetUpdated";
pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
pub const FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
pub const PAUSED: &str = "DeploymentPaused";
pub const RESUMED: &str = "DeploymentResumed";

/// A condition as of now.
pub fn new_condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    let now = object::now();
    json!({
        "type": kind,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

pub fn get_condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// Puts `condition` in place of the one of its type, unless that one already has the same
/// status and reason; the transition time survives when the status does not change.
pub fn set_condition(status: &mut Value, mut condition: Value) {
    if let Some(current) = get_condition(status, condition["type"].as_str().unwrap_or_default()) {
        if current["status"] == condition["status"] && current["reason"] == condition["reason"] {
            return;
        }
        if current["status"] == condition["status"] {
            condition["lastTransitionTime"] = current["lastTransitionTime"].clone();
        }
    }
    let kind = condition["type"].as_str().unwrap_or_default().to_string();
    remove_condition(status, &kind);
    match status["conditions"].as_array_mut() {
        Some(conditions) => conditions.push(condition),
        None => status["conditions"] = json!([condition]),
    }
}

pub fn remove_condition(status: &mut Value, kind: &str) {
    if let Some(conditions) = status["conditions"].as_array_mut() {
        conditions.retain(|c| c["type"] != kind);
        if conditions.is_empty() {
            if let Some(map) = status.as_object_mut() {
                map.remove("conditions");
            }
        }
    }
}

/// progressDeadlineSeconds, unless unset or "never" (MaxInt32).
pub fn progress_deadline(d: &Value) -> Option<i64> {
    d["spec"]["progressDeadlineSeconds"]
        .as_i64()
        .filter(|s| *s != i64::from(i32::MAX))
}

/// Everything updated, nothing old left, all available, and this generation seen.
pub fn deployment_complete(d: &Value, status: &Value) -> bool {
    let replicas = spec_replicas(d);
    status_count_of(status, "updatedReplicas") == replicas
        && status_count_of(status, "replicas") == replicas
        && status_count_of(status, "availableReplicas") == replicas
        && status["observedGeneration"].as_i64().unwrap_or(0) >= object::generation(d)
}

fn status_count_of(status: &Value, field: &str) -> i32 {
    status[field]
        .as_i64()
        .map_or(0, |v| v.clamp(0, i64::from(i32::MAX)) as i32)
}

/// Something moved since the stored status: more updated, fewer old, more ready or available.
pub fn deployment_progressing(d: &Value, new: &Value) -> bool {
    let old = &d["status"];
    let count = status_count_of;
    let old_old = count(old, "replicas") - count(old, "updatedReplicas");
    let new_old = count(new, "replicas") - count(new, "updatedReplicas");
    count(new, "updatedReplicas") > count(old, "updatedReplicas")
        || new_old < old_old
        || count(new, "readyReplicas") > count(old, "readyReplicas")
        || count(new, "availableReplicas") > count(old, "availableReplicas")
}

/// The Progressing condition has not been updated for longer than the deadline.
pub fn deployment_timed_out(d: &Value, new: &Value, now: DateTime<Utc>) -> bool {
    let Some(deadline) = progress_deadline(d) else {
        return false;
    };
    let Some(condition) = get_condition(new, PROGRESSING) else {
        return false;
    };
    match condition["reason"].as_str() {
        Some(NEW_RS_AVAILABLE) => false,
        Some(TIMED_OUT) => true,
        _ => condition["lastUpdateTime"]
            .as_str()
            .and_then(object::parse_time)
            .is_some_and(|from| from + chrono::Duration::seconds(deadline) < now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_status_keeps_transition_time_and_same_reason_changes_nothing() {
        let mut status = json!({});
        let mut first = new_condition(PROGRESSING, "True", NEW_RS_CREATED, "a");
        first["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        set_condition(&mut status, first);
        set_condition(
            &mut status,
            new_condition(PROGRESSING, "True", RS_UPDATED, "b"),
        );
        let c = get_condition(&status, PROGRESSING)
            .cloned()
            .unwrap_or_default();
        assert_eq!(c["reason"], RS_UPDATED);
        assert_eq!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");
        set_condition(
            &mut status,
            new_condition(PROGRESSING, "True", RS_UPDATED, "c"),
        );
        assert_eq!(
            get_condition(&status, PROGRESSING).map(|c| &c["message"]),
            Some(&json!("b"))
        );
        set_condition(
            &mut status,
            new_condition(PROGRESSING, "False", TIMED_OUT, "d"),
        );
        let c = get_condition(&status, PROGRESSING)
            .cloned()
            .unwrap_or_default();
        assert_ne!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");
        remove_condition(&mut status, PROGRESSING);
        assert!(status.get("conditions").is_none());
    }

    #[test]
    fn timing_out_counts_from_the_last_update() {
        let d = json!({"spec": {"progressDeadlineSeconds": 10}});
        let mut c = new_condition(PROGRESSING, "True", RS_UPDATED, "m");
        c["lastUpdateTime"] = json!("2020-01-01T00:00:00Z");
        let status = json!({"conditions": [c]});
        let at = |s: &str| object::parse_time(s).unwrap_or_default();
        assert!(!deployment_timed_out(
            &d,
            &status,
            at("2020-01-01T00:00:09Z")
        ));
        assert!(deployment_timed_out(
            &d,
            &status,
            at("2020-01-01T00:00:11Z")
        ));
        let never = json!({"spec": {"progressDeadlineSeconds": i32::MAX}});
        assert!(!deployment_timed_out(
            &never,
            &status,
            at("2030-01-01T00:00:00Z")
        ));
    }
}
