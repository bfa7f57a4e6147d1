//! maxSurge and maxUnavailable (int or percent) resolved against the desired replicas, and the
//! replica annotations that let proportional scaling know what a ReplicaSet was sized for.

use registry::types::DeploymentStrategyType;
use serde_json::Value;

use super::{
    annotation, set_annotation, spec_replicas, status_count, DESIRED_REPLICAS, MAX_REPLICAS,
};

/// An int-or-percent scaled against `total` (upstream's GetScaledValueFromIntOrPercent):
/// percentages round up when `round_up`, down otherwise. Absent is 0.
pub fn scaled_value(v: &Value, total: i32, round_up: bool) -> Result<i32, String> {
    match v {
        Value::Null => Ok(0),
        Value::Number(n) => n
            .as_i64()
            .map(|n| n.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
            .ok_or_else(|| format!("invalid value for IntOrString: {n}")),
        Value::String(s) => {
            let percent: i64 = s
                .strip_suffix('%')
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            let scaled = percent as f64 * f64::from(total) / 100.0;
            let rounded = if round_up {
                scaled.ceil()
            } else {
                scaled.floor()
            };
            Ok(rounded.clamp(i32::MIN as f64, i32::MAX as f64) as i32)
        }
        other => Err(format!("invalid value for IntOrString: {other}")),
    }
}

/// (maxSurge, maxUnavailable) for `desired` replicas: surge rounds up, unavailable rounds
/// down, and when both come to zero one pod may be unavailable, so the rollout can move even
/// where surging is impossible (quota).
pub fn resolve_fenceposts(
    max_surge: &Value,
    max_unavailable: &Value,
    desired: i32,
) -> Result<(i32, i32), String> {
    let surge = scaled_value(max_surge, desired, true)?;
    let unavailable = scaled_value(max_unavailable, desired, false)?;
    if surge == 0 && unavailable == 0 {
        return Ok((0, 1));
    }
    Ok((surge, unavailable))
}

pub fn is_rolling_update(d: &Value) -> bool {
    DeploymentStrategyType::from_value(&d["spec"]["strategy"]["type"])
        == Some(DeploymentStrategyType::RollingUpdate)
}

fn rolling(d: &Value) -> (&Value, &Value) {
    let r = &d["spec"]["strategy"]["rollingUpdate"];
    (&r["maxSurge"], &r["maxUnavailable"])
}

/// The deployment's resolved maxSurge (0 unless it rolls).
pub fn max_surge(d: &Value) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    let (surge, unavailable) = rolling(d);
    resolve_fenceposts(surge, unavailable, spec_replicas(d))
        .map(|(s, _)| s)
        .unwrap_or(0)
}

/// The deployment's resolved maxUnavailable, never more than its replicas (0 unless it rolls).
pub fn max_unavailable(d: &Value) -> i32 {
    let replicas = spec_replicas(d);
    if !is_rolling_update(d) || replicas == 0 {
        return 0;
    }
    let (surge, unavailable) = rolling(d);
    resolve_fenceposts(surge, unavailable, replicas)
        .map(|(_, u)| u.min(replicas))
        .unwrap_or(0)
}

/// How many replicas the new ReplicaSet may have now (upstream's NewRSNewReplicas): a rolling
/// update grows it up to what maxSurge leaves room for; Recreate sizes it at once.
pub fn new_rs_new_replicas(d: &Value, all_rss: &[&Value], new_rs: &Value) -> Result<i32, String> {
    let replicas = spec_replicas(d);
    let current = spec_replicas(new_rs);
    let kind = &d["spec"]["strategy"]["type"];
    match DeploymentStrategyType::from_value(kind) {
        Some(DeploymentStrategyType::RollingUpdate) => {
            let surge = scaled_value(rolling(d).0, replicas, true)?;
            let pods: i32 = all_rss.iter().map(|rs| spec_replicas(rs)).sum();
            let max_total = replicas.saturating_add(surge);
            if pods >= max_total {
                return Ok(current);
            }
            let scale_up = (max_total - pods).min(replicas - current);
            Ok(current + scale_up)
        }
        Some(DeploymentStrategyType::Recreate) => Ok(replicas),
        None => Err(format!(
            "deployment type {:?} isn't supported",
            kind.as_str().unwrap_or_default()
        )),
    }
}

/// The new ReplicaSet runs everything the deployment wants, all available, and was sized for
/// exactly that (upstream's IsSaturated).
pub fn is_saturated(d: &Value, rs: Option<&Value>) -> bool {
    let Some(rs) = rs else { return false };
    let replicas = spec_replicas(d);
    let desired = annotation(rs, DESIRED_REPLICAS).and_then(|v| v.parse::<i32>().ok());
    spec_replicas(rs) == replicas
        && desired == Some(replicas)
        && status_count(rs, "availableReplicas") == replicas
}

pub fn replicas_annotations_need_update(rs: &Value, desired: i32, max: i32) -> bool {
    annotation(rs, DESIRED_REPLICAS) != Some(desired.to_string().as_str())
        || annotation(rs, MAX_REPLICAS) != Some(max.to_string().as_str())
}

/// Records what the deployment wanted when it sized `rs`; true if anything changed.
pub fn set_replicas_annotations(rs: &mut Value, desired: i32, max: i32) -> bool {
    if !replicas_annotations_need_update(rs, desired, max) {
        return false;
    }
    set_annotation(rs, DESIRED_REPLICAS, &desired.to_string());
    set_annotation(rs, MAX_REPLICAS, &max.to_string());
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(replicas: i32, surge: Value, unavailable: Value) -> Value {
        json!({"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}}})
    }

    #[test]
    fn percentages_round_surge_up_and_unavailable_down() {
        assert_eq!(
            resolve_fenceposts(&json!("25%"), &json!("25%"), 10),
            Ok((3, 2))
        );
        assert_eq!(
            resolve_fenceposts(&json!("25%"), &json!("25%"), 1),
            Ok((1, 0))
        );
        assert_eq!(resolve_fenceposts(&json!(2), &json!("50%"), 5), Ok((2, 2)));
        assert_eq!(resolve_fenceposts(&json!("0%"), &json!(0), 10), Ok((0, 1)));
        assert_eq!(resolve_fenceposts(&json!(0), &json!("10%"), 5), Ok((0, 1)));
        assert!(resolve_fenceposts(&json!("x%"), &json!(1), 5).is_err());
        assert!(resolve_fenceposts(&json!("5"), &json!(1), 5).is_err());
    }

    #[test]
    fn max_unavailable_is_capped_by_replicas_and_zero_for_recreate() {
        assert_eq!(max_unavailable(&deployment(3, json!(0), json!(5))), 3);
        assert_eq!(max_unavailable(&deployment(0, json!(1), json!(1))), 0);
        assert_eq!(max_surge(&deployment(10, json!("30%"), json!(0))), 3);
        let recreate = json!({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}});
        assert_eq!(max_surge(&recreate), 0);
        assert_eq!(max_unavailable(&recreate), 0);
    }

    #[test]
    fn new_replica_set_grows_within_the_surge() {
        let d = deployment(10, json!(3), json!(2));
        let old = json!({"spec": {"replicas": 10}});
        let new = json!({"spec": {"replicas": 0}});
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], &new), Ok(3));
        let old = json!({"spec": {"replicas": 8}});
        let new = json!({"spec": {"replicas": 3}});
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], &new), Ok(5));
        // Never past the desired count, whatever the room.
        let old = json!({"spec": {"replicas": 0}});
        let new = json!({"spec": {"replicas": 9}});
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], &new), Ok(10));
        // No room: unchanged.
        let old = json!({"spec": {"replicas": 13}});
        let new = json!({"spec": {"replicas": 0}});
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], &new), Ok(0));
        let recreate = json!({"spec": {"replicas": 4, "strategy": {"type": "Recreate"}}});
        assert_eq!(new_rs_new_replicas(&recreate, &[&new], &new), Ok(4));
    }

    #[test]
    fn saturation_needs_size_annotation_and_availability() {
        let d = deployment(3, json!(1), json!(0));
        let mut rs = json!({"spec": {"replicas": 3}, "status": {"availableReplicas": 3}});
        assert!(!is_saturated(&d, Some(&rs)));
        assert!(set_replicas_annotations(&mut rs, 3, 4));
        assert!(!set_replicas_annotations(&mut rs, 3, 4));
        assert!(is_saturated(&d, Some(&rs)));
        rs["status"]["availableReplicas"] = json!(2);
        assert!(!is_saturated(&d, Some(&rs)));
        assert!(!is_saturated(&d, None));
    }
}
