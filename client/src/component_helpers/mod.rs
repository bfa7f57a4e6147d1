//! Whether a pod may be placed on a node, as far as the node's labels, name and taints decide
//! it (upstream's k8s.io/component-helpers/scheduling/corev1 and its nodeaffinity package):
//! the pod's nodeSelector, its required node affinity, and its tolerations of the node's
//! taints. Pure functions over JSON objects, shared by the DaemonSet controller and the
//! scheduler.

mod node_affinity;
mod taints;

pub use node_affinity::{node_selector_matches, required_node_affinity_matches};
pub use taints::{
    find_untolerated, find_untolerated_taint, tolerates, Taint, TaintEffect, Toleration,
};
