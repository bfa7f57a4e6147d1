//! The StatefulSet controller (upstream's pkg/controller/statefulset): pods with stable names
//! `<set>-<ordinal>`, hostnames under the governing service and their own claims from the
//! volume claim templates; created in order and each waited for (OrderedReady) or all at once
//! (Parallel); rolled to new templates through ControllerRevisions, from the highest ordinal
//! down to the partition (RollingUpdate) or as users delete them (OnDelete); claims kept or
//! deleted with the set and on scale-down as the retention policy says.
//!
//! ```ignore
//! let controller = StatefulSetController::new(&informers, StatefulSetControllerConfig::default())?;
//! tokio::spawn(controller.run(stop.clone()));
//! ```

mod config;
mod controller;
pub mod identity;
mod pod_control;
mod retention;
mod revisions;
mod status;
mod sync;
mod update;

pub use config::StatefulSetControllerConfig;
pub use controller::StatefulSetController;
