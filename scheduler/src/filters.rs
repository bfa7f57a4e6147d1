//! The filter plugins of the default profile, in upstream's order: NodeUnschedulable,
//! TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, then the pod-topology ones
//! (`topology.rs`). A node fails at its first failing plugin, with that plugin's reasons.

use client::component_helpers::{
    find_untolerated, required_node_affinity_matches, Taint, TaintEffect,
};
use serde_json::Value;

use crate::cache::{NodeInfo, PodInfo};

/// Why a node does not fit, and whether preemption could change that (upstream's
/// Unschedulable vs UnschedulableAndUnresolvable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub reasons: Vec<String>,
    pub resolvable: bool,
}

impl Rejection {
    pub fn unresolvable(reason: &str) -> Self {
        Self {
            reasons: vec![reason.to_string()],
            resolvable: false,
        }
    }

    pub fn resolvable(reasons: Vec<String>) -> Self {
        Self {
            reasons,
            resolvable: true,
        }
    }
}

pub type FilterResult = Result<(), Rejection>;

pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// NodeUnschedulable: a cordoned node takes only pods tolerating its unschedulable taint.
pub fn node_unschedulable(pod: &PodInfo, node: &NodeInfo) -> FilterResult {
    if !node.unschedulable {
        return Ok(());
    }
    let taint = Taint {
        key: UNSCHEDULABLE_TAINT.into(),
        effect: "NoSchedule".into(),
        ..Taint::default()
    };
    match find_untolerated(&[taint], &pod.tolerations, &[TaintEffect::NoSchedule]) {
        None => Ok(()),
        Some(_) => Err(Rejection::unresolvable("node(s) were unschedulable")),
    }
}

/// TaintToleration: every NoSchedule and NoExecute taint must be tolerated. Upstream no longer
/// names the taint in the message (it may hold private values).
pub fn taint_toleration(pod: &PodInfo, node: &NodeInfo) -> FilterResult {
    let blocking = [TaintEffect::NoSchedule, TaintEffect::NoExecute];
    match find_untolerated(&node.taints, &pod.tolerations, &blocking) {
        None => Ok(()),
        Some(_) => Err(Rejection::unresolvable("node(s) had untolerated taint(s)")),
    }
}

/// NodeAffinity: nodeSelector and the required node affinity.
pub fn node_affinity(pod: &PodInfo, node: &Value) -> FilterResult {
    if pod.any_node_labels || required_node_affinity_matches(&pod.pod, node) {
        Ok(())
    } else {
        Err(Rejection::unresolvable(
            "node(s) didn't match Pod's node affinity/selector",
        ))
    }
}

/// NodePorts: no host port the pod wants may clash with one in use on the node.
pub fn node_ports(pod: &PodInfo, node: &NodeInfo) -> FilterResult {
    if pod.ports.is_empty() {
        return Ok(());
    }
    let clash = node
        .ports_in_use()
        .any(|used| pod.ports.iter().any(|p| p.conflicts(used)));
    if clash {
        Err(Rejection::resolvable(vec![
            "node(s) didn't have free ports for the requested pod ports".into(),
        ]))
    } else {
        Ok(())
    }
}

/// NodeResourcesFit: the pod count, and every resource the pod requests, against what is
/// allocatable and not yet requested. A resource the pod does not request is not checked.
pub fn node_resources_fit(pod: &PodInfo, node: &NodeInfo) -> FilterResult {
    let mut reasons = Vec::new();
    if node.pods.len() as i64 + 1 > node.allowed_pods {
        reasons.push("Too many pods".to_string());
    }
    let want = &pod.requests;
    let free = |alloc: i64, used: i64| alloc - used;
    let checks = [
        (
            want.milli_cpu,
            free(node.allocatable.milli_cpu, node.requested.milli_cpu),
            "cpu",
        ),
        (
            want.memory,
            free(node.allocatable.memory, node.requested.memory),
            "memory",
        ),
        (
            want.ephemeral_storage,
            free(
                node.allocatable.ephemeral_storage,
                node.requested.ephemeral_storage,
            ),
            "ephemeral-storage",
        ),
    ];
    for (asked, left, name) in checks {
        if asked > 0 && asked > left {
            reasons.push(format!("Insufficient {name}"));
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Rejection::resolvable(reasons))
    }
}

/// The plugins that look at one node alone, in the default profile's order.
pub fn node_filters(pod: &PodInfo, node: &NodeInfo) -> FilterResult {
    let Some(object) = node.node.as_deref() else {
        return Err(Rejection::unresolvable("node(s) not found"));
    };
    node_unschedulable(pod, node)?;
    taint_toleration(pod, node)?;
    node_affinity(pod, object)?;
    node_ports(pod, node)?;
    node_resources_fit(pod, node)
}
