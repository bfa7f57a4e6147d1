//! The RollingUpdate strategy (upstream's rollingUpdate in daemon/update.go): which old pods
//! to delete and which nodes get a new pod this step, within maxUnavailable or, with
//! maxSurge, by starting the new pod beside the old one and deleting the old one once the
//! new one is available. The manage step then creates what is missing.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use registry::object;
use registry::types::UpdateStrategyType;
use serde_json::Value;

use super::placement::{is_pod_updated, node_should_run, template_generation};
use super::status::{min_ready_seconds, NodePods};
use crate::deployment::util::replicas::scaled_value;
use client::controller_utils::is_pod_available;

/// (maxSurge, maxUnavailable) for `desired` nodes (upstream's updatedDesiredNodeCounts):
/// percentages round up, and with both zero one node may be unavailable.
pub fn surge_and_unavailable(ds: &Value, desired: i32) -> Result<(i32, i32), String> {
    let strategy = &ds["spec"]["updateStrategy"];
    if UpdateStrategyType::from_value(&strategy["type"]) != Some(UpdateStrategyType::RollingUpdate)
    {
        return Ok((0, 0));
    }
    let rolling = &strategy["rollingUpdate"];
    let surge = scaled_value(&rolling["maxSurge"], desired, true)?;
    let unavailable = match &rolling["maxUnavailable"] {
        Value::Null => 1,
        v => scaled_value(v, desired, true)?,
    };
    Ok(if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    })
}

/// The live pods of a node made from the current template and from an older one; None when
/// there is more than one of either (the manage step removes the extra ones first).
fn updated_and_old<'a>(
    pods: &'a [Arc<Value>],
    hash: &str,
    generation: Option<i64>,
) -> Option<(Option<&'a Value>, Option<&'a Value>)> {
    let (mut new, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|p| object::deletion_timestamp(p).is_none())
    {
        let slot = if is_pod_updated(pod, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod.as_ref());
    }
    Some((new, old))
}

/// What one rolling-update step does: pods to delete, nodes to create a pod on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub delete: Vec<String>,
    pub create: Vec<String>,
}

pub fn rolling_update_step(
    ds: &Value,
    nodes: &[Arc<Value>],
    node_pods: &NodePods,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<Step, String> {
    let mut node_pods = node_pods.clone();
    let mut desired = 0;
    for node in nodes {
        if node_should_run(node, ds).0 {
            desired += 1;
            node_pods.entry(object::name(node).to_string()).or_default();
        }
    }
    let (max_surge, max_unavailable) = surge_and_unavailable(ds, desired)?;
    let generation = template_generation(ds);
    let min_ready = min_ready_seconds(ds);
    let available = |pod: &Value| is_pod_available(pod, min_ready, now);
    // Deterministic order, so the same nodes go first on every sync.
    let mut names: Vec<&String> = node_pods.keys().collect();
    names.sort();
    let mut step = Step::default();
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut must_replace = Vec::new();
        let mut candidates = Vec::new();
        for name in names {
            let Some((new, old)) = updated_and_old(&node_pods[name], hash, generation) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(new), None) => unavailable += i32::from(!available(new)),
                (None, Some(old)) if !available(old) => must_replace.push(object::name(old)),
                (None, Some(_)) if unavailable >= max_unavailable => {}
                (None, Some(old)) => candidates.push(object::name(old)),
            }
        }
        let room = (max_unavailable - unavailable).clamp(0, candidates.len() as i32) as usize;
        step.delete = must_replace
            .into_iter()
            .chain(candidates.into_iter().take(room))
            .map(str::to_string)
            .collect();
        return Ok(step);
    }
    let mut surged = 0;
    let mut must_surge = Vec::new();
    let mut candidates = Vec::new();
    for name in names {
        let Some((new, old)) = updated_and_old(&node_pods[name], hash, generation) else {
            surged += 1;
            continue;
        };
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) if !available(old) => {
                let runs = nodes
                    .iter()
                    .find(|n| object::name(n) == name.as_str())
                    .is_some_and(|n| node_should_run(n, ds).0);
                if runs {
                    must_surge.push(name.clone());
                }
            }
            (None, Some(_)) if surged >= max_surge => {}
            (None, Some(_)) => candidates.push(name.clone()),
            (Some(new), Some(_)) if !available(new) => surged += 1,
            (Some(_), Some(old)) => step.delete.push(object::name(old).to_string()),
        }
    }
    let room = (max_surge - surged).clamp(0, candidates.len() as i32) as usize;
    step.create = must_surge
        .into_iter()
        .chain(candidates.into_iter().take(room))
        .collect();
    Ok(step)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ds(rolling: Value) -> Value {
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
                        "template": {"spec": {}}}})
    }

    fn setup(n: usize) -> (Vec<Arc<Value>>, NodePods) {
        let mut nodes = Vec::new();
        let mut map = NodePods::new();
        for i in 0..n {
            let name = format!("n{i}");
            nodes.push(Arc::new(json!({"metadata": {"name": name}})));
            map.insert(
                name.clone(),
                vec![Arc::new(json!({
                    "metadata": {"name": format!("old-{i}"),
                                 "labels": {"controller-revision-hash": "old"}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}))],
            );
        }
        (nodes, map)
    }

    #[test]
    fn percentages_round_up_and_zero_means_one() {
        let d = ds(json!({"maxUnavailable": "10%", "maxSurge": 0}));
        assert_eq!(surge_and_unavailable(&d, 15), Ok((0, 2)));
        let d = ds(json!({"maxUnavailable": 0, "maxSurge": "25%"}));
        assert_eq!(surge_and_unavailable(&d, 5), Ok((2, 0)));
        let d = ds(json!({"maxUnavailable": 0, "maxSurge": 0}));
        assert_eq!(surge_and_unavailable(&d, 5), Ok((0, 1)));
        let on_delete = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        assert_eq!(surge_and_unavailable(&on_delete, 5), Ok((0, 0)));
    }

    #[test]
    fn without_surge_old_pods_go_within_max_unavailable() {
        let (nodes, map) = setup(4);
        let d = ds(json!({"maxUnavailable": 2, "maxSurge": 0}));
        let step = rolling_update_step(&d, &nodes, &map, "new", Utc::now());
        assert_eq!(
            step,
            Ok(Step {
                delete: vec!["old-0".into(), "old-1".into()],
                create: vec![]
            })
        );
        // A node already without a pod counts as unavailable.
        let mut missing = map.clone();
        missing.insert("n0".into(), vec![]);
        let step = rolling_update_step(&d, &nodes, &missing, "new", Utc::now());
        assert_eq!(step.map(|s| s.delete), Ok(vec!["old-1".to_string()]));
    }

    #[test]
    fn with_surge_new_pods_start_beside_old_ones() {
        let (nodes, mut map) = setup(3);
        let d = ds(json!({"maxUnavailable": 0, "maxSurge": 1}));
        let step = rolling_update_step(&d, &nodes, &map, "new", Utc::now());
        assert_eq!(step.map(|s| s.create), Ok(vec!["n0".to_string()]));
        // The new pod on n0 is ready: its old pod goes, and the next node surges.
        if let Some(pods) = map.get_mut("n0") {
            pods.push(Arc::new(json!({
                "metadata": {"name": "new-0", "labels": {"controller-revision-hash": "new"}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}})));
        }
        let step = rolling_update_step(&d, &nodes, &map, "new", Utc::now());
        assert_eq!(
            step,
            Ok(Step {
                delete: vec!["old-0".into()],
                create: vec!["n1".into()]
            })
        );
    }
}
