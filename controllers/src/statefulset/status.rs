//! StatefulSet status (upstream's computeReplicaStatus, completeRollingUpdate and
//! inconsistentStatus): counts from the pods, the revisions, and when a finished rolling
//! update makes the update revision current.

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::{PodPhase, UpdateStrategyType};
use serde_json::{json, Value};

use super::identity::pod_revision;
use client::controller_utils::{is_pod_available, is_pod_ready};

pub fn is_created(pod: &Value) -> bool {
    !pod["status"]["phase"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
}

pub fn is_terminating(pod: &Value) -> bool {
    object::deletion_timestamp(pod).is_some()
}

pub fn is_failed(pod: &Value) -> bool {
    PodPhase::of(pod) == Some(PodPhase::Failed)
}

pub fn is_succeeded(pod: &Value) -> bool {
    PodPhase::of(pod) == Some(PodPhase::Succeeded)
}

pub fn is_running_and_ready(pod: &Value) -> bool {
    PodPhase::of(pod) == Some(PodPhase::Running) && is_pod_ready(pod)
}

pub fn is_running_and_available(pod: &Value, min_ready_seconds: i64, now: DateTime<Utc>) -> bool {
    is_running_and_ready(pod) && is_pod_available(pod, min_ready_seconds, now)
}

pub fn is_healthy(pod: &Value) -> bool {
    is_running_and_ready(pod) && !is_terminating(pod)
}

pub fn min_ready_seconds(set: &Value) -> i64 {
    set["spec"]["minReadySeconds"].as_i64().unwrap_or(0).max(0)
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetStatus {
    pub observed_generation: i64,
    pub replicas: i64,
    pub ready_replicas: i64,
    pub available_replicas: i64,
    pub current_replicas: i64,
    pub updated_replicas: i64,
    pub current_revision: String,
    pub update_revision: String,
    pub collision_count: i32,
}

impl SetStatus {
    /// The counts `pods` give (condemned ones included, as upstream counts them).
    pub fn count<'a>(
        pods: impl IntoIterator<Item = &'a Value>,
        min_ready_seconds: i64,
        now: DateTime<Utc>,
        current: &str,
        update: &str,
    ) -> Self {
        let mut status = Self {
            current_revision: current.to_string(),
            update_revision: update.to_string(),
            ..Self::default()
        };
        for pod in pods {
            if is_created(pod) {
                status.replicas += 1;
            }
            if is_running_and_ready(pod) {
                status.ready_replicas += 1;
                if is_running_and_available(pod, min_ready_seconds, now) {
                    status.available_replicas += 1;
                }
            }
            if is_created(pod) && !is_terminating(pod) {
                let revision = pod_revision(pod);
                if revision == current {
                    status.current_replicas += 1;
                }
                if revision == update {
                    status.updated_replicas += 1;
                }
            }
        }
        status
    }

    /// A rolling update whose every pod is updated and ready is done: the update revision
    /// becomes the current one.
    pub fn complete_rolling_update(&mut self, set: &Value) {
        if UpdateStrategyType::from_value(&set["spec"]["updateStrategy"]["type"])
            == Some(UpdateStrategyType::RollingUpdate)
            && self.updated_replicas == self.replicas
            && self.ready_replicas == self.replicas
        {
            self.current_replicas = self.updated_replicas;
            self.current_revision = self.update_revision.clone();
        }
    }

    /// The set's `status` with these counts, keeping the conditions it has.
    pub fn apply(&self, set: &Value) -> Value {
        let mut status = json!({
            "observedGeneration": self.observed_generation,
            "replicas": self.replicas,
            "readyReplicas": self.ready_replicas,
            "availableReplicas": self.available_replicas,
            "currentReplicas": self.current_replicas,
            "updatedReplicas": self.updated_replicas,
            "currentRevision": self.current_revision,
            "updateRevision": self.update_revision,
            "collisionCount": self.collision_count,
        });
        if let Some(conditions) = set["status"].get("conditions").filter(|c| !c.is_null()) {
            status["conditions"] = conditions.clone();
        }
        status
    }

    /// Whether the set's stored status says anything else (upstream's inconsistentStatus).
    pub fn differs_from(&self, set: &Value) -> bool {
        let stored = &set["status"];
        let int = |f: &str| stored[f].as_i64().unwrap_or(0);
        let text = |f: &str| stored[f].as_str().unwrap_or_default().to_string();
        int("observedGeneration") != self.observed_generation
            || int("replicas") != self.replicas
            || int("readyReplicas") != self.ready_replicas
            || int("availableReplicas") != self.available_replicas
            || int("currentReplicas") != self.current_replicas
            || int("updatedReplicas") != self.updated_replicas
            || text("currentRevision") != self.current_revision
            || text("updateRevision") != self.update_revision
            || stored["collisionCount"].as_i64() != Some(i64::from(self.collision_count))
    }
}
