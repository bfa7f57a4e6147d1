//! The disruption controller (upstream's pkg/controller/disruption): keeps each
//! PodDisruptionBudget's status — expected, desired and currently healthy pods, how many
//! disruptions are allowed, the DisruptionAllowed condition — in step with its pods, so the
//! eviction subresource can tell whether one more pod may go.

mod controller;
mod scale;
mod status;

pub use controller::{DisruptionController, DisruptionControllerConfig, DisruptionError};
pub use status::DELETION_TIMEOUT;
