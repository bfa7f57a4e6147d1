//! When a pod on a node with NoExecute taints must go (upstream's taint eviction controller):
//! at once if a taint is not tolerated, after the shortest `tolerationSeconds` of the
//! tolerations it relies on (counted from when the taint was added), never if they tolerate
//! it for ever.

use chrono::{DateTime, Duration, Utc};
use registry::object;
use serde_json::Value;

use client::component_helpers::tolerates;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    Never,
    Now,
    At(DateTime<Utc>),
}

/// The node's NoExecute taints, the only ones that evict.
pub fn no_execute_taints(node: &Value) -> Vec<&Value> {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["effect"] == "NoExecute")
        .collect()
}

pub fn eviction(pod: &Value, node: &Value, now: DateTime<Utc>) -> Eviction {
    let taints = no_execute_taints(node);
    if taints.is_empty() {
        return Eviction::Never;
    }
    let tolerations = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut shortest: Option<i64> = None;
    for taint in &taints {
        let used: Vec<&Value> = tolerations.iter().filter(|t| tolerates(t, taint)).collect();
        if used.is_empty() {
            return Eviction::Now;
        }
        for seconds in used.iter().filter_map(|t| t["tolerationSeconds"].as_i64()) {
            shortest = Some(shortest.map_or(seconds, |s| s.min(seconds)).max(0));
        }
    }
    let Some(seconds) = shortest else {
        return Eviction::Never;
    };
    let added = taints
        .iter()
        .filter_map(|t| t["timeAdded"].as_str().and_then(object::parse_time))
        .min()
        .unwrap_or(now);
    let at = added + Duration::seconds(seconds);
    if at <= now {
        Eviction::Now
    } else {
        Eviction::At(at)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node() -> Value {
        json!({"spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                                     "timeAdded": "2024-01-01T00:00:00Z"}]}})
    }

    fn pod(tolerations: Value) -> Value {
        json!({"spec": {"tolerations": tolerations}})
    }

    #[test]
    fn untolerated_goes_now_tolerated_for_a_while_later_for_ever_never() {
        let now = object::parse_time("2024-01-01T00:01:00Z").unwrap_or_default();
        assert_eq!(eviction(&pod(json!([])), &node(), now), Eviction::Now);
        let for_300 = json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                              "effect": "NoExecute", "tolerationSeconds": 300}]);
        assert_eq!(
            eviction(&pod(for_300), &node(), now),
            Eviction::At(object::parse_time("2024-01-01T00:05:00Z").unwrap_or_default())
        );
        let for_30 = json!([{"operator": "Exists", "tolerationSeconds": 30}]);
        assert_eq!(eviction(&pod(for_30), &node(), now), Eviction::Now);
        let for_ever = json!([{"operator": "Exists"}]);
        assert_eq!(eviction(&pod(for_ever), &node(), now), Eviction::Never);
        assert_eq!(eviction(&pod(json!([])), &json!({}), now), Eviction::Never);
    }
}
