//! Counting finished pods exactly once (upstream's trackJobStatusAndRemoveFinalizers): a
//! finished pod's uid goes into `status.uncountedTerminatedPods` first, then its tracking
//! finalizer is removed, then the uid moves into the succeeded / failed counters. A crash
//! anywhere in between leaves enough in the status to finish the count without recounting.
//! The Job's Complete or Failed condition is only added once nothing is left uncounted.

use std::collections::HashSet;
use std::sync::Arc;

use registry::options::WriteOptions;
use registry::patch::PatchType;
use registry::types::PodPhase;
use registry::{object, RegistryError, Subresource};
use serde_json::{json, Value};
use tracing::debug;

use super::backoff::BackoffRecord;
use super::controller::JobController;
use super::pods::{self, has_tracking_finalizer};
use super::status::{Condition, JobStatus, COMPLETE, FAILED, FAILURE_TARGET, SUCCESS_CRITERIA_MET};
use super::sync::SyncCtx;
use super::JOB_TRACKING_FINALIZER;
use super::{failure_policy, indexed};
use client::controller_utils::SyncError;
use client::events::EventType;

/// Uids held in uncountedTerminatedPods at once (upstream's MaxUncountedPods).
const MAX_UNCOUNTED_PODS: usize = 500;

pub(super) struct Tracking<'a> {
    pub ctx: &'a SyncCtx,
    /// The finishing condition decided in this sync: SuccessCriteriaMet or FailureTarget.
    pub finished: Option<Condition>,
    pub expected_rm: HashSet<String>,
    pub backoff: BackoffRecord,
}

impl JobController {
    pub(super) async fn track_status_and_remove_finalizers(
        &self,
        t: Tracking<'_>,
        mut status: JobStatus,
    ) -> Result<(), SyncError> {
        let ctx = t.ctx;
        let mut job = (*ctx.job).clone();
        let mut stored = JobStatus::of(&job);
        let mut with_finalizer: HashSet<String> = ctx
            .pods
            .iter()
            .filter(|p| has_tracking_finalizer(p))
            .map(|p| object::uid(p).to_string())
            .collect();
        count_uncounted(&mut status, &with_finalizer);

        let job_deleting = object::deletion_timestamp(&job).is_some();
        let failing = t
            .finished
            .as_ref()
            .is_some_and(|c| c.type_ == FAILURE_TARGET);
        let mut to_release = Vec::new();
        let mut reached_max = false;
        let mut new_succeeded_indexes = Vec::new();
        for pod in &ctx.pods {
            let uid = object::uid(pod).to_string();
            if !has_tracking_finalizer(pod) || t.expected_rm.contains(&uid) {
                continue;
            }
            let failed = pods::is_failed(pod, &ctx.spec);
            let succeeded = PodPhase::of(pod) == Some(PodPhase::Succeeded);
            if !(job_deleting || t.finished.is_some() || succeeded || failed) {
                continue;
            }
            let index = indexed::valid_index(pod, &ctx.spec);
            // A failed pod awaiting its replacement keeps the index's failure count.
            let awaited = index
                .and_then(|ix| ctx.awaiting_replacement.get(&ix))
                .is_some_and(|p| object::uid(p) == uid);
            if awaited && !(job_deleting || t.finished.is_some()) {
                continue;
            }
            to_release.push(pod.clone());
            let uncounted = status.uncounted();
            if succeeded && !uncounted.failed.contains(&uid) {
                if ctx.spec.indexed {
                    // The index alone keeps a success from being counted twice.
                    if let Some(ix) = index.filter(|ix| !ctx.prev_succeeded_indexes.has(*ix)) {
                        new_succeeded_indexes.push(ix);
                    }
                } else if !uncounted.succeeded.contains(&uid) {
                    uncounted.succeeded.push(uid);
                }
            } else if (failed || failing)
                && !uncounted.failed.contains(&uid)
                && (!ctx.spec.indexed || index.is_some())
                // Once the Job fails, whatever did not succeed counts as failed, unless the
                // pod failure policy ignores it.
                && failure_policy::matches(&ctx.spec, pod).count
            {
                uncounted.failed.push(uid);
            }
            let held = uncounted.succeeded.len() + uncounted.failed.len();
            if held + new_succeeded_indexes.len() >= MAX_UNCOUNTED_PODS {
                reached_max = true;
                break;
            }
        }
        if ctx.spec.indexed {
            let succeeded = ctx.succeeded_indexes.with(new_succeeded_indexes);
            status.succeeded = succeeded.total();
            status.completed_indexes = succeeded.to_string();
            status.failed_indexes = ctx.failed_indexes.as_ref().map(|f| f.to_string());
        }

        // The interim condition is recorded before any finalizer goes.
        let mut final_condition = None;
        if let Some(finished) = &t.finished {
            if status.condition(&finished.type_).is_none() {
                status.conditions.push(finished.clone());
            }
            let final_type = if finished.type_ == SUCCESS_CRITERIA_MET {
                COMPLETE
            } else {
                FAILED
            };
            final_condition = Some(Condition::new(
                final_type,
                true,
                &finished.reason,
                &finished.message,
                ctx.now,
            ));
        }
        if status.uncounted_terminated_pods != stored.uncounted_terminated_pods
            || status.conditions != stored.conditions
            || status.completed_indexes != stored.completed_indexes
            || status.failed_indexes != stored.failed_indexes
        {
            self.write_status(&ctx.key, &mut job, &status).await?;
            stored = status.clone();
        }
        self.backoff.set(&ctx.key, t.backoff.clone());

        if !to_release.is_empty() {
            let uids: Vec<String> = to_release
                .iter()
                .map(|p| object::uid(p).to_string())
                .collect();
            self.expect_finalizer_removals(&ctx.key, &uids);
            let results = futures::future::join_all(
                to_release.iter().map(|p| self.remove_tracking_finalizer(p)),
            )
            .await;
            let mut first_error = None;
            for (result, uid) in results.into_iter().zip(uids) {
                match result {
                    Ok(()) => {
                        with_finalizer.remove(&uid);
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            count_uncounted(&mut status, &with_finalizer);
            if let Some(e) = first_error {
                // Partial progress is still recorded.
                if status != stored {
                    self.write_status(&ctx.key, &mut job, &status).await?;
                }
                return Err(e);
            }
        }

        let mut finished_now = None;
        if let Some(condition) = final_condition {
            let uncounted = status.uncounted();
            if !reached_max && uncounted.succeeded.is_empty() && uncounted.failed.is_empty() {
                if condition.type_ == COMPLETE {
                    status.completion_time = Some(object::timestamp(ctx.now));
                }
                status.conditions.push(condition.clone());
                finished_now = Some(condition);
            }
        }
        if status != stored {
            self.write_status(&ctx.key, &mut job, &status).await?;
        }
        if let Some(condition) = finished_now {
            if condition.type_ == COMPLETE {
                self.recorder
                    .event(&job, EventType::Normal, "Completed", "Job completed");
            } else {
                self.recorder.event(
                    &job,
                    EventType::Warning,
                    &condition.reason,
                    condition.message.clone(),
                );
            }
        }
        Ok(())
    }

    /// Writes `status` through the status subresource; `job` becomes what was stored.
    async fn write_status(
        &self,
        key: &str,
        job: &mut Value,
        status: &JobStatus,
    ) -> Result<(), SyncError> {
        let mut next = job.clone();
        next["status"] = status.to_value();
        let (written, _) = self
            .jobs
            .update(
                Some(object::namespace(job)),
                object::name(job),
                next,
                Subresource::Status,
                &WriteOptions::default(),
            )
            .await?;
        self.own_writes.record(key, written.clone());
        *job = written;
        Ok(())
    }

    /// Takes the tracking finalizer off a pod; a pod already gone is fine.
    pub(super) async fn remove_tracking_finalizer(
        &self,
        pod: &Arc<Value>,
    ) -> Result<(), SyncError> {
        let patch = json!({
            "metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]},
        });
        let result = self
            .pods
            .patch(
                Some(object::namespace(pod)),
                object::name(pod),
                PatchType::Strategic,
                patch.to_string().as_bytes(),
                Subresource::Main,
                &WriteOptions::default(),
            )
            .await;
        match result {
            Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => {
                debug!(pod = object::name(pod), error = %e, "could not remove the tracking finalizer");
                Err(e.into())
            }
        }
    }
}

/// Moves uids whose pods no longer hold the finalizer from uncountedTerminatedPods into the
/// counters (upstream's cleanUncountedPodsWithoutFinalizers).
fn count_uncounted(status: &mut JobStatus, with_finalizer: &HashSet<String>) {
    let uncounted = status.uncounted();
    let before = (uncounted.succeeded.len(), uncounted.failed.len());
    uncounted.succeeded.retain(|u| with_finalizer.contains(u));
    uncounted.failed.retain(|u| with_finalizer.contains(u));
    let after = (uncounted.succeeded.len(), uncounted.failed.len());
    status.succeeded += (before.0 - after.0) as i64;
    status.failed += (before.1 - after.1) as i64;
}
