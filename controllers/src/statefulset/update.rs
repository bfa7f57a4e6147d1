//! One pass over a set's pods (upstream's StatefulSetControl.updateStatefulSet): create the
//! missing ordinals, recreate failed pods, restore identities and claims, delete the ordinals
//! past the replicas from the highest down, then roll pods at or above the partition to the
//! update revision from the highest down. With OrderedReady each step waits for the pods
//! before it to be Running and Ready; with Parallel nothing waits for anything.

use std::sync::Arc;

use chrono::Utc;
use registry::object;
use registry::types::UpdateStrategyType;
use serde_json::Value;
use tracing::debug;

use super::controller::StatefulSetController;
use super::identity::{
    identity_matches, in_range, new_pod, ordinal, pod_revision, replicas, start_ordinal,
    storage_matches, update_identity,
};
use super::revisions::{revision_template, Revisions};
use super::status::{
    is_failed, is_healthy, is_running_and_available, is_succeeded, is_terminating,
    min_ready_seconds, SetStatus,
};
use client::controller_utils::SyncError;
use client::events::EventType;

/// The revision and template a new pod of `ordinal` gets (upstream's
/// newVersionedStatefulSetPod): below the partition (or, without one, among the current
/// replicas) the current revision, otherwise the update revision.
fn versioned_pod(set: &Value, revs: &Revisions, ordinal: i64) -> Value {
    let strategy = &set["spec"]["updateStrategy"];
    let start = start_ordinal(set);
    let current_replicas = set["status"]["currentReplicas"].as_i64().unwrap_or(0);
    let partition = strategy["rollingUpdate"]["partition"].as_i64();
    let rolling = UpdateStrategyType::from_value(&strategy["type"])
        == Some(UpdateStrategyType::RollingUpdate);
    let current = match partition {
        Some(p) => ordinal < start + p,
        None => rolling && ordinal < start + current_replicas,
    };
    let revision = if current { &revs.current } else { &revs.update };
    new_pod(
        set,
        &revision_template(revision),
        ordinal,
        object::name(revision),
    )
}

/// A pod leaving: it no longer counts toward its revision.
fn uncount(status: &mut SetStatus, pod: &Value) {
    let revision = pod_revision(pod);
    if revision == status.current_revision {
        status.current_replicas -= 1;
    }
    if revision == status.update_revision {
        status.updated_replicas -= 1;
    }
}

fn count(status: &mut SetStatus, pod: &Value) {
    status.replicas += 1;
    let revision = pod_revision(pod);
    if revision == status.current_revision {
        status.current_replicas += 1;
    }
    if revision == status.update_revision {
        status.updated_replicas += 1;
    }
}

impl StatefulSetController {
    /// Moves the set one step (OrderedReady) or as far as it can go (Parallel) towards its
    /// spec; returns the status the pods give after it.
    pub(super) async fn update_set(
        &self,
        set: &Value,
        revs: &Revisions,
        pods: &[Arc<Value>],
    ) -> Result<SetStatus, SyncError> {
        let now = Utc::now();
        let min_ready = min_ready_seconds(set);
        let mut status = SetStatus::count(
            pods.iter().map(|p| &**p),
            min_ready,
            now,
            object::name(&revs.current),
            object::name(&revs.update),
        );
        status.observed_generation = object::generation(set);
        status.collision_count = revs.collision_count;
        let start = start_ordinal(set);
        let wanted = replicas(set) as usize;
        let mut replicas_: Vec<Option<Value>> = vec![None; wanted];
        let mut condemned: Vec<Value> = Vec::new();
        for pod in pods {
            let Some(o) = ordinal(pod) else { continue };
            if in_range(set, o) {
                replicas_[(o - start) as usize] = Some((**pod).clone());
            } else {
                condemned.push((**pod).clone());
            }
        }
        condemned.sort_by_key(|p| std::cmp::Reverse(ordinal(p)));
        let monotonic = set["spec"]["podManagementPolicy"] != "Parallel";
        let first_unhealthy = replicas_
            .iter()
            .flatten()
            .chain(condemned.iter().rev())
            .find(|p| !is_healthy(p))
            .map(|p| object::name(p).to_string());

        for (i, slot) in replicas_.iter_mut().enumerate() {
            let ord = start + i as i64;
            let pod = match slot {
                None => {
                    let pod = versioned_pod(set, revs, ord);
                    self.pod_control.create_pod(set, pod.clone()).await?;
                    count(&mut status, &pod);
                    *slot = Some(pod);
                    if monotonic {
                        return Ok(status);
                    }
                    continue;
                }
                Some(pod) => pod,
            };
            if is_failed(pod) || is_succeeded(pod) {
                if !is_terminating(pod) {
                    let (reason, what) = if is_failed(pod) {
                        ("RecreatingFailedPod", "failed")
                    } else {
                        ("RecreatingTerminatedPod", "terminated")
                    };
                    let message = format!(
                        "StatefulSet {}/{} is recreating {what} Pod {}",
                        object::namespace(set),
                        object::name(set),
                        object::name(pod)
                    );
                    self.pod_control
                        .recorder
                        .event(set, EventType::Warning, reason, message);
                    self.pod_control.delete_pod(set, pod).await?;
                    uncount(&mut status, pod);
                    status.replicas -= 1;
                }
                // The new pod comes on a later sync, once this one is gone.
                if monotonic {
                    return Ok(status);
                }
                continue;
            }
            if is_terminating(pod) {
                if monotonic {
                    return Ok(status);
                }
                continue;
            }
            if monotonic && !is_running_and_available(pod, min_ready, now) {
                debug!(
                    pod = object::name(pod),
                    "waiting for the pod to be running and available"
                );
                return Ok(status);
            }
            if !identity_matches(set, pod) {
                let mut fixed = pod.clone();
                update_identity(set, &mut fixed, ord);
                self.pod_control.update_pod(set, fixed).await?;
            }
            if !storage_matches(set, pod) {
                self.pod_control.create_claims(set, pod).await?;
            }
            if !self.pod_control.claims_match_retention(set, pod) {
                self.pod_control
                    .update_claims_for_retention(set, pod)
                    .await?;
            }
        }

        // Claims of pods about to go take the pod as owner first (whenScaled: Delete).
        for pod in &condemned {
            if !self.pod_control.claims_match_retention(set, pod) {
                self.pod_control
                    .update_claims_for_retention(set, pod)
                    .await?;
            }
        }
        for pod in &condemned {
            if is_terminating(pod) {
                if monotonic {
                    return Ok(status);
                }
                continue;
            }
            // Only the first unhealthy pod may go while unhealthy; the others wait for it.
            let first = first_unhealthy.as_deref() == Some(object::name(pod));
            if monotonic && !first && !is_running_and_available(pod, min_ready, now) {
                return Ok(status);
            }
            self.pod_control.delete_pod(set, pod).await?;
            uncount(&mut status, pod);
            if monotonic {
                return Ok(status);
            }
        }

        if UpdateStrategyType::of(set) == UpdateStrategyType::OnDelete {
            return Ok(status);
        }
        let partition = set["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
            .as_i64()
            .unwrap_or(0)
            .clamp(0, wanted as i64) as usize;
        for slot in replicas_[partition..].iter().rev() {
            let Some(pod) = slot else { continue };
            if pod_revision(pod) != status.update_revision && !is_terminating(pod) {
                self.pod_control.delete_pod(set, pod).await?;
                uncount(&mut status, pod);
                return Ok(status);
            }
            if !is_healthy(pod) {
                return Ok(status);
            }
        }
        Ok(status)
    }
}
