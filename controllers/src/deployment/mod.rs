//! The deployment controller (upstream's pkg/controller/deployment): a deployment owns
//! ReplicaSets, one per pod template it has had; it rolls from the old ones to the one of its
//! current template (RollingUpdate within maxSurge / maxUnavailable, or Recreate), scales them
//! proportionally when resized mid-rollout, keeps revisions for `kubectl rollout undo`, prunes
//! history past revisionHistoryLimit and reports progress through status and conditions, as
//! `kubectl rollout status` reads them. It never touches pods: the ReplicaSet controller does.
//!
//! ```ignore
//! let controller = DeploymentController::new(&informers, DeploymentControllerConfig::default())?;
//! tokio::spawn(controller.run(stop.clone()));
//! ```

mod config;
mod controller;
mod progress;
mod recreate;
mod rollback;
mod rolling;
mod sync;
pub mod util;

pub use config::DeploymentControllerConfig;
pub use controller::DeploymentController;
