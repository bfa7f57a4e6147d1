//! PodDisruptionBudgets (policy/v1; upstream's pkg/registry/policy/poddisruptionbudget and
//! ValidatePodDisruptionBudgetSpec): minAvailable or maxUnavailable as an int or a percentage,
//! a valid selector, a known unhealthyPodEvictionPolicy; the status counts are never negative.

use serde_json::Value;

use super::status;
use super::template::{at_most_100_percent, int_or_percent};
use crate::error::Cause;
use crate::go_fmt;
use crate::selector::labels::LabelSelector;
use crate::strategy::{at, Strategy};

pub struct PodDisruptionBudgetStrategy;

const EVICTION_POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];

fn validate_budget(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = &obj["spec"];
    let set = |field: &str| Some(&spec[field]).filter(|v| !v.is_null());
    if let (Some(_), Some(_)) = (set("minAvailable"), set("maxUnavailable")) {
        causes.push(Cause::invalid(
            "spec",
            spec,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for field in ["minAvailable", "maxUnavailable"] {
        if let Some(value) = set(field) {
            let path = format!("spec.{field}");
            if !value.is_string() && value.as_i64().is_none() {
                causes.push(Cause::invalid(
                    &path,
                    value,
                    "must be an integer or percentage (e.g '5%')",
                ));
                continue;
            }
            causes.extend(int_or_percent(value, &path));
            causes.extend(at_most_100_percent(value, &path));
        }
    }
    if let Some(selector) = at(obj, &["spec", "selector"]).filter(|s| !s.is_null()) {
        if let Err(e) = LabelSelector::from_label_selector_json(selector) {
            causes.push(Cause::invalid(
                "spec.selector",
                go_fmt::label_selector(selector),
                e.message(),
            ));
        }
    }
    if let Some(policy) = set("unhealthyPodEvictionPolicy") {
        let policy = policy.as_str().unwrap_or_default();
        if !EVICTION_POLICIES.contains(&policy) {
            causes.push(Cause::not_supported(
                "spec.unhealthyPodEvictionPolicy",
                policy,
                EVICTION_POLICIES,
            ));
        }
    }
    causes
}

impl Strategy for PodDisruptionBudgetStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        validate_budget(obj)
    }

    fn validate_status_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        status::nonnegative_counts(
            new,
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(obj: Value) -> Vec<String> {
        validate_budget(&obj).into_iter().map(|c| c.field).collect()
    }

    #[test]
    fn both_bounds_bad_percentages_and_unknown_policies_are_refused() {
        let both = json!({"spec": {"minAvailable": 1, "maxUnavailable": "10%"}});
        assert_eq!(fields(both), ["spec"]);
        let bad = json!({"spec": {"minAvailable": "ten", "maxUnavailable": null}});
        assert_eq!(fields(bad), ["spec.minAvailable"]);
        let over = json!({"spec": {"maxUnavailable": "150%"}});
        assert_eq!(fields(over), ["spec.maxUnavailable"]);
        let negative = json!({"spec": {"minAvailable": -1}});
        assert_eq!(fields(negative), ["spec.minAvailable"]);
        let policy = json!({"spec": {"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"}});
        assert_eq!(fields(policy), ["spec.unhealthyPodEvictionPolicy"]);
    }

    #[test]
    fn a_plain_budget_is_valid() {
        let ok = json!({"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}},
                                 "unhealthyPodEvictionPolicy": "AlwaysAllow"}});
        assert!(fields(ok).is_empty());
    }
}
