//! The DaemonSet controller (upstream's pkg/controller/daemon): one pod on every node that
//! should run it (nodeSelector, required node affinity, taints against tolerations), pinned
//! to that node by node affinity on its name; surplus, misplaced and failed pods deleted;
//! RollingUpdate within maxUnavailable / maxSurge or OnDelete; ControllerRevisions for
//! `kubectl rollout history / undo`; and the status `kubectl rollout status` reads.
//!
//! ```ignore
//! let controller = DaemonSetController::new(&informers, DaemonSetControllerConfig::default())?;
//! tokio::spawn(controller.run(stop.clone()));
//! ```

mod backoff;
mod config;
mod controller;
mod history;
pub mod placement;
mod status;
mod sync;
mod update;

pub use config::DaemonSetControllerConfig;
pub use controller::DaemonSetController;
