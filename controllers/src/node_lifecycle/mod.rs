//! Upstream's node lifecycle controller and taint eviction controller
//! (pkg/controller/nodelifecycle, pkg/controller/tainteviction): nodes whose kubelets go
//! silent turn Unknown and are tainted, and pods that do not tolerate a node's NoExecute taints
//! are evicted.

mod controller;
mod eviction;
mod health;
mod missing_node;
mod taint_eviction;
mod taints;

pub use controller::{NodeLifecycleConfig, NodeLifecycleController, NODE_LEASE_NAMESPACE};
pub use eviction::{eviction, Eviction};
pub use health::{silenced_conditions, HealthConfig, KUBELET_CONDITIONS};
pub use missing_node::REASON as NODE_NOT_FOUND;
pub use taint_eviction::TaintEvictionController;
pub use taints::{reconciled_taints, NOT_READY, UNREACHABLE};
