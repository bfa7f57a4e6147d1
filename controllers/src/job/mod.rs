//! The Job controller (upstream's pkg/controller/job): runs a Job's pods to the wanted number
//! of completions, at most `parallelism` at a time, recreating failed ones with a growing
//! backoff until `backoffLimit` failures end the Job; suspends and resumes it, enforces
//! `activeDeadlineSeconds`, and counts finished pods exactly once through the
//! `batch.kubernetes.io/job-tracking` finalizer and `status.uncountedTerminatedPods`.
//! Indexed Jobs run one pod per completion index, with per-index backoff limits and success
//! policies; a pod failure policy may fail the Job or an index, or ignore a failure.

mod backoff;
mod config;
mod controller;
mod failure_policy;
mod finish;
mod indexed;
mod intervals;
mod manage;
mod pods;
mod spec;
mod status;
mod success_policy;
mod sync;
mod tracking;

pub use config::JobControllerConfig;
pub use controller::{JobController, JobControllerError};
pub use indexed::{COMPLETION_INDEX, INDEX_FAILURE_COUNT};
pub use status::{finished_condition, finished_condition_type, is_finished, Condition};

/// Held by every pod of a Job until the controller has counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The events' source component, as upstream's.
pub const COMPONENT: &str = "job-controller";
