//! What a budget's status should say, from its pods and their controllers' scale (upstream's
//! getExpectedPodCount, countHealthyPods, buildDisruptedPodMap and updatePdbStatus). Pure:
//! the controller feeds it the informers' view and the time.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use registry::eviction::budget::{self, is_pod_ready};
use registry::object;
use registry::types::ConditionStatus;
use serde_json::{json, Value};

/// How long a pod the eviction subresource recorded in status.disruptedPods is kept out of
/// the healthy count while its deletion is awaited (upstream's DeletionTimeout).
pub const DELETION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

fn deletion_timeout() -> Duration {
    Duration::seconds(DELETION_TIMEOUT.as_secs() as i64)
}

/// The budget's figures: how many pods are expected and how many must stay healthy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    pub expected_pods: i64,
    pub desired_healthy: i64,
}

/// intstr.GetScaledValueFromIntOrPercent rounding up: an int as is, "N%" of `total`.
pub fn scaled_value(value: &Value, total: i64) -> Result<i64, String> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| format!("invalid value for IntOrString: {n}")),
        Value::String(s) => {
            let percent = s
                .strip_suffix('%')
                .and_then(|digits| digits.parse::<i64>().ok())
                .ok_or_else(|| format!("invalid value {s:?}: not a percentage"))?;
            Ok((percent * total + 99) / 100)
        }
        _ => Err("invalid value for IntOrString: invalid type".into()),
    }
}

/// Upstream's getExpectedPodCount. `scale` is only asked for when a percentage or
/// maxUnavailable needs the controllers' replicas; a plain integer minAvailable counts pods.
pub fn expected(
    pdb: &Value,
    pod_count: usize,
    scale: impl FnOnce() -> Result<i64, String>,
) -> Result<Expected, String> {
    let spec = &pdb["spec"];
    let max_unavailable = &spec["maxUnavailable"];
    let min_available = &spec["minAvailable"];
    if !max_unavailable.is_null() {
        let expected_pods = scale()?;
        let unavailable = scaled_value(max_unavailable, expected_pods)?;
        return Ok(Expected {
            expected_pods,
            desired_healthy: (expected_pods - unavailable).max(0),
        });
    }
    match min_available {
        Value::Number(_) => Ok(Expected {
            expected_pods: pod_count as i64,
            desired_healthy: scaled_value(min_available, 0)?,
        }),
        Value::String(_) => {
            let expected_pods = scale()?;
            Ok(Expected {
                expected_pods,
                desired_healthy: scaled_value(min_available, expected_pods)?,
            })
        }
        _ => Ok(Expected::default()),
    }
}

/// The disrupted pods still awaited (recorded less than DELETION_TIMEOUT ago, not yet being
/// deleted, still there), the pods given up on, and when the next entry expires.
pub struct Disrupted {
    pub pods: BTreeMap<String, String>,
    pub expired: Vec<String>,
    pub recheck: Option<DateTime<Utc>>,
}

pub fn disrupted_pods(pdb: &Value, pods: &[&Value], now: DateTime<Utc>) -> Disrupted {
    let mut result = Disrupted {
        pods: BTreeMap::new(),
        expired: Vec::new(),
        recheck: None,
    };
    let Some(recorded) = pdb["status"]["disruptedPods"].as_object() else {
        return result;
    };
    for pod in pods {
        if object::deletion_timestamp(pod).is_some() {
            continue;
        }
        let name = object::name(pod);
        let Some(at) = recorded.get(name).and_then(Value::as_str) else {
            continue;
        };
        let Some(when) = object::parse_time(at) else {
            continue;
        };
        let expected_deletion = when + deletion_timeout();
        if expected_deletion < now {
            result.expired.push(name.to_string());
        } else {
            result.recheck = Some(
                result
                    .recheck
                    .map_or(expected_deletion, |r| r.min(expected_deletion)),
            );
            result.pods.insert(name.to_string(), at.to_string());
        }
    }
    result
}

/// Upstream's countHealthyPods: ready, not being deleted, not about to be.
pub fn healthy(pods: &[&Value], disrupted: &BTreeMap<String, String>) -> i64 {
    pods.iter()
        .filter(|p| object::deletion_timestamp(p).is_none())
        .filter(|p| !disrupted.contains_key(object::name(p)))
        .filter(|p| is_pod_ready(p))
        .count() as i64
}

/// The budget with the status these figures give, or None when the stored one says it all
/// already (upstream writes only on a change).
pub fn updated(
    pdb: &Value,
    expected: Expected,
    current_healthy: i64,
    disrupted: &BTreeMap<String, String>,
) -> Option<Value> {
    let mut allowed = current_healthy - expected.desired_healthy;
    if expected.expected_pods <= 0 || allowed <= 0 {
        allowed = 0;
    }
    let generation = object::generation(pdb);
    let count = |field| budget::status_count(pdb, field);
    let stored_disrupted: BTreeMap<String, String> = pdb["status"]["disruptedPods"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    if count("currentHealthy") == current_healthy
        && count("desiredHealthy") == expected.desired_healthy
        && count("expectedPods") == expected.expected_pods
        && count("disruptionsAllowed") == allowed
        && &stored_disrupted == disrupted
        && count("observedGeneration") == generation
        && conditions_up_to_date(pdb)
    {
        return None;
    }
    let mut new = pdb.clone();
    let conditions = pdb["status"]["conditions"].clone();
    new["status"] = json!({
        "currentHealthy": current_healthy,
        "desiredHealthy": expected.desired_healthy,
        "expectedPods": expected.expected_pods,
        "disruptionsAllowed": allowed,
        "observedGeneration": generation,
    });
    if !disrupted.is_empty() {
        new["status"]["disruptedPods"] = json!(disrupted);
    }
    if conditions.is_array() {
        new["status"]["conditions"] = conditions;
    }
    budget::update_disruption_allowed_condition(&mut new);
    Some(new)
}

/// Upstream's ConditionsAreUpToDate.
fn conditions_up_to_date(pdb: &Value) -> bool {
    let Some(condition) = pdb["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed"))
    else {
        return false;
    };
    if budget::status_count(pdb, "observedGeneration") != object::generation(pdb) {
        return false;
    }
    if budget::status_count(pdb, "disruptionsAllowed") > 0 {
        ConditionStatus::from_value(&condition["status"]) == Some(ConditionStatus::True)
            && condition["reason"] == "SufficientPods"
    } else {
        ConditionStatus::from_value(&condition["status"]) == Some(ConditionStatus::False)
            && condition["reason"] == "InsufficientPods"
    }
}

/// Upstream's failSafe: no disruptions while the status cannot be worked out, and why.
pub fn failed(pdb: &Value, why: &str) -> Value {
    let mut new = pdb.clone();
    if !new["status"].is_object() {
        new["status"] = json!({});
    }
    new["status"]["disruptionsAllowed"] = json!(0);
    let observed = budget::status_count(pdb, "observedGeneration");
    budget::set_status_condition(
        &mut new["status"],
        json!({"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed",
               "message": why, "observedGeneration": observed}),
    );
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up_and_integers_count_pods() {
        assert_eq!(scaled_value(&json!("50%"), 3), Ok(2));
        assert_eq!(scaled_value(&json!(2), 10), Ok(2));
        assert!(scaled_value(&json!("half"), 3).is_err());
        let min_int = json!({"spec": {"minAvailable": 2}});
        let figures = expected(&min_int, 3, || Err("scale not needed".into()));
        assert_eq!(
            figures,
            Ok(Expected {
                expected_pods: 3,
                desired_healthy: 2
            })
        );
        let max_pct = json!({"spec": {"maxUnavailable": "25%"}});
        let figures = expected(&max_pct, 3, || Ok(4));
        assert_eq!(
            figures,
            Ok(Expected {
                expected_pods: 4,
                desired_healthy: 3
            })
        );
    }

    #[test]
    fn disrupted_pods_expire_after_the_deletion_timeout() {
        let now = Utc::now();
        let recent = object::timestamp(now - Duration::seconds(10));
        let old = object::timestamp(now - Duration::seconds(300));
        let pdb = json!({"status": {"disruptedPods": {"a": recent, "b": old, "gone": recent}}});
        let a = json!({"metadata": {"name": "a"}});
        let b = json!({"metadata": {"name": "b"}});
        let found = disrupted_pods(&pdb, &[&a, &b], now);
        assert_eq!(found.pods.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(found.expired, ["b"]);
        assert!(found.recheck.is_some_and(|r| r > now));
    }
}
