//! An autoscaler's status as the controller writes it (upstream's setCondition and setStatus):
//! a condition's transition time moves only when its status does.

use serde_json::{json, Value};

/// Sets the condition of `kind` (added when missing).
pub(super) fn set_condition(
    hpa: &mut Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let list = &mut hpa["status"]["conditions"];
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(list) = list.as_array_mut() else {
        return;
    };
    let at = match list.iter().position(|c| c["type"] == kind) {
        Some(at) => at,
        None => {
            list.push(json!({"type": kind}));
            list.len() - 1
        }
    };
    let condition = &mut list[at];
    if condition["status"] != status {
        condition["lastTransitionTime"] = json!(registry::object::now());
    }
    condition["status"] = json!(status);
    condition["reason"] = json!(reason);
    condition["message"] = json!(message);
}

/// The replica counts and metrics; a rescale stamps lastScaleTime.
pub(super) fn set_status(
    hpa: &mut Value,
    current: i64,
    desired: i64,
    metrics: &[Value],
    rescaled: bool,
) {
    let status = &mut hpa["status"];
    let map = match status.as_object_mut() {
        Some(map) => map,
        None => {
            *status = json!({});
            match status.as_object_mut() {
                Some(map) => map,
                None => return,
            }
        }
    };
    if current == 0 {
        map.remove("currentReplicas");
    } else {
        map.insert("currentReplicas".into(), json!(current));
    }
    map.insert("desiredReplicas".into(), json!(desired));
    if metrics.is_empty() {
        map.remove("currentMetrics");
    } else {
        map.insert("currentMetrics".into(), Value::Array(metrics.to_vec()));
    }
    if rescaled {
        map.insert("lastScaleTime".into(), json!(registry::object::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_transition_time_until_the_status_changes() {
        let mut hpa = json!({"status": {}});
        set_condition(&mut hpa, "AbleToScale", "True", "SucceededGetScale", "ok");
        let first = hpa["status"]["conditions"][0]["lastTransitionTime"].clone();
        hpa["status"]["conditions"][0]["lastTransitionTime"] = json!("2026-01-01T00:00:00Z");
        set_condition(&mut hpa, "AbleToScale", "True", "SucceededRescale", "again");
        assert_eq!(
            hpa["status"]["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(hpa["status"]["conditions"][0]["reason"], "SucceededRescale");
        set_condition(&mut hpa, "AbleToScale", "False", "FailedGetScale", "no");
        assert_ne!(
            hpa["status"]["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        assert!(first.is_string());
        set_condition(&mut hpa, "ScalingActive", "False", "ScalingDisabled", "off");
        assert_eq!(
            hpa["status"]["conditions"].as_array().map(Vec::len),
            Some(2)
        );
    }

    #[test]
    fn status_counts_metrics_and_scale_time() {
        let mut hpa = json!({"status": {"currentReplicas": 3, "desiredReplicas": 3}});
        set_status(&mut hpa, 0, 2, &[json!({"type": ""})], true);
        assert!(hpa["status"].get("currentReplicas").is_none());
        assert_eq!(hpa["status"]["desiredReplicas"], 2);
        assert_eq!(hpa["status"]["currentMetrics"], json!([{"type": ""}]));
        assert!(hpa["status"]["lastScaleTime"].is_string());
    }
}
