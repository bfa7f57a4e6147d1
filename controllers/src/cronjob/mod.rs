//! The CronJob controller (upstream's pkg/controller/cronjob, ControllerV2): creates a Job at
//! each scheduled time of a CronJob, in its time zone, honouring concurrencyPolicy, suspend
//! and startingDeadlineSeconds; keeps `status.active`, `lastScheduleTime` and
//! `lastSuccessfulTime`; prunes finished Jobs past the history limits; and looks again at
//! the next scheduled time.

mod config;
mod controller;
mod history;
mod schedule;
mod sync;

pub use config::CronJobControllerConfig;
pub use controller::{CronJobController, CronJobControllerError};
pub use schedule::{parse_schedule, Schedule, ScheduleTimes};

/// The annotation on a CronJob's Jobs with the time they were scheduled for.
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
pub const COMPONENT: &str = "cronjob-controller";
