//! One scheduling decision (upstream's schedulePod): the pod's cycle state, the filters over
//! the nominated node or a sample of the nodes, preemption when nothing fits, the scores, and
//! the pod assumed on the best node. It runs under the cache lock, so decisions see each
//! other's choices.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rand::Rng;
use serde_json::{json, Value};

use super::{key_of, lock, nominated_node, Decision, Nomination, Scheduler};
use crate::cache::{NodeInfo, PodInfo};
use crate::dra::{self, ClaimAllocation, DeviceId, DraState};
use crate::filters::{node_filters, Rejection};
use crate::fit_error;
use crate::preemption;
use crate::sampling;
use crate::scores;
use crate::topology::TopologyState;

impl Scheduler {
    /// Filters and scores under the cache lock, and assumes the pod on the chosen node, so
    /// the next decision counts it. None: already placed.
    pub(super) fn decide(&self, pod: &Arc<Value>, claims: Vec<Arc<Value>>) -> Option<Decision> {
        let mut cache = lock(&self.cache);
        let info = PodInfo::new(pod.clone());
        if cache.is_placed(&info.key) {
            return None;
        }
        let state = TopologyState::compute(&info, &cache);
        let assumed: BTreeSet<DeviceId> = lock(&self.assumed_devices)
            .values()
            .flatten()
            .cloned()
            .collect();
        let dra = DraState::compute(
            claims,
            &self.resource_claims,
            &self.device_classes,
            &self.resource_slices,
            &assumed,
        );
        let mut allocations: HashMap<String, Vec<ClaimAllocation>> = HashMap::new();
        // Every filter plugin; a node the pod's claims fit keeps their allocation there.
        let mut filter = |node: &NodeInfo| {
            node_filters(&info, node)
                .and_then(|()| state.spread_filter(node))
                .and_then(|()| state.affinity_filter(node))
                .and_then(|()| {
                    if dra.is_empty() {
                        return Ok(());
                    }
                    let claims = dra.filter(node)?;
                    allocations.insert(node.name().to_string(), claims);
                    Ok(())
                })
        };
        let mut feasible = Vec::new();
        let mut rejected: Vec<(&NodeInfo, Rejection)> = Vec::new();
        let nodes: Vec<&NodeInfo> = cache.nodes().collect();
        // Upstream's evaluateNominatedNode: a preemption nominated the node it made room on,
        // likely the only one the pod fits, so it is tried alone first and taken if it passes
        // the filters, without a search (nor a sample, nor a move of where the next search
        // starts). One that no longer fits, or is gone, leaves the normal search to decide.
        // (Upstream's PreferNominatedNode gate is GA and gone: this is unconditional.)
        if let Some(node) = nominated_node(pod).and_then(|n| nodes.iter().find(|i| i.name() == n)) {
            if filter(node).is_ok() {
                feasible.push(*node);
            }
        }
        if feasible.is_empty() {
            let wanted = sampling::feasible_nodes_to_find(
                self.config.percentage_of_nodes_to_score,
                nodes.len(),
            );
            let start = self.next_start_node.load(Ordering::Relaxed) % nodes.len().max(1);
            let mut processed = 0;
            for node in nodes.iter().cycle().skip(start).take(nodes.len()).copied() {
                if feasible.len() >= wanted {
                    break;
                }
                processed += 1;
                match filter(node) {
                    Ok(()) => feasible.push(node),
                    Err(r) => rejected.push((node, r)),
                }
            }
            self.next_start_node
                .store((start + processed) % nodes.len().max(1), Ordering::Relaxed);
        }
        if feasible.is_empty() {
            let rejections: Vec<Rejection> = rejected.iter().map(|(_, r)| r.clone()).collect();
            if rejected.is_empty() {
                return Some(Decision::Unschedulable(
                    fit_error::message(&rejections, None),
                    Nomination::Keep,
                ));
            }
            // DefaultPreemption, the PostFilter plugin.
            if let Some(why) = preemption::ineligible(&info, &cache) {
                let message = fit_error::message(&rejections, Some(why));
                return Some(Decision::Unschedulable(message, Nomination::Keep));
            }
            return Some(match preemption::preempt(&info, &state, &rejected) {
                Ok(candidate) => {
                    Decision::Preempt(candidate, fit_error::message(&rejections, None))
                }
                Err(statuses) => {
                    let why = fit_error::preemption_failed(&statuses);
                    Decision::Unschedulable(
                        fit_error::message(&rejections, Some(&why)),
                        Nomination::Clear,
                    )
                }
            });
        }
        let scores = scores::score(&info, &feasible, &state);
        // Upstream's selectHost: the best score, ties broken at random.
        let best = scores.iter().copied().max().unwrap_or(0);
        let top: Vec<usize> = (0..scores.len()).filter(|i| scores[*i] == best).collect();
        let pick = top[rand::rng().random_range(0..top.len())];
        let node = feasible[pick].name().to_string();
        let claims = allocations.remove(&node).unwrap_or_default();
        // The devices are taken from now on, for the decisions that follow.
        {
            let mut assumed = lock(&self.assumed_devices);
            for c in &claims {
                if let Some(allocation) = &c.allocation {
                    assumed.insert(key_of(&c.claim), dra::devices_of(allocation));
                }
            }
        }
        let mut assumed = (**pod).clone();
        assumed["spec"]["nodeName"] = json!(node);
        cache.add_pod(Arc::new(assumed), true);
        Some(Decision::Assumed(node, claims))
    }
}
