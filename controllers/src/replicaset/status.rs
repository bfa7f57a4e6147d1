//! A ReplicaSet's status from its pods (upstream's calculateStatus and
//! updateReplicaSetStatus): counts of pods, fully labeled, ready and available ones, the
//! generation observed, and the ReplicaFailure condition while creating or deleting pods fails.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use registry::object;
use serde_json::{json, Map, Value};

use client::controller_utils::PodView;

pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// What the pods say, before it is written into a status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub replicas: i64,
    pub fully_labeled: i64,
    pub ready: i64,
    pub available: i64,
}

/// How managing the pods went, for the ReplicaFailure condition.
pub enum Outcome<'a> {
    Healthy,
    /// Managing failed; `reason` is FailedCreate or FailedDelete.
    Failed {
        reason: &'a str,
        message: String,
    },
    /// Nothing was attempted (expectations pending): the condition stays as it is.
    Unchanged,
}

pub fn min_ready_seconds(set: &Value) -> i64 {
    set["spec"]["minReadySeconds"].as_i64().unwrap_or(0)
}

pub fn counts(set: &Value, pods: &[Arc<PodView>], now: DateTime<Utc>) -> Counts {
    let template_labels = set["spec"]["template"]["metadata"]["labels"].as_object();
    let min_ready = min_ready_seconds(set);
    let mut counts = Counts {
        replicas: pods.len() as i64,
        ..Counts::default()
    };
    for pod in pods {
        let labels = pod.labels();
        let fully_labeled = template_labels.is_none_or(|wanted| {
            wanted
                .iter()
                .all(|(k, v)| v.as_str().is_some_and(|v| labels.get(k) == Some(v)))
        });
        counts.fully_labeled += i64::from(fully_labeled);
        if pod.is_ready() {
            counts.ready += 1;
            counts.available += i64::from(pod.is_available(min_ready, now));
        }
    }
    counts
}

/// When the next ready pod becomes available (minReadySeconds), so the sync can look again
/// then without waiting for a pod event that will not come.
pub fn next_available_in(
    set: &Value,
    pods: &[Arc<PodView>],
    now: DateTime<Utc>,
) -> Option<Duration> {
    let min_ready = min_ready_seconds(set);
    if min_ready <= 0 {
        return None;
    }
    pods.iter()
        .filter_map(|pod| pod.ready_since().flatten())
        .map(|since| since + chrono::Duration::seconds(min_ready) - now)
        .filter(|left| *left > chrono::Duration::zero())
        .min()
        .and_then(|left| left.to_std().ok())
        // A moment past the boundary, so the pod is available when looked at.
        .map(|left| left + Duration::from_millis(100))
}

/// The status `set` should have, built on what it has (unknown fields are kept).
pub fn next_status(set: &Value, counts: Counts, outcome: Outcome<'_>, now: DateTime<Utc>) -> Value {
    let mut status = set["status"].as_object().cloned().unwrap_or_default();
    status.insert("replicas".into(), json!(counts.replicas));
    // Zero counts are left out, as upstream's omitempty fields serialise.
    for (field, value) in [
        ("fullyLabeledReplicas", counts.fully_labeled),
        ("readyReplicas", counts.ready),
        ("availableReplicas", counts.available),
    ] {
        set_count(&mut status, field, value);
    }
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has_failure = conditions.iter().any(|c| c["type"] == REPLICA_FAILURE);
    match outcome {
        Outcome::Failed { reason, message } if !has_failure => conditions.push(json!({
            "type": REPLICA_FAILURE,
            "status": "True",
            "lastTransitionTime": object::timestamp(now),
            "reason": reason,
            "message": message,
        })),
        Outcome::Healthy => conditions.retain(|c| c["type"] != REPLICA_FAILURE),
        _ => {}
    }
    if conditions.is_empty() {
        status.remove("conditions");
    } else {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    status.insert("observedGeneration".into(), json!(object::generation(set)));
    Value::Object(status)
}

fn set_count(status: &mut Map<String, Value>, field: &str, value: i64) {
    if value == 0 {
        status.remove(field);
    } else {
        status.insert(field.into(), json!(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(labels: Value, ready_since: Option<&str>) -> Arc<PodView> {
        let mut pod = json!({"metadata": {"labels": labels}, "status": {"phase": "Running"}});
        if let Some(since) = ready_since {
            pod["status"]["conditions"] =
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": since}]);
        }
        Arc::new(PodView::of(&pod))
    }

    #[test]
    fn counts_and_the_wait_for_availability() {
        let now = object::parse_time("2024-01-01T00:01:00Z").expect("time");
        let set = json!({
            "metadata": {"generation": 3},
            "spec": {"minReadySeconds": 30,
                     "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}},
        });
        let pods = vec![
            pod(
                json!({"app": "web", "tier": "front"}),
                Some("2024-01-01T00:00:00Z"),
            ),
            pod(json!({"app": "web"}), Some("2024-01-01T00:00:50Z")),
            pod(json!({"app": "web", "tier": "front"}), None),
        ];
        let c = counts(&set, &pods, now);
        assert_eq!(
            c,
            Counts {
                replicas: 3,
                fully_labeled: 2,
                ready: 2,
                available: 1
            }
        );
        let wait = next_available_in(&set, &pods, now).expect("a pod becomes available");
        assert_eq!(wait, Duration::from_millis(20_100));

        let failed = next_status(
            &set,
            c,
            Outcome::Failed {
                reason: "FailedCreate",
                message: "quota".into(),
            },
            now,
        );
        assert_eq!(failed["observedGeneration"], 3);
        assert_eq!(failed["conditions"][0]["reason"], "FailedCreate");
        let healed = next_status(&json!({"status": failed}), c, Outcome::Healthy, now);
        assert!(healed.get("conditions").is_none());
        let zero = next_status(&set, Counts::default(), Outcome::Unchanged, now);
        assert_eq!(zero, json!({"replicas": 0, "observedGeneration": 3}));
    }
}
