//! Which pods go first when a ReplicaSet scales down (upstream's getPodsToDelete with
//! ActivePodsWithRanks): the pods that cost least to lose. In order, a pod goes before
//! another when it is unassigned (the other is on a node); Pending before Unknown before
//! Running; not ready; of lower `controller.kubernetes.io/pod-deletion-cost`; on a node
//! crowded with more related pods; ready for less time; restarted more; created later.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::PodPhase;
use serde_json::Value;

use client::controller_utils::pod_ready_since;

/// The annotation users set to steer scale-down (lower goes first).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The `count` pods of `pods` to delete. `related` are the pods whose placement counts when
/// spreading (the pods of every ReplicaSet with the same controller as this one).
pub fn pods_to_delete(
    pods: &[Arc<Value>],
    related: &[Arc<Value>],
    count: usize,
) -> Vec<Arc<Value>> {
    if count >= pods.len() {
        return pods.to_vec();
    }
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for pod in related {
        *on_node.entry(node_name(pod)).or_default() += 1;
    }
    let mut ranked: Vec<(usize, &Arc<Value>)> = pods
        .iter()
        .map(|pod| (on_node.get(node_name(pod)).copied().unwrap_or(0), pod))
        .collect();
    ranked.sort_by(|(rank_a, a), (rank_b, b)| compare(a, *rank_a, b, *rank_b));
    ranked
        .into_iter()
        .take(count)
        .map(|(_, pod)| pod.clone())
        .collect()
}

/// Less: `a` should be deleted before `b`. A rank is how many related pods share the node.
pub fn compare(a: &Value, rank_a: usize, b: &Value, rank_b: usize) -> Ordering {
    let assigned = |p: &Value| !node_name(p).is_empty();
    assigned(a)
        .cmp(&assigned(b))
        .then_with(|| phase_ordinal(a).cmp(&phase_ordinal(b)))
        .then_with(|| {
            let ready_a = pod_ready_since(a);
            let ready_b = pod_ready_since(b);
            ready_a
                .is_some()
                .cmp(&ready_b.is_some())
                .then_with(|| deletion_cost(a).cmp(&deletion_cost(b)))
                // More doubled up goes first.
                .then_with(|| rank_b.cmp(&rank_a))
                .then_with(|| match (ready_a, ready_b) {
                    (Some(since_a), Some(since_b)) => later_first(since_a, since_b),
                    _ => Ordering::Equal,
                })
        })
        .then_with(|| max_restarts(b).cmp(&max_restarts(a)))
        .then_with(|| later_first(created(a), created(b)))
}

fn node_name(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or_default()
}

/// Unscheduled or unknown phases order with Pending, as upstream's map lookup defaults them.
fn phase_ordinal(pod: &Value) -> u8 {
    match PodPhase::of(pod) {
        Some(PodPhase::Unknown) => 1,
        Some(PodPhase::Running) => 2,
        _ => 0,
    }
}

/// A malformed cost counts as 0, as upstream's helper treats it after logging.
fn deletion_cost(pod: &Value) -> i32 {
    pod["metadata"]["annotations"][POD_DELETION_COST]
        .as_str()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn max_restarts(pod: &Value) -> i64 {
    pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["restartCount"].as_i64())
        .max()
        .unwrap_or(0)
}

fn created(pod: &Value) -> Option<DateTime<Utc>> {
    pod["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(object::parse_time)
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

    fn pod(p: P) -> Arc<Value> {
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
        Arc::new(pod)
    }

    fn names(pods: &[Arc<Value>]) -> Vec<&str> {
        pods.iter().map(|p| object::name(p)).collect()
    }

    /// Each pair: the first goes before the second, and not the other way round.
    fn assert_before(first: P, second: P) {
        let (a, b) = (pod(first), pod(second));
        assert_eq!(
            compare(&a, 0, &b, 0),
            Ordering::Less,
            "{} before {}",
            object::name(&a),
            object::name(&b)
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
