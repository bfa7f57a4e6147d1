//! The in-process scheduler (upstream's kube-scheduler with its default profile): pending
//! pods are placed on nodes by filter and score plugins over a cache of nodes and assigned
//! pods, and bound through the pods/binding subresource.

mod cache;
mod config_file;
mod dra;
mod error;
mod filters;
mod fit_error;
mod preemption;
mod resources;
mod sampling;
mod scheduler;
mod scores;
mod topology;
mod volume_binding;

pub use error::SchedulerError;
pub use scheduler::{Scheduler, SchedulerConfig, DEFAULT_SCHEDULER_NAME};
