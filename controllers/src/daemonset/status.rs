//! A DaemonSet's status from its nodes and pods (upstream's updateDaemonSetStatus): how many
//! nodes should run a daemon pod, how many do, run it where they should not, run a ready,
//! available or up-to-date one.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use registry::object;
use serde_json::{json, Value};

use super::placement::{is_pod_updated, node_should_run, template_generation};
use client::controller_utils::{is_pod_available, is_pod_ready};

/// Daemon pods by the node they are for.
pub type NodePods = HashMap<String, Vec<Arc<Value>>>;

/// Bound pods first, then oldest first, then by name (upstream's
/// podByCreationTimestampAndPhase): the first of a node's pods is the one that counts.
pub fn by_creation_and_phase(a: &Value, b: &Value) -> Ordering {
    let bound = |p: &Value| {
        p["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    };
    bound(b)
        .cmp(&bound(a))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| object::name(a).cmp(object::name(b)))
}

fn created(pod: &Value) -> Option<DateTime<Utc>> {
    pod["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(object::parse_time)
}

pub fn min_ready_seconds(ds: &Value) -> i64 {
    ds["spec"]["minReadySeconds"].as_i64().unwrap_or(0)
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub desired: i64,
    pub current: i64,
    pub misscheduled: i64,
    pub ready: i64,
    pub available: i64,
    pub updated: i64,
}

pub fn counts(
    ds: &Value,
    nodes: &[Arc<Value>],
    node_pods: &NodePods,
    hash: &str,
    now: DateTime<Utc>,
) -> Counts {
    let generation = template_generation(ds);
    let min_ready = min_ready_seconds(ds);
    let mut c = Counts::default();
    for node in nodes {
        let (should_run, _) = node_should_run(node, ds);
        let pods = node_pods
            .get(object::name(node))
            .filter(|pods| !pods.is_empty());
        match (should_run, pods) {
            (true, None) => c.desired += 1,
            (true, Some(pods)) => {
                c.desired += 1;
                c.current += 1;
                let Some(pod) = pods.iter().min_by(|a, b| by_creation_and_phase(a, b)) else {
                    continue;
                };
                if is_pod_ready(pod) {
                    c.ready += 1;
                    c.available += i64::from(is_pod_available(pod, min_ready, now));
                }
                c.updated += i64::from(is_pod_updated(pod, hash, generation));
            }
            (false, Some(_)) => c.misscheduled += 1,
            (false, None) => {}
        }
    }
    c
}

/// The status `ds` should have (fields it does not compute, such as conditions and
/// collisionCount, are kept).
pub fn next_status(ds: &Value, c: Counts) -> Value {
    let mut status = ds["status"].as_object().cloned().unwrap_or_default();
    for (field, value) in [
        ("desiredNumberScheduled", c.desired),
        ("currentNumberScheduled", c.current),
        ("numberMisscheduled", c.misscheduled),
        ("numberReady", c.ready),
        ("updatedNumberScheduled", c.updated),
        ("numberAvailable", c.available),
        ("numberUnavailable", c.desired - c.available),
        ("observedGeneration", object::generation(ds)),
    ] {
        status.insert(field.into(), json!(value));
    }
    // Zero counts are omitted, as upstream's omitempty on the optional ones.
    for field in [
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
    ] {
        if status.get(field) == Some(&json!(0)) {
            status.remove(field);
        }
    }
    Value::Object(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, created: &str, ready_since: Option<&str>, hash: &str) -> Arc<Value> {
        let conditions = ready_since.map_or(
            json!([]),
            |t| json!([{"type": "Ready", "status": "True", "lastTransitionTime": t}]),
        );
        Arc::new(json!({
            "metadata": {"name": name, "creationTimestamp": created,
                         "labels": {"controller-revision-hash": hash}},
            "spec": {}, "status": {"conditions": conditions}}))
    }

    #[test]
    fn counts_the_oldest_pod_of_each_node() {
        let ds = json!({"metadata": {"generation": 4}, "spec": {"minReadySeconds": 10,
            "template": {"spec": {"nodeSelector": {"run": "yes"}}}}});
        let node = |name: &str, run: &str| {
            Arc::new(json!({"metadata": {"name": name, "labels": {"run": run}}}))
        };
        let nodes = vec![
            node("a", "yes"),
            node("b", "yes"),
            node("c", "yes"),
            node("d", "no"),
        ];
        let now: DateTime<Utc> = "2024-01-01T00:01:00Z".parse().unwrap_or_default();
        let mut map = NodePods::new();
        map.insert(
            "a".into(),
            vec![
                pod("a2", "2024-01-01T00:00:30Z", None, "new"),
                pod(
                    "a1",
                    "2024-01-01T00:00:00Z",
                    Some("2024-01-01T00:00:00Z"),
                    "new",
                ),
            ],
        );
        map.insert(
            "b".into(),
            vec![pod(
                "b1",
                "2024-01-01T00:00:00Z",
                Some("2024-01-01T00:00:55Z"),
                "old",
            )],
        );
        map.insert(
            "d".into(),
            vec![pod("d1", "2024-01-01T00:00:00Z", None, "new")],
        );
        let c = counts(&ds, &nodes, &map, "new", now);
        assert_eq!(
            c,
            Counts {
                desired: 3,
                current: 2,
                misscheduled: 1,
                ready: 2,
                available: 1,
                updated: 1,
            }
        );
        let status = next_status(&ds, c);
        assert_eq!(status["numberUnavailable"], 2);
        assert_eq!(status["observedGeneration"], 4);
    }
}
