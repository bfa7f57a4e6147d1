//! Resource quota accounting shared by the ResourceQuota admission plugin and the resource
//! quota controller (upstream's k8s.io/apiserver/pkg/quota/v1 and pkg/quota/v1/evaluator):
//! resource lists with exact arithmetic, and the evaluators that say what an object of a
//! resource costs and which quotas it counts against.

mod evaluators;
mod quantity;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

pub use evaluators::{resource_for, Evaluator, ScopeSelector};
pub use quantity::Quantity;

/// A resource list (corev1.ResourceList), by name.
pub type ResourceList = BTreeMap<String, Quantity>;

/// A JSON resource list (`spec.hard`, `status.used`); values that are not quantities are
/// left out, as they never pass validation.
pub fn parse_list(value: Option<&Value>) -> ResourceList {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON form, each quantity canonical.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.to_string())))
            .collect::<Map<String, Value>>(),
    )
}

pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, v) in b {
        out.entry(k.clone()).or_default().add(v);
    }
    out
}

/// a − b, where a negative result is zero (upstream's SubtractWithNonNegativeResult).
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, v) in b {
        let entry = out.entry(k.clone()).or_default();
        entry.sub(v);
        if entry.is_negative() {
            *entry = Quantity::default();
        }
    }
    out
}

/// Only the entries named.
pub fn mask(list: &ResourceList, names: &BTreeSet<String>) -> ResourceList {
    list.iter()
        .filter(|(k, _)| names.contains(*k))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

pub fn names(list: &ResourceList) -> BTreeSet<String> {
    list.keys().cloned().collect()
}

pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter()
        .filter(|(_, v)| !v.is_zero())
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// Whether every entry of `a` is at most `b`'s (entries `b` lacks are not limited), and the
/// names that are not.
pub fn less_than_or_equal(a: &ResourceList, b: &ResourceList) -> (bool, BTreeSet<String>) {
    let exceeded: BTreeSet<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k).is_some_and(|limit| *v > limit))
        .map(|(k, _)| k.clone())
        .collect();
    (exceeded.is_empty(), exceeded)
}

/// Upstream's equality of resource lists: the same names with equal quantities.
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v))
}

/// `name=value` pairs by name, comma-separated (the admission plugin's prettyPrint).
pub fn pretty_print(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The object-count name of a resource (`count/pods`, `count/deployments.apps`).
pub fn object_count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

/// The scope selectors a quota applies: its `scopes` (as Exists) and its `scopeSelector`.
pub fn scope_selectors(quota: &Value) -> Vec<ScopeSelector> {
    let mut out: Vec<ScopeSelector> = quota["spec"]["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|scope| ScopeSelector {
            scope: scope.to_string(),
            operator: "Exists".into(),
            values: Vec::new(),
        })
        .collect();
    out.extend(
        quota["spec"]["scopeSelector"]["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(ScopeSelector::from_json),
    );
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn list_arithmetic_is_upstreams() {
        let used = parse_list(Some(&json!({"pods": "2", "requests.cpu": "500m"})));
        let delta = parse_list(Some(&json!({"pods": "1", "requests.cpu": "1500m"})));
        let sum = add(&used, &delta);
        assert_eq!(pretty_print(&sum), "pods=3,requests.cpu=2");
        let hard = parse_list(Some(&json!({"pods": "3", "requests.cpu": "1"})));
        let (ok, exceeded) = less_than_or_equal(&sum, &hard);
        assert!(!ok);
        assert_eq!(exceeded.into_iter().collect::<Vec<_>>(), ["requests.cpu"]);
        let back = subtract_non_negative(&delta, &sum);
        assert!(remove_zeros(&back).is_empty());
        assert_eq!(to_json(&sum), json!({"pods": "3", "requests.cpu": "2"}));
        assert!(equals(&sum, &parse_list(Some(&to_json(&sum)))));
        assert_eq!(
            object_count_name("apps", "deployments"),
            "count/deployments.apps"
        );
    }
}
