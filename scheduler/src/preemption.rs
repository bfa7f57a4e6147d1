//! DefaultPreemption (upstream's PostFilter plugin, pkg/scheduler/framework/plugins/
//! defaultpreemption): a pod no node fits may make room by evicting pods of lower priority.
//! For every node that rejected it for a reason removing pods could change, the lower-priority
//! pods are taken away; if the pod then fits, as many of them as still fit are given back,
//! the more important first, and the rest are that node's victims. The node whose victims
//! matter least is chosen: the lowest highest priority, then the lowest sum of priorities,
//! then the fewest victims, then the most recently started.
//!
//! Not modelled: PodDisruptionBudgets (upstream gives back violating victims first and prefers
//! nodes with fewer violations), nominated pods holding their room against pods of lower
//! priority, and topology constraints recomputed without the victims (the pod's own spread
//! and affinity state is the one of the whole cluster).

use std::sync::Arc;

use serde_json::Value;

use crate::cache::{Cache, NodeInfo, PodInfo};
use crate::filters::{node_filters, Rejection};
use crate::topology::TopologyState;

/// Upstream's wording for nodes with nothing of lower priority.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// For nodes that rejected the pod for a reason no eviction changes.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// A pod's priority (set by the Priority admission plugin; 0 when absent).
pub fn priority(pod: &Value) -> i64 {
    pod["spec"]["priority"].as_i64().unwrap_or(0)
}

/// Whether a pod is on its way out because a preemption evicted it.
fn terminating_by_preemption(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_string()
        && pod["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "DisruptionTarget" && c["reason"] == "PreemptionByScheduler")
}

/// Why the pod may not preempt (upstream's PodEligibleToPreemptOthers); None when it may.
pub fn ineligible(pod: &PodInfo, cache: &Cache) -> Option<&'static str> {
    if pod.pod["spec"]["preemptionPolicy"] == "Never" {
        return Some("not eligible due to preemptionPolicy=Never.");
    }
    let nominated = pod.pod["status"]["nominatedNodeName"]
        .as_str()
        .filter(|n| !n.is_empty())?;
    let own = priority(&pod.pod);
    let node = cache.nodes().find(|n| n.name() == nominated)?;
    node.pods
        .values()
        .any(|p| priority(&p.pod) < own && terminating_by_preemption(&p.pod))
        .then_some("not eligible due to a terminating pod on the nominated node.")
}

/// A node the pod fits on once its victims are gone.
#[derive(Debug)]
pub struct Candidate {
    pub node: String,
    pub victims: Vec<Arc<PodInfo>>,
}

fn fits(pod: &PodInfo, node: &NodeInfo, state: &TopologyState) -> Result<(), Rejection> {
    node_filters(pod, node)
        .and_then(|()| state.spread_filter(node))
        .and_then(|()| state.affinity_filter(node))
}

/// upstream's SelectVictimsOnNode; Err is the node's status for the message.
fn select_victims(
    pod: &PodInfo,
    node: &NodeInfo,
    state: &TopologyState,
) -> Result<Vec<Arc<PodInfo>>, Vec<String>> {
    let own = priority(&pod.pod);
    let mut potential: Vec<Arc<PodInfo>> = node
        .pods
        .values()
        .filter(|p| priority(&p.pod) < own)
        .cloned()
        .collect();
    if potential.is_empty() {
        return Err(vec![NO_VICTIMS.into()]);
    }
    let mut trial = node.clone();
    for p in &potential {
        trial.remove(&p.key);
    }
    fits(pod, &trial, state).map_err(|r| r.reasons)?;
    // The more important first: higher priority, then started earlier.
    potential.sort_by(|a, b| {
        priority(&b.pod)
            .cmp(&priority(&a.pod))
            .then_with(|| start_time(a).cmp(start_time(b)))
    });
    let mut victims = Vec::new();
    for p in potential {
        trial.add(p.clone());
        if fits(pod, &trial, state).is_err() {
            trial.remove(&p.key);
            victims.push(p);
        }
    }
    Ok(victims)
}

/// RFC 3339 times order as text; a pod not started yet counts as the latest.
fn start_time(p: &PodInfo) -> &str {
    p.pod["status"]["startTime"].as_str().unwrap_or("~")
}

/// upstream's pickOneNodeForPreemption over the candidates, in node order.
fn pick(candidates: Vec<Candidate>) -> Option<Candidate> {
    let rank = |c: &Candidate| {
        let highest = c
            .victims
            .iter()
            .map(|v| priority(&v.pod))
            .max()
            .unwrap_or(i64::MIN);
        // Shifted as upstream shifts them, so negative priorities still add up as costs.
        let sum: i128 = c
            .victims
            .iter()
            .map(|v| i128::from(priority(&v.pod)) + i128::from(i32::MAX) + 1)
            .sum();
        // The earliest start among the most important victims: the later the better.
        let earliest = c
            .victims
            .iter()
            .filter(|v| priority(&v.pod) == highest)
            .map(|v| start_time(v).to_string())
            .min()
            .unwrap_or_default();
        (highest, sum, c.victims.len(), std::cmp::Reverse(earliest))
    };
    let mut best: Option<(_, Candidate)> = None;
    for c in candidates {
        let r = rank(&c);
        if best.as_ref().is_none_or(|(b, _)| r < *b) {
            best = Some((r, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The node to preempt on and its victims, or each node's status (for the message) when
/// no eviction makes room.
pub fn preempt(
    pod: &PodInfo,
    state: &TopologyState,
    rejected: &[(&NodeInfo, Rejection)],
) -> Result<Candidate, Vec<Vec<String>>> {
    let mut candidates = Vec::new();
    let mut statuses = Vec::new();
    for (node, rejection) in rejected {
        if !rejection.resolvable {
            statuses.push(vec![NOT_HELPFUL.to_string()]);
            continue;
        }
        match select_victims(pod, node, state) {
            Ok(victims) if !victims.is_empty() => candidates.push(Candidate {
                node: node.name().to_string(),
                victims,
            }),
            Ok(_) => statuses.push(vec![format!(
                "expected at least one victim pod on node {:?}",
                node.name()
            )]),
            Err(reasons) => statuses.push(reasons),
        }
    }
    pick(candidates).ok_or(statuses)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(name: &str, cpu: &str) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}),
        )
    }

    fn pod(name: &str, node: &str, cpu: &str, priority: i64) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"nodeName": node, "priority": priority,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}}),
        )
    }

    fn rejected<'a>(cache: &'a Cache, info: &PodInfo) -> Vec<(&'a NodeInfo, Rejection)> {
        cache
            .nodes()
            .filter_map(|n| node_filters(info, n).err().map(|r| (n, r)))
            .collect()
    }

    #[test]
    fn the_node_whose_victims_matter_least_is_chosen() {
        let mut cache = Cache::default();
        cache.set_node(node("a", "2"));
        cache.set_node(node("b", "2"));
        cache.add_pod(pod("a-low", "a", "1", 10), false);
        cache.add_pod(pod("a-mid", "a", "1", 50), false);
        cache.add_pod(pod("b-low1", "b", "1", 10), false);
        cache.add_pod(pod("b-low2", "b", "1", 10), false);
        let high = PodInfo::new(pod("high", "", "1", 100));
        let state = TopologyState::compute(&high, &cache);
        let found = preempt(&high, &state, &rejected(&cache, &high)).expect("a candidate");
        // On a, a-mid (the more important) is given back and a-low is the victim; on b, one
        // of the two priority-10 pods. Both nodes cost one victim of priority 10, started at
        // the same time: the first in node order wins.
        assert_eq!(found.node, "a");
        let names: Vec<&str> = found.victims.iter().map(|v| v.key.as_str()).collect();
        assert_eq!(names, ["default/a-low"]);
    }

    #[test]
    fn nothing_of_lower_priority_means_no_victims() {
        let mut cache = Cache::default();
        cache.set_node(node("a", "1"));
        cache.add_pod(pod("same", "a", "1", 100), false);
        let high = PodInfo::new(pod("high", "", "1", 100));
        let state = TopologyState::compute(&high, &cache);
        let statuses = preempt(&high, &state, &rejected(&cache, &high)).unwrap_err();
        assert_eq!(statuses, [vec![NO_VICTIMS.to_string()]]);
        // Evicting everything would not be enough: the node's own reasons.
        let huge = PodInfo::new(pod("huge", "", "4", 1000));
        let state = TopologyState::compute(&huge, &cache);
        let statuses = preempt(&huge, &state, &rejected(&cache, &huge)).unwrap_err();
        assert_eq!(statuses, [vec!["Insufficient cpu".to_string()]]);
    }

    #[test]
    fn preemption_policy_never_is_not_eligible() {
        let cache = Cache::default();
        let mut never = (*pod("n", "", "1", 100)).clone();
        never["spec"]["preemptionPolicy"] = json!("Never");
        let info = PodInfo::new(Arc::new(never));
        assert_eq!(
            ineligible(&info, &cache),
            Some("not eligible due to preemptionPolicy=Never.")
        );
    }
}
