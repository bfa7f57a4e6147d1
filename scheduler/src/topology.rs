//! The plugins that look at pods across nodes: PodTopologySpread (hard constraints filter,
//! soft ones score) and the required terms of InterPodAffinity, both in their own and in
//! existing pods' direction. Their PreFilter state is computed once per scheduling cycle.

use std::collections::{HashMap, HashSet};

use client::component_helpers::required_node_affinity_matches;
use registry::object;
use registry::selector::labels::LabelSelector;
use serde_json::Value;

use crate::cache::{Cache, NodeInfo, PodInfo};
use crate::filters::{FilterResult, Rejection};

struct Constraint {
    key: String,
    max_skew: i64,
    hard: bool,
    selector: LabelSelector,
    /// Whether the incoming pod itself matches (it will count where it lands).
    self_match: i64,
    counts: HashMap<String, i64>,
}

/// An affinity term resolved to the topology values where matching pods run.
struct Term {
    key: String,
    values: HashSet<String>,
}

#[derive(Default)]
pub struct TopologyState {
    constraints: Vec<Constraint>,
    affinity: Vec<Term>,
    /// No pod matches any affinity term, but the pod matches its own: it may go anywhere.
    affinity_self_satisfied: bool,
    anti_affinity: Vec<Term>,
    /// (topology key, value) pairs existing pods' anti-affinity forbids to this pod.
    forbidden: HashSet<(String, String)>,
}

fn selector(term: &Value) -> Option<LabelSelector> {
    LabelSelector::from_label_selector_json(&term["labelSelector"]).ok()
}

/// The namespaces an affinity term covers: its list, or the namespace of its pod.
fn term_matches(term: &Value, owner_ns: &str, candidate: &PodInfo) -> bool {
    let in_namespace = match term["namespaces"].as_array() {
        Some(list) if !list.is_empty() => list.iter().any(|n| n == candidate.namespace()),
        _ => term["namespaceSelector"].is_object() || candidate.namespace() == owner_ns,
    };
    in_namespace
        && term["labelSelector"].is_object()
        && selector(term).is_some_and(|s| s.matches_labels(candidate.labels()))
}

fn counted(pod: &PodInfo) -> bool {
    object::deletion_timestamp(&pod.pod).is_none()
}

impl TopologyState {
    pub fn compute(pod: &PodInfo, cache: &Cache) -> Self {
        let mut state = Self::default();
        state.spread(pod, cache);
        state.affinities(pod, cache);
        state
    }

    fn spread(&mut self, pod: &PodInfo, cache: &Cache) {
        let Some(list) = pod.pod["spec"]["topologySpreadConstraints"].as_array() else {
            return;
        };
        for c in list {
            let (Some(key), Some(selector)) = (c["topologyKey"].as_str(), selector(c)) else {
                continue;
            };
            let mut constraint = Constraint {
                key: key.to_string(),
                max_skew: c["maxSkew"].as_i64().unwrap_or(1).max(1),
                hard: c["whenUnsatisfiable"].as_str() != Some("ScheduleAnyway"),
                self_match: i64::from(selector.matches_labels(pod.labels())),
                selector,
                counts: HashMap::new(),
            };
            // Domains come from the nodes the pod's node affinity allows (nodeAffinityPolicy
            // Honor, the default).
            for node in cache.nodes() {
                let (Some(object), Some(value)) = (node.node.as_deref(), node.label(key)) else {
                    continue;
                };
                if !required_node_affinity_matches(&pod.pod, object) {
                    continue;
                }
                let n = node
                    .pods
                    .values()
                    .filter(|p| {
                        counted(p)
                            && p.namespace() == pod.namespace()
                            && constraint.selector.matches_labels(p.labels())
                    })
                    .count() as i64;
                *constraint.counts.entry(value.to_string()).or_default() += n;
            }
            self.constraints.push(constraint);
        }
    }

    fn affinities(&mut self, pod: &PodInfo, cache: &Cache) {
        let own_ns = pod.namespace().to_string();
        let resolve = |terms: &[Value]| -> Vec<Term> {
            terms
                .iter()
                .map(|term| {
                    let key = term["topologyKey"].as_str().unwrap_or_default().to_string();
                    let values = cache
                        .nodes()
                        .filter(|n| {
                            n.pods
                                .values()
                                .any(|p| counted(p) && term_matches(term, &own_ns, p))
                        })
                        .filter_map(|n| n.label(&key).map(str::to_string))
                        .collect();
                    Term { key, values }
                })
                .collect()
        };
        let affinity_terms = pod.required_terms("podAffinity");
        self.affinity = resolve(affinity_terms);
        self.affinity_self_satisfied = !affinity_terms.is_empty()
            && self.affinity.iter().all(|t| t.values.is_empty())
            && affinity_terms.iter().all(|t| term_matches(t, &own_ns, pod));
        self.anti_affinity = resolve(pod.required_terms("podAntiAffinity"));
        for node in cache.nodes() {
            let existing_pods = node.with_required_anti_affinity.values();
            for existing in existing_pods.filter(|p| counted(p)) {
                for term in existing.required_terms("podAntiAffinity") {
                    let key = term["topologyKey"].as_str().unwrap_or_default();
                    if let Some(value) = node.label(key) {
                        if term_matches(term, existing.namespace(), pod) {
                            self.forbidden.insert((key.to_string(), value.to_string()));
                        }
                    }
                }
            }
        }
    }

    /// PodTopologySpread's filter (DoNotSchedule constraints).
    pub fn spread_filter(&self, node: &NodeInfo) -> FilterResult {
        for c in self.constraints.iter().filter(|c| c.hard) {
            let Some(value) = node.label(&c.key) else {
                return Err(Rejection::unresolvable(
                    "node(s) didn't match pod topology spread constraints (missing required label)",
                ));
            };
            let min = c.counts.values().copied().min().unwrap_or(0);
            let here = c.counts.get(value).copied().unwrap_or(0);
            if here + c.self_match - min > c.max_skew {
                return Err(Rejection::resolvable(vec![
                    "node(s) didn't match pod topology spread constraints".into(),
                ]));
            }
        }
        Ok(())
    }

    /// InterPodAffinity's filter.
    pub fn affinity_filter(&self, node: &NodeInfo) -> FilterResult {
        let in_any = |terms: &[Term]| {
            terms
                .iter()
                .any(|t| node.label(&t.key).is_some_and(|v| t.values.contains(v)))
        };
        let existing_forbids = self.forbidden.iter().any(|(k, v)| node.label(k) == Some(v));
        if existing_forbids {
            return Err(Rejection::resolvable(vec![
                "node(s) didn't satisfy existing pods anti-affinity rules".into(),
            ]));
        }
        if !self.affinity_self_satisfied {
            let all = self
                .affinity
                .iter()
                .all(|t| node.label(&t.key).is_some_and(|v| t.values.contains(v)));
            if !all {
                return Err(Rejection::unresolvable(
                    "node(s) didn't match pod affinity rules",
                ));
            }
        }
        if in_any(&self.anti_affinity) {
            return Err(Rejection::resolvable(vec![
                "node(s) didn't match pod anti-affinity rules".into(),
            ]));
        }
        Ok(())
    }

    /// PodTopologySpread's raw score (ScheduleAnyway constraints): matching pods already in
    /// the node's domains; fewer is better.
    pub fn spread_score(&self, node: &NodeInfo) -> Option<i64> {
        let soft: Vec<&Constraint> = self.constraints.iter().filter(|c| !c.hard).collect();
        if soft.is_empty() {
            return None;
        }
        Some(
            soft.iter()
                .map(|c| {
                    node.label(&c.key)
                        .and_then(|v| c.counts.get(v).copied())
                        .unwrap_or(0)
                })
                .sum(),
        )
    }
}
