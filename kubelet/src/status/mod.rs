//! The pod status the kubelet reports (upstream's generateAPIPodStatus with
//! pkg/kubelet/status/generate.go) and the status manager that writes it, then sends the
//! final delete of a terminated pod (seed 004).

pub mod conditions;
pub mod generate;
pub mod manager;

pub use generate::{generate, PodView};
pub use manager::StatusManager;
