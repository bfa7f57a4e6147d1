//! Status and progress (upstream's progress.go and calculateStatus): the counts `kubectl
//! rollout status` reads, Available by maxUnavailable, Progressing with its deadline, the
//! ReplicaSets' ReplicaFailure surfaced, and when to look again to notice a deadline passing.

use std::time::Duration;

use chrono::Utc;
use registry::object;
use registry::types::ConditionStatus;
use serde_json::{json, Map, Value};

use super::controller::DeploymentController;
use super::sync::SyncResult;
use super::util::conditions::{
    deployment_complete, deployment_progressing, deployment_timed_out, get_condition,
    new_condition, progress_deadline, remove_condition, set_condition, AVAILABLE,
    MIN_REPLICAS_AVAILABLE, MIN_REPLICAS_UNAVAILABLE, NEW_RS_AVAILABLE, PROGRESSING,
    REPLICA_FAILURE, RS_UPDATED, TIMED_OUT,
};
use super::util::replicas::max_unavailable;
use super::util::{spec_replicas, total_replicas, total_status};
use client::controller_utils::SyncError;

/// The deployment's status from its ReplicaSets; conditions carried over, Available set.
pub fn calculate_status(d: &Value, all: &[Value], new_rs: Option<&Value>) -> Value {
    let available = total_status(all, "availableReplicas");
    let unavailable = (total_replicas(all) - available).max(0);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(object::generation(d)));
    // Zero counts are left out, as upstream's omitempty does.
    let counts = [
        ("replicas", total_status(all, "replicas")),
        ("updatedReplicas", total_status(new_rs, "replicas")),
        ("readyReplicas", total_status(all, "readyReplicas")),
        ("availableReplicas", available),
        ("unavailableReplicas", unavailable),
    ];
    for (field, count) in counts {
        if count != 0 {
            status.insert(field.into(), json!(count));
        }
    }
    if let Some(count) = d["status"].get("collisionCount").filter(|c| !c.is_null()) {
        status.insert("collisionCount".into(), count.clone());
    }
    if let Some(conditions) = d["status"].get("conditions").filter(|c| c.is_array()) {
        status.insert("conditions".into(), conditions.clone());
    }
    let mut status = Value::Object(status);
    let condition = if available >= spec_replicas(d) - max_unavailable(d) {
        new_condition(
            AVAILABLE,
            "True",
            MIN_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
        )
    } else {
        new_condition(
            AVAILABLE,
            "False",
            MIN_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
        )
    };
    set_condition(&mut status, condition);
    status
}

/// Where a rollout stands: Progressing moves on with any progress, turns
/// NewReplicaSetAvailable when complete, ProgressDeadlineExceeded when nothing moved for
/// progressDeadlineSeconds.
fn rollout_status(d: &Value, all: &[Value], new_rs: Option<&Value>) -> Value {
    let mut status = calculate_status(d, all, new_rs);
    let name = object::name(d);
    let subject = |what: &str| match new_rs {
        Some(rs) => format!("ReplicaSet {:?} {what}", object::name(rs)),
        None => format!("Deployment {name:?} {what}"),
    };
    if progress_deadline(d).is_none() {
        remove_condition(&mut status, PROGRESSING);
    }
    let current = get_condition(&d["status"], PROGRESSING).cloned();
    let completed = status["replicas"] == status["updatedReplicas"]
        && current
            .as_ref()
            .is_some_and(|c| c["reason"] == NEW_RS_AVAILABLE);
    if progress_deadline(d).is_some() && !completed {
        if deployment_complete(d, &status) {
            let message = subject("has successfully progressed.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE, &message),
            );
        } else if deployment_progressing(d, &status) {
            // Progress refreshes lastUpdateTime even with the same reason, which
            // set_condition alone would not do.
            let message = subject("is progressing.");
            let mut condition = new_condition(PROGRESSING, "True", RS_UPDATED, &message);
            if let Some(current) = &current {
                if ConditionStatus::from_value(&current["status"]) == Some(ConditionStatus::True) {
                    condition["lastTransitionTime"] = current["lastTransitionTime"].clone();
                }
                remove_condition(&mut status, PROGRESSING);
            }
            set_condition(&mut status, condition);
        } else if deployment_timed_out(d, &status, Utc::now()) {
            let message = subject("has timed out progressing.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, "False", TIMED_OUT, &message),
            );
        }
    }
    match replica_failure(all, new_rs) {
        Some(failure) => set_condition(&mut status, failure),
        None => remove_condition(&mut status, REPLICA_FAILURE),
    }
    status
}

/// A ReplicaSet's ReplicaFailure condition as the deployment's, the new one's first.
fn replica_failure(all: &[Value], new_rs: Option<&Value>) -> Option<Value> {
    new_rs.into_iter().chain(all).find_map(|rs| {
        let c = get_condition(&rs["status"], REPLICA_FAILURE)?;
        Some(json!({
            "type": REPLICA_FAILURE,
            "status": c["status"],
            "reason": c["reason"],
            "message": c["message"],
            "lastUpdateTime": c["lastTransitionTime"],
            "lastTransitionTime": c["lastTransitionTime"],
        }))
    })
}

/// When to look again so the deadline is noticed though nothing else happens: just after it
/// would pass, counted from the Progressing condition's last update.
fn requeue_stuck(d: &Value, new_status: &Value) -> Option<Duration> {
    let deadline = progress_deadline(d)?;
    let current = get_condition(&d["status"], PROGRESSING)?;
    if deployment_complete(d, new_status) || current["reason"] == TIMED_OUT {
        return None;
    }
    let updated = current["lastUpdateTime"]
        .as_str()
        .and_then(object::parse_time)?;
    let remaining = (updated + chrono::Duration::seconds(deadline) - Utc::now())
        .to_std()
        .unwrap_or_default();
    Some(remaining + Duration::from_secs(1))
}

impl DeploymentController {
    /// Writes the status of a scaling-only sync (no progress estimate).
    pub(super) async fn sync_deployment_status(
        &self,
        d: &mut Value,
        all: &[Value],
        new_rs: Option<&Value>,
    ) -> Result<(), SyncError> {
        let status = calculate_status(d, all, new_rs);
        if d["status"] == status {
            return Ok(());
        }
        self.update_status(d, status).await
    }

    /// Writes the status of a rollout step, or says when to look again for the deadline.
    pub(super) async fn sync_rollout_status(
        &self,
        d: &mut Value,
        all: &[Value],
        new_rs: Option<&Value>,
    ) -> SyncResult {
        let status = rollout_status(d, all, new_rs);
        if d["status"] == status {
            return Ok(requeue_stuck(d, &status));
        }
        self.update_status(d, status).await?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(name: &str, replicas: i32, available: i32) -> Value {
        json!({"metadata": {"name": name}, "spec": {"replicas": replicas},
            "status": {"replicas": replicas, "readyReplicas": available, "availableReplicas": available}})
    }

    fn deployment(replicas: i32) -> Value {
        json!({"metadata": {"name": "web", "generation": 2}, "spec": {"replicas": replicas,
            "progressDeadlineSeconds": 600, "strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}, "status": {}})
    }

    #[test]
    fn status_counts_are_what_rollout_status_reads() {
        let d = deployment(3);
        let new = rs("web-new", 2, 1);
        let old = rs("web-old", 2, 2);
        let status = calculate_status(&d, &[old, new.clone()], Some(&new));
        assert_eq!(status["observedGeneration"], 2);
        assert_eq!(status["replicas"], 4);
        assert_eq!(status["updatedReplicas"], 2);
        assert_eq!(status["readyReplicas"], 3);
        assert_eq!(status["availableReplicas"], 3);
        assert_eq!(status["unavailableReplicas"], 1);
        let available = get_condition(&status, AVAILABLE)
            .cloned()
            .unwrap_or_default();
        assert_eq!(available["reason"], MIN_REPLICAS_AVAILABLE);
    }

    #[test]
    fn progressing_turns_available_when_complete() {
        let mut d = deployment(2);
        let new = rs("web-5d9c7b", 2, 2);
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new));
        let c = get_condition(&status, PROGRESSING)
            .cloned()
            .unwrap_or_default();
        assert_eq!(c["reason"], NEW_RS_AVAILABLE);
        assert_eq!(
            c["message"],
            "ReplicaSet \"web-5d9c7b\" has successfully progressed."
        );
        d["status"] = status;
        assert_eq!(requeue_stuck(&d, &d["status"]), None);
    }

    #[test]
    fn no_progress_past_the_deadline_times_out() {
        let mut d = deployment(2);
        let mut c = new_condition(PROGRESSING, "True", RS_UPDATED, "m");
        c["lastUpdateTime"] = json!("2020-01-01T00:00:00Z");
        d["status"] = json!({"observedGeneration": 2, "conditions": [c]});
        let new = rs("web-5d9c7b", 0, 0);
        let status = rollout_status(&d, std::slice::from_ref(&new), Some(&new));
        let c = get_condition(&status, PROGRESSING)
            .cloned()
            .unwrap_or_default();
        assert_eq!(c["reason"], TIMED_OUT);
        assert_eq!(c["status"], "False");
    }
}
