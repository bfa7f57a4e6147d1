//! One sync of a Job (upstream's syncJob): count its pods, decide whether it has finished or
//! must fail, otherwise create or delete pods toward the wanted number, then record what
//! changed in its status.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::PodPhase;
use serde_json::Value;
use tracing::{debug, warn};

use super::controller::JobController;
use super::failure_policy;
use super::indexed;
use super::intervals::Intervals;
use super::pods::{self, has_tracking_finalizer};
use super::spec::JobSpec;
use super::status::{Condition, JobStatus, SUCCESS_CRITERIA_MET};
use super::tracking::Tracking;
use client::controller_utils::{is_pod_active, is_pod_ready, SyncError};

/// What one sync works with.
pub(super) struct SyncCtx {
    pub key: String,
    pub job: Arc<Value>,
    pub spec: JobSpec,
    pub pods: Vec<Arc<Value>>,
    pub now: DateTime<Utc>,
    /// Indexed Jobs: the indexes recorded as succeeded before this sync...
    pub prev_succeeded_indexes: Intervals,
    /// ...and with those newly succeeded.
    pub succeeded_indexes: Intervals,
    /// Indexed Jobs with backoffLimitPerIndex: the failed indexes, recorded and new.
    pub failed_indexes: Option<Intervals>,
    /// Failed pods kept (with their finalizer) until their index has a replacement.
    pub awaiting_replacement: HashMap<i64, Arc<Value>>,
}

fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl JobController {
    /// Syncs the Job `key`; Some(d): look again after `d`.
    pub(super) async fn sync_job(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let Some(job) = self.job_informer.indexer().get(key) else {
            debug!(job = key, "job has been deleted");
            self.forget(key);
            return Ok(None);
        };
        let job = self.own_writes.freshest(key, job);
        if super::is_finished(&job) {
            return Ok(None);
        }
        let spec = match JobSpec::read(&job) {
            Ok(spec) => spec,
            Err(e) => {
                warn!(job = key, error = %e, "job cannot be synced");
                return Ok(None);
            }
        };
        let now = self.config.clock.now();
        // Checked before the pods are listed: a pod created after the list is then awaited.
        let satisfied = self.expectations.satisfied(key);
        let pods = self.pods_for_job(&job, &spec).await?;
        let mut ctx = SyncCtx {
            key: key.to_string(),
            job,
            spec,
            pods,
            now,
            prev_succeeded_indexes: Intervals::default(),
            succeeded_indexes: Intervals::default(),
            failed_indexes: None,
            awaiting_replacement: HashMap::new(),
        };
        let mut status = JobStatus::of(&ctx.job);
        status.uncounted();
        let expected_rm = self.expected_finalizer_removals(key);
        let active_pods: Vec<Arc<Value>> = ctx
            .pods
            .iter()
            .filter(|p| is_pod_active(p))
            .cloned()
            .collect();
        let mut active = active_pods.len() as i64;
        let uncounted = status.uncounted().clone();
        let (mut new_succeeded, mut new_failed, mut new_failed_counted) = (0usize, Vec::new(), 0);
        for pod in &ctx.pods {
            let uid = object::uid(pod).to_string();
            if !has_tracking_finalizer(pod)
                || expected_rm.contains(&uid)
                || uncounted.succeeded.contains(&uid)
                || uncounted.failed.contains(&uid)
                || (ctx.spec.indexed && indexed::valid_index(pod, &ctx.spec).is_none())
            {
                continue;
            }
            if PodPhase::of(pod) == Some(PodPhase::Succeeded) {
                new_succeeded += 1;
            } else if pods::is_failed(pod, &ctx.spec) {
                new_failed.push(pods::finished_time(pod, now));
                // Failures the pod failure policy ignores do not count towards the limit.
                if failure_policy::matches(&ctx.spec, pod).count {
                    new_failed_counted += 1;
                }
            }
        }
        let mut succeeded =
            status.succeeded + new_succeeded as i64 + uncounted.succeeded.len() as i64;
        let failed = status.failed + new_failed_counted + uncounted.failed.len() as i64;
        if ctx.spec.indexed {
            let (prev, all) = indexed::succeeded_indexes(&ctx.job, &ctx.spec, &ctx.pods);
            succeeded = all.total();
            ctx.prev_succeeded_indexes = prev;
            ctx.succeeded_indexes = all;
            if ctx.spec.backoff_limit_per_index.is_some() {
                let failed_indexes = indexed::failed_indexes(&ctx.job, &ctx.spec, &ctx.pods);
                ctx.awaiting_replacement = indexed::awaiting_replacement(
                    &ctx.spec,
                    &ctx.pods,
                    &active_pods,
                    &ctx.succeeded_indexes,
                    &failed_indexes,
                    now,
                );
                ctx.failed_indexes = Some(failed_indexes);
            }
        }
        let ready = active_pods.iter().filter(|p| is_pod_ready(p)).count() as i64;
        if status.start_time.is_none() && !ctx.spec.suspend {
            status.start_time = Some(object::timestamp(now));
        }
        let backoff = self.backoff.get(key).after(new_succeeded, new_failed);
        let (mut finished, mut requeue) = super::finish::decide(&ctx, &status, failed);

        let mut manage_error = None;
        if finished.is_some() {
            let (deleted, error) = self.delete_pods(&ctx, &active_pods).await;
            // Pods not yet gone, or not yet seen, keep the Job from finishing in this sync.
            if deleted != active_pods.len() || !satisfied {
                finished = None;
            }
            active -= deleted as i64;
            manage_error = error;
        } else {
            let mut managed = false;
            if satisfied && object::deletion_timestamp(&ctx.job).is_none() {
                let outcome = self
                    .manage_job(&ctx, &active_pods, succeeded, &backoff)
                    .await;
                active = outcome.active;
                requeue = earliest(requeue, outcome.requeue);
                manage_error = outcome.error;
                managed = true;
            }
            let complete = match ctx.spec.completions {
                None => succeeded > 0 && active == 0,
                Some(completions) => succeeded >= completions && active == 0,
            };
            if complete {
                finished = Some(Condition::new(
                    SUCCESS_CRITERIA_MET,
                    true,
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    now,
                ));
            } else if managed {
                self.update_suspended(&ctx, &mut status);
            }
        }
        status.active = active;
        status.ready = Some(ready);
        status.terminating =
            Some(ctx.pods.iter().filter(|p| pods::is_terminating(p)).count() as i64);
        let tracking = Tracking {
            ctx: &ctx,
            finished,
            expected_rm,
            backoff,
        };
        self.track_status_and_remove_finalizers(tracking, status)
            .await?;
        match manage_error {
            Some(e) => Err(e),
            None => Ok(requeue),
        }
    }

    /// The Suspended condition follows spec.suspend, with events; resuming starts the
    /// deadline over (activeDeadlineSeconds counts continuous activity).
    fn update_suspended(&self, ctx: &SyncCtx, status: &mut JobStatus) {
        use super::status::SUSPENDED;
        use client::events::EventType;
        if ctx.spec.suspend {
            if status.ensure_condition(SUSPENDED, true, "JobSuspended", "Job suspended", ctx.now) {
                self.recorder
                    .event(&ctx.job, EventType::Normal, "Suspended", "Job suspended");
            }
        } else if status.ensure_condition(SUSPENDED, false, "JobResumed", "Job resumed", ctx.now) {
            self.recorder
                .event(&ctx.job, EventType::Normal, "Resumed", "Job resumed");
            status.start_time = Some(object::timestamp(ctx.now));
        }
    }

    /// Removes the tracking finalizer of a pod whose Job is gone or finished (upstream's
    /// syncOrphanPod); a pod adopted meanwhile keeps it.
    pub(super) async fn sync_orphan_pod(&self, key: &str) -> Result<(), SyncError> {
        let Some(pod) = self.pod_informer.indexer().get(key) else {
            return Ok(());
        };
        if !has_tracking_finalizer(&pod) {
            return Ok(());
        }
        if let Some(reference) = pod["metadata"]["ownerReferences"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["controller"].as_bool() == Some(true)))
        {
            if reference["kind"] != "Job" || reference["apiVersion"] != "batch/v1" {
                return Ok(());
            }
            if let Some((_, job)) = self.job_of(&pod) {
                if !super::is_finished(&job) {
                    return Ok(());
                }
            }
        }
        self.remove_tracking_finalizer(&pod).await
    }
}
