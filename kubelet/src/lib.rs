//! Simulated nodes in the server process (what kwok does beside a control plane, built in):
//! Node objects with heartbeats, and a kubelet per node running upstream's pod lifecycle
//! against a simulated container runtime and network plugin, writing every step to the API
//! as the real kubelet writes it.

pub mod behavior;
pub mod config;
pub mod error;
pub mod kubelet;
pub mod logs;
pub mod network;
pub mod node;
pub mod pod_worker;
pub mod pod_workers;
pub mod proxy;
pub mod runtime;
pub mod status;
pub mod usage;

pub use config::{KubeletTimings, NodeConfig};
pub use error::{KubeletError, Result};
pub use kubelet::Nodes;
