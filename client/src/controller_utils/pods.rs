//! Pod predicates the workload controllers share (upstream's podutil and IsPodActive).

use chrono::{DateTime, Duration, Utc};
use registry::object;
use registry::types::{ConditionStatus, PodPhase};
use serde_json::Value;

/// Not finished and not being deleted: counts toward a controller's replicas.
pub fn is_pod_active(pod: &Value) -> bool {
    !PodPhase::terminal(pod) && object::deletion_timestamp(pod).is_none()
}

/// When the pod's Ready condition turned True, if it is True.
pub fn pod_ready_since(pod: &Value) -> Option<Option<DateTime<Utc>>> {
    let ready = pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")?;
    (ConditionStatus::from_value(&ready["status"]) == Some(ConditionStatus::True)).then(|| {
        ready["lastTransitionTime"]
            .as_str()
            .and_then(object::parse_time)
    })
}

pub fn is_pod_ready(pod: &Value) -> bool {
    pod_ready_since(pod).is_some()
}

/// Ready for at least `min_ready_seconds` at `now` (upstream's IsPodAvailable).
pub fn is_pod_available(pod: &Value, min_ready_seconds: i64, now: DateTime<Utc>) -> bool {
    available(pod_ready_since(pod), min_ready_seconds, now)
}

/// Whether a pod whose Ready condition is `ready_since` (as [`pod_ready_since`] tells) is
/// available at `now`.
pub(super) fn available(
    ready_since: Option<Option<DateTime<Utc>>>,
    min_ready_seconds: i64,
    now: DateTime<Utc>,
) -> bool {
    match ready_since {
        None => false,
        Some(_) if min_ready_seconds <= 0 => true,
        Some(None) => false,
        Some(Some(since)) => since + Duration::seconds(min_ready_seconds) <= now,
    }
}
