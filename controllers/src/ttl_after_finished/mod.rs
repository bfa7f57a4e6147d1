//! The TTL-after-finished controller (upstream's pkg/controller/ttlafterfinished): a finished
//! Job with `spec.ttlSecondsAfterFinished` is deleted that many seconds after it finished,
//! its pods after it.

mod controller;

pub use controller::{TtlAfterFinishedConfig, TtlAfterFinishedController, TtlError};
