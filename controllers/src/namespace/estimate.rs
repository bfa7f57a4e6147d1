//! How long content being deleted may still take, and so when to look again (upstream's
//! estimateGracefulTermination). Only pods wait out a grace period: their kubelet stops the
//! containers first.

use std::time::Duration;

use chrono::{DateTime, Utc};
use registry::types::PodPhase;
use serde_json::Value;

/// The longest termination grace period, in seconds, among pods that may still be running
/// (finished pods have nothing left to stop).
pub fn pods_grace_seconds(pods: &[Value]) -> u64 {
    pods.iter()
        .filter(|p| !PodPhase::terminal(p))
        .filter_map(|p| p["spec"]["terminationGracePeriodSeconds"].as_i64())
        .filter_map(|grace| u64::try_from(grace).ok())
        .max()
        .unwrap_or(0)
}

/// `estimate` while it has not yet passed since the namespace was deleted, else nothing: once
/// every grace period could have run out, waiting longer would not help.
pub fn still_running(estimate: u64, deleted_at: DateTime<Utc>, now: DateTime<Utc>) -> u64 {
    let allowed = i64::try_from(estimate)
        .ok()
        .and_then(chrono::Duration::try_seconds)
        .unwrap_or(chrono::Duration::MAX);
    if now.signed_duration_since(deleted_at) >= allowed {
        0
    } else {
        estimate
    }
}

/// When to look at a namespace again whose content needs about `estimate` seconds to go:
/// halfway, so it rarely waits much longer than needed.
pub fn requeue_after(estimate: u64) -> Duration {
    Duration::from_secs(estimate / 2 + 1)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(grace: Option<i64>, phase: &str) -> Value {
        json!({"spec": {"terminationGracePeriodSeconds": grace}, "status": {"phase": phase}})
    }

    #[test]
    fn longest_grace_of_pods_still_running() {
        let pods = [
            pod(Some(30), "Running"),
            pod(Some(90), "Pending"),
            pod(Some(600), "Succeeded"),
            pod(Some(300), "Failed"),
            pod(None, "Running"),
            pod(Some(-5), "Running"),
        ];
        assert_eq!(pods_grace_seconds(&pods), 90);
        assert_eq!(pods_grace_seconds(&[]), 0);
        assert_eq!(pods_grace_seconds(&[json!({})]), 0);
    }

    #[test]
    fn an_estimate_lapses_once_its_time_since_deletion_passed() {
        let deleted = DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let at = |secs| deleted + chrono::Duration::seconds(secs);
        assert_eq!(still_running(30, deleted, at(0)), 30);
        assert_eq!(still_running(30, deleted, at(29)), 30);
        assert_eq!(still_running(30, deleted, at(30)), 0);
        assert_eq!(still_running(0, deleted, at(0)), 0);
        assert_eq!(still_running(u64::MAX, deleted, at(1)), u64::MAX);
    }

    #[test]
    fn requeue_halfway_and_never_at_once() {
        assert_eq!(requeue_after(30), Duration::from_secs(16));
        assert_eq!(requeue_after(15), Duration::from_secs(8));
        assert_eq!(requeue_after(1), Duration::from_secs(1));
        assert_eq!(requeue_after(0), Duration::from_secs(1));
    }
}
