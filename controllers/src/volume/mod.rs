//! The PersistentVolume controller (upstream's pkg/controller/volume/persistentvolume) with
//! one simulated provisioner of its own: claims of a class it provisions for get a new
//! hostPath volume at once, and volumes whose claim went are released and reclaimed.
//!
//! What runs here and what does not: binding claims to volumes (pre-bound pairs and freshly
//! provisioned ones), claim and volume phases, the Delete and Retain reclaim policies. Matching
//! a claim to some other Available volume by size and access modes is not done: a claim gets
//! either the volume it names (or that names it) or a provisioned one.

mod binder;
mod controller;
mod default_class;
mod protection;
mod provisioner;

pub use controller::{PersistentVolumeController, PersistentVolumeControllerError};
pub use default_class::ensure_default_class;
pub use protection::{PvProtectionController, PvcProtectionController};

/// The provisioner name this controller answers for (a StorageClass's `provisioner`).
pub const PROVISIONER: &str = "sim.kube.io/hostpath";
/// Where the simulated volumes would live on a node (only recorded in the volume's spec).
pub const VOLUME_ROOT: &str = "/var/lib/sim.kube.io/storage";

/// Upstream's annotations of the binding (pkg/controller/volume/persistentvolume/util).
pub(crate) const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
pub(crate) const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
pub(crate) const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
pub(crate) const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
pub(crate) const ANN_BETA_STORAGE_PROVISIONER: &str =
    "volume.beta.kubernetes.io/storage-provisioner";
pub(crate) const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
pub(crate) const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
