//! The score plugins, each 0..=100 after normalisation, weighted as the default profile:
//! TaintToleration 3, NodeAffinity 2, PodTopologySpread 2, NodeResourcesFit (LeastAllocated) 1.

use client::component_helpers::{node_selector_matches, TaintEffect};
use serde_json::Value;

use crate::cache::{NodeInfo, PodInfo};
use crate::topology::TopologyState;

const MAX: i64 = 100;

/// LeastAllocated over cpu and memory (weights 1 and 1), counting the pod's non-zero requests.
fn least_allocated(pod: &PodInfo, node: &NodeInfo) -> i64 {
    let score = |requested: i64, allocatable: i64| {
        if allocatable <= 0 || requested > allocatable {
            0
        } else {
            (allocatable - requested) * MAX / allocatable
        }
    };
    let cpu = score(
        node.non_zero_requested.milli_cpu + pod.non_zero.milli_cpu,
        node.allocatable.milli_cpu,
    );
    let memory = score(
        node.non_zero_requested.memory + pod.non_zero.memory,
        node.allocatable.memory,
    );
    (cpu + memory) / 2
}

/// The weights of the preferred node affinity terms the node matches.
fn preferred_node_affinity(pod: &PodInfo, node: &Value) -> i64 {
    pod.pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| {
            let selector = serde_json::json!({"nodeSelectorTerms": [t["preference"].clone()]});
            node_selector_matches(&selector, node)
        })
        .map(|t| t["weight"].as_i64().unwrap_or(0))
        .sum()
}

/// PreferNoSchedule taints the pod does not tolerate.
fn intolerable_prefer_no_schedule(pod: &PodInfo, node: &NodeInfo) -> i64 {
    node.taints
        .iter()
        .filter(|t| t.effect() == Some(TaintEffect::PreferNoSchedule))
        .filter(|t| !pod.tolerations.iter().any(|tol| tol.tolerates(t)))
        .count() as i64
}

/// Total weighted scores of the feasible nodes, in their order.
pub fn score(pod: &PodInfo, nodes: &[&NodeInfo], state: &TopologyState) -> Vec<i64> {
    let affinity: Vec<i64> = nodes
        .iter()
        .map(|n| {
            n.node
                .as_deref()
                .map_or(0, |object| preferred_node_affinity(pod, object))
        })
        .collect();
    let taints: Vec<i64> = nodes
        .iter()
        .map(|n| intolerable_prefer_no_schedule(pod, n))
        .collect();
    let spread: Vec<Option<i64>> = nodes.iter().map(|n| state.spread_score(n)).collect();
    let max_affinity = affinity.iter().copied().max().unwrap_or(0);
    let max_taints = taints.iter().copied().max().unwrap_or(0);
    let spread_values = spread.iter().flatten().copied();
    let max_spread = spread_values.clone().max().unwrap_or(0);
    let min_spread = spread_values.min().unwrap_or(0);
    nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let affinity = if max_affinity > 0 {
                affinity[i] * MAX / max_affinity
            } else {
                0
            };
            let taint = if max_taints > 0 {
                MAX - taints[i] * MAX / max_taints
            } else {
                MAX
            };
            let spread = match spread[i] {
                Some(s) if max_spread > 0 => MAX * (max_spread + min_spread - s) / max_spread,
                _ => MAX,
            };
            least_allocated(pod, node) + 2 * affinity + 3 * taint + 2 * spread
        })
        .collect()
}
