//! Which pods go first when a ReplicaSet scales down (upstream's getPodsToDelete with
//! ActivePodsWithRanks): the pods that cost least to lose. In order, a pod goes before
//! another when it is unassigned (the other is on a node); Pending before Unknown before
//! Running; not ready; of lower `controller.kubernetes.io/pod-deletion-cost`; on a node
//! crowded with more related pods; ready for less time; restarted more; created later.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use registry::types::PodPhase;

use client::controller_utils::PodView;
pub use client::controller_utils::POD_DELETION_COST;

/// The `count` pods of `pods` to delete. `related` are the pods whose placement counts when
/// spreading (the pods of every ReplicaSet with the same controller as this one).
pub fn pods_to_delete(
    pods: &[Arc<PodView>],
    related: &[Arc<PodView>],
    count: usize,
) -> Vec<Arc<PodView>> {
    if count >= pods.len() {
        return pods.to_vec();
    }
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for pod in related {
        *on_node.entry(pod.node_name()).or_default() += 1;
    }
    let mut ranked: Vec<(usize, &Arc<PodView>)> = pods
        .iter()
        .map(|pod| (on_node.get(pod.node_name()).copied().unwrap_or(0), pod))
        .collect();
    ranked.sort_by(|(rank_a, a), (rank_b, b)| compare(a, *rank_a, b, *rank_b));
    ranked
        .into_iter()
        .take(count)
        .map(|(_, pod)| pod.clone())
        .collect()
}

/// Less: `a` should be deleted before `b`. A rank is how many related pods share the node.
pub fn compare(a: &PodView, rank_a: usize, b: &PodView, rank_b: usize) -> Ordering {
    let assigned = |p: &PodView| !p.node_name().is_empty();
    assigned(a)
        .cmp(&assigned(b))
        .then_with(|| phase_ordinal(a).cmp(&phase_ordinal(b)))
        .then_with(|| {
            let ready_a = a.ready_since();
            let ready_b = b.ready_since();
            ready_a
                .is_some()
                .cmp(&ready_b.is_some())
                .then_with(|| a.deletion_cost().cmp(&b.deletion_cost()))
                // More doubled up goes first.
                .then_with(|| rank_b.cmp(&rank_a))
                .then_with(|| match (ready_a, ready_b) {
                    (Some(since_a), Some(since_b)) => later_first(since_a, since_b),
                    _ => Ordering::Equal,
                })
        })
        .then_with(|| b.max_restarts().cmp(&a.max_restarts()))
        .then_with(|| later_first(a.created(), b.created()))
}

/// Unscheduled or unknown phases order with Pending, as upstream's map lookup defaults them.
fn phase_ordinal(pod: &PodView) -> u8 {
    match pod.phase() {
        Some(PodPhase::Unknown) => 1,
        Some(PodPhase::Running) => 2,
        _ => 0,
    }
}

/// Later times first; an unknown time counts as the latest of all (upstream's afterOrZero).
fn later_first(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => b.cmp(&a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    struct P {
        name: &'static str,
        node: &'static str,
        phase: &'static str,
        ready_since: Option<&'static str>,
        restarts: i64,
        created: &'static str,
        cost: Option<&'static str>,
    }

    impl Default for P {
        fn default() -> Self {
            Self {
                name: "",
                node: "n1",
                phase: "Running",
                ready_since: Some("2024-01-01T00:00:00Z"),
                restarts: 0,
                created: "2023-12-31T00:00:00Z",
                cost: None,
            }
        }
    }

    fn pod(p: P) -> Arc<PodView> {
        let mut pod = json!({
            "metadata": {"name": p.name, "creationTimestamp": p.created},
            "spec": {"nodeName": p.node},
            "status": {"phase": p.phase,
                       "containerStatuses": [{"name": "c", "restartCount": p.restarts}]},
        });
        if let Some(since) = p.ready_since {
            pod["status"]["conditions"] =
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": since}]);
        }
        if let Some(cost) = p.cost {
            pod["metadata"]["annotations"] = json!({ POD_DELETION_COST: cost });
        }
        Arc::new(PodView::of(&pod))
    }

    fn names(pods: &[Arc<PodView>]) -> Vec<&str> {
        pods.iter().map(|p| p.name()).collect()
    }

    /// Each pair: the first goes before the second, and not the other way round.
    fn assert_before(first: P, second: P) {
        let (a, b) = (pod(first), pod(second));
        assert_eq!(
            compare(&a, 0, &b, 0),
            Ordering::Less,
            "{} before {}",
            a.name(),
            b.name()
        );
        assert_eq!(compare(&b, 0, &a, 0), Ordering::Greater);
    }

    #[test]
    fn each_criterion_in_turn() {
        assert_before(
            P {
                name: "unassigned",
                node: "",
                ..P::default()
            },
            P {
                name: "assigned",
                ..P::default()
            },
        );
        assert_before(
            P {
                name: "pending",
                phase: "Pending",
                ready_since: None,
                ..P::default()
            },
            P {
                name: "unknown",
                phase: "Unknown",
                ready_since: None,
                ..P::default()
            },
        );
        assert_before(
            P {
                name: "unknown",
                phase: "Unknown",
                ..P::default()
            },
            P {
                name: "running",
                ..P::default()
            },
        );
        assert_before(
            P {
                name: "not-ready",
                ready_since: None,
                ..P::default()
            },
            P {
                name: "ready",
                ..P::default()
            },
        );
        assert_before(
            P {
                name: "cheap",
                cost: Some("-5"),
                ..P::default()
            },
            P {
                name: "dear",
                cost: Some("10"),
                ..P::default()
            },
        );
        assert_before(
            P {
                name: "ready-lately",
                ready_since: Some("2024-01-02T00:00:00Z"),
                ..P::default()
            },
            P {
                name: "ready-long",
                ..P::default()
            },
        );
        assert_before(
            P {
                name: "restarted",
                restarts: 3,
                ..P::default()
            },
            P {
                name: "steady",
                ..P::default()
            },
        );
        assert_before(
            P {
                name: "newer",
                created: "2024-01-01T00:00:00Z",
                ..P::default()
            },
            P {
                name: "older",
                ..P::default()
            },
        );
        // Earlier criteria win over later ones.
        assert_before(
            P {
                name: "unassigned-old",
                node: "",
                restarts: 0,
                ..P::default()
            },
            P {
                name: "assigned-restarted-new",
                restarts: 9,
                created: "2024-06-01T00:00:00Z",
                ..P::default()
            },
        );
    }

    #[test]
    fn crowded_nodes_go_first_among_equals() {
        let a = pod(P {
            name: "a",
            node: "crowded",
            ..P::default()
        });
        let b = pod(P {
            name: "b",
            node: "quiet",
            ..P::default()
        });
        let c = pod(P {
            name: "c",
            node: "crowded",
            ..P::default()
        });
        let chosen = pods_to_delete(&[b.clone(), a.clone()], &[a, b, c], 1);
        assert_eq!(names(&chosen), ["a"]);
    }

    #[test]
    fn picks_the_lowest_ranked_and_all_when_asked_for_all() {
        let pods = vec![
            pod(P {
                name: "ready",
                ..P::default()
            }),
            pod(P {
                name: "pending",
                phase: "Pending",
                ready_since: None,
                ..P::default()
            }),
            pod(P {
                name: "not-ready",
                ready_since: None,
                ..P::default()
            }),
            pod(P {
                name: "unassigned",
                node: "",
                phase: "Pending",
                ready_since: None,
                ..P::default()
            }),
        ];
        assert_eq!(
            names(&pods_to_delete(&pods, &pods, 3)),
            ["unassigned", "pending", "not-ready"]
        );
        assert_eq!(pods_to_delete(&pods, &pods, 9).len(), 4);
    }
}
