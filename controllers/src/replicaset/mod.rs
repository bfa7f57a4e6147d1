//! The ReplicaSet controller, which also serves ReplicationControllers (upstream's
//! pkg/controller/replicaset, whose ReplicationManager is the same code for another kind):
//! keeps spec.replicas active pods matching a set's selector, adopting orphans, releasing
//! pods that stopped matching, creating from the template and deleting the cheapest pods
//! first, and reports the pods' state in the set's status.
//!
//! ```ignore
//! let rs = ReplicaSetController::new(&informers, ReplicaSetControllerConfig::default())?;
//! let rc = ReplicaSetController::new(
//!     &informers,
//!     ReplicaSetControllerConfig::for_kind(ReplicaSetKind::ReplicationController),
//! )?;
//! tokio::join!(rs.run(stop.clone()), rc.run(stop.clone()));
//! ```

mod controller;
mod kind;
mod ranking;
mod status;
mod sync;

pub use controller::{ReplicaSetController, ReplicaSetControllerConfig, ReplicaSetControllerError};
pub use kind::ReplicaSetKind;
pub use ranking::POD_DELETION_COST;
pub use status::REPLICA_FAILURE;
