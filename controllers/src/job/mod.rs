//! The Job controller (upstream's pkg/controller/job): runs a Job's pods to the wanted number
//! of completions, at most `parallelism` at a time, recreating failed ones with a growing
//! backoff until `backoffLimit` failures end the Job; suspends and resumes it, enforces
//! `activeDeadlineSeconds`, and counts finished pods exactly once through the
//! `batch.kubernetes.io/job-tracking` finalizer and `status.uncountedTerminatedPods`.

mod backoff;
mod config;
mod controller;
mod manage;
mod pods;
mod spec;
mod status;
mod sync;
mod tracking;

pub use config::JobControllerConfig;
pub use controller::{JobController, JobControllerError};
pub use status::{finished_condition, finished_condition_type, is_finished, Condition};

/// Held by every pod of a Job until the controller has counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The events' source component, as upstream's.
pub const COMPONENT: &str = "job-controller";
