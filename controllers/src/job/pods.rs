//! What the Job controller reads off its pods.

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::{ConditionStatus, PodPhase};
use serde_json::Value;

use super::spec::JobSpec;
use super::JOB_TRACKING_FINALIZER;

pub fn has_tracking_finalizer(pod: &Value) -> bool {
    pod["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING_FINALIZER))
}

/// Whether the pod counts as failed (upstream's isPodFailed): Failed, or, unless only Failed
/// pods are replaced, deleted before it succeeded (an orphan may never reach a phase).
pub fn is_failed(pod: &Value, spec: &JobSpec) -> bool {
    if PodPhase::of(pod) == Some(PodPhase::Failed) {
        return true;
    }
    if spec.only_replace_failed {
        return false;
    }
    object::deletion_timestamp(pod).is_some() && PodPhase::of(pod) != Some(PodPhase::Succeeded)
}

/// Being deleted and not yet finished (status.terminating).
pub fn is_terminating(pod: &Value) -> bool {
    object::deletion_timestamp(pod).is_some() && !PodPhase::terminal(pod)
}

/// When the pod finished: the last container's termination, else when it stopped being
/// ready, else its deletion, else its creation (upstream's getFinishedTime); `now` only for
/// a pod without any of them.
pub fn finished_time(pod: &Value, now: DateTime<Utc>) -> DateTime<Utc> {
    let terminated = pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["state"]["terminated"]["finishedAt"].as_str())
        .filter_map(object::parse_time)
        .max();
    let unready = || {
        pod["status"]["conditions"].as_array()?.iter().find(|c| {
            c["type"] == "Ready"
                && ConditionStatus::from_value(&c["status"]) == Some(ConditionStatus::False)
        })?["lastTransitionTime"]
            .as_str()
            .and_then(object::parse_time)
    };
    let created = || {
        pod["metadata"]["creationTimestamp"]
            .as_str()
            .and_then(object::parse_time)
    };
    terminated
        .or_else(unready)
        .or_else(|| object::deletion_timestamp(pod).and_then(object::parse_time))
        .or_else(created)
        .unwrap_or(now)
}

/// Restarts of the pod's containers, for `restartPolicy: OnFailure` Jobs.
pub fn restarts(pod: &Value) -> i64 {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .flat_map(|f| pod["status"][f].as_array().into_iter().flatten())
        .filter_map(|c| c["restartCount"].as_i64())
        .sum()
}
