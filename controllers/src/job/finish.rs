//! Whether a sync ends the Job (upstream's syncJob, in its order): a finishing condition
//! already recorded stays; else a FailJob rule of the pod failure policy, the backoff limit,
//! the active deadline, failed indexes, and, for Indexed Jobs, a success policy.

use std::time::Duration;

use registry::object;
use registry::types::PodPhase;

use super::failure_policy;
use super::pods;
use super::status::{Condition, JobStatus, FAILURE_TARGET, SUCCESS_CRITERIA_MET};
use super::success_policy;
use super::sync::SyncCtx;

pub const BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
pub const DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
pub const POD_FAILURE_POLICY: &str = "PodFailurePolicy";
pub const FAILED_INDEXES: &str = "FailedIndexes";
pub const MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";
pub const SUCCESS_POLICY: &str = "SuccessPolicy";

/// The finishing condition (SuccessCriteriaMet or FailureTarget) if the Job is done, and
/// when to look again for the deadline.
pub(super) fn decide(
    ctx: &SyncCtx,
    status: &JobStatus,
    failed: i64,
) -> (Option<Condition>, Option<Duration>) {
    let now = ctx.now;
    let failure = |reason: &str, message: &str| {
        Some(Condition::new(FAILURE_TARGET, true, reason, message, now))
    };
    let recorded = status
        .condition(SUCCESS_CRITERIA_MET)
        .or_else(|| status.condition(FAILURE_TARGET))
        .filter(|c| c.is_true())
        .cloned();
    if recorded.is_some() {
        return (recorded, None);
    }
    if let Some(message) = failure_policy::fail_job_message(&ctx.spec, &ctx.pods) {
        return (failure(POD_FAILURE_POLICY, &message), None);
    }
    let mut requeue = None;
    if failed > ctx.spec.backoff_limit || past_backoff_limit_on_failure(ctx) {
        return (
            failure(
                BACKOFF_LIMIT_EXCEEDED,
                "Job has reached the specified backoff limit",
            ),
            None,
        );
    }
    if let Some(left) = active_deadline_left(ctx, status) {
        if left.is_zero() {
            return (
                failure(
                    DEADLINE_EXCEEDED,
                    "Job was active longer than specified deadline",
                ),
                None,
            );
        }
        requeue = Some(left);
    }
    if !ctx.spec.indexed {
        return (None, requeue);
    }
    let completions = ctx.spec.completions.unwrap_or(0);
    if let Some(failed_indexes) = &ctx.failed_indexes {
        let failed = failed_indexes.total();
        if ctx.spec.max_failed_indexes.is_some_and(|max| failed > max) {
            return (
                failure(
                    MAX_FAILED_INDEXES_EXCEEDED,
                    "Job has exceeded the specified maximal number of failed indexes",
                ),
                requeue,
            );
        }
        // Failed indexes end the Job only once every other index has finished.
        if failed > 0 && failed + ctx.succeeded_indexes.total() >= completions {
            return (failure(FAILED_INDEXES, "Job has failed indexes"), requeue);
        }
    }
    if let Some(message) = success_policy::matched(
        &ctx.spec.success_policy,
        completions,
        &ctx.succeeded_indexes,
    ) {
        let met = Condition::new(SUCCESS_CRITERIA_MET, true, SUCCESS_POLICY, &message, now);
        return (Some(met), requeue);
    }
    (None, requeue)
}

/// `restartPolicy: OnFailure` pods restart in place: their restarts count as failures.
fn past_backoff_limit_on_failure(ctx: &SyncCtx) -> bool {
    if !ctx.spec.restart_on_failure {
        return false;
    }
    let restarts: i64 = ctx
        .pods
        .iter()
        .filter(|p| matches!(PodPhase::of(p), Some(PodPhase::Running | PodPhase::Pending)))
        .map(|p| pods::restarts(p))
        .sum();
    if ctx.spec.backoff_limit == 0 {
        restarts > 0
    } else {
        restarts >= ctx.spec.backoff_limit
    }
}

/// The time left before activeDeadlineSeconds runs out (zero: it has), if it applies.
fn active_deadline_left(ctx: &SyncCtx, status: &JobStatus) -> Option<Duration> {
    let seconds = ctx.spec.active_deadline_seconds?;
    if ctx.spec.suspend {
        return None;
    }
    let start = status.start_time.as_deref().and_then(object::parse_time)?;
    let deadline = start + chrono::Duration::seconds(seconds);
    Some((deadline - ctx.now).to_std().unwrap_or(Duration::ZERO))
}
