//! PodDisruptionBudgets as the eviction subresource and the disruption controller read them
//! (upstream's k8s.io/component-helpers/apps/poddisruptionbudget and the PDB parts of
//! pkg/registry/core/pod/storage/eviction.go).

use serde_json::{json, Value};

use crate::error::{Cause, Qualified, RegistryError, Result};
use crate::object::{self, Object};
use crate::selector::labels::LabelSelector;

/// Upstream's DisruptionBudgetCause: the StatusCause type an eviction refused by a budget has.
pub const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";

/// More entries than this in status.disruptedPods means the disruption controller has fallen
/// behind; upstream refuses further evictions until it catches up.
pub const MAX_DISRUPTED_POD_SIZE: usize = 2000;

/// The budgets of `budgets` whose selector matches the pod's labels in its namespace. A
/// budget with a missing, empty or invalid selector matches nothing, as upstream.
pub fn matching_budgets<'a>(budgets: &'a [Object], pod: &Object) -> Vec<&'a Object> {
    let namespace = object::namespace(pod);
    budgets
        .iter()
        .filter(|pdb| object::namespace(pdb) == namespace)
        .filter(|pdb| {
            LabelSelector::from_label_selector_json(&pdb["spec"]["selector"]).is_ok_and(|s| {
                !s.is_empty() && !s.is_nothing() && s.matches_labels(object::labels(pod))
            })
        })
        .collect()
}

/// A `status.<field>` count (0 when unset, as Go's zero value).
pub fn status_count(pdb: &Object, field: &str) -> i64 {
    pdb["status"][field].as_i64().unwrap_or(0)
}

/// Whether the pod's Ready condition is True (upstream's IsPodReady).
pub fn is_pod_ready(pod: &Object) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// apimeta.SetStatusCondition: the transition time moves only when the status does.
pub fn set_status_condition(status: &mut Value, mut condition: Value) {
    if !status.is_object() {
        *status = json!({});
    }
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status["conditions"].as_array_mut() else {
        return;
    };
    match conditions
        .iter_mut()
        .find(|c| c["type"] == condition["type"])
    {
        Some(existing) => {
            condition["lastTransitionTime"] = if existing["status"] == condition["status"] {
                existing["lastTransitionTime"].clone()
            } else {
                json!(object::now())
            };
            *existing = condition;
        }
        None => {
            condition["lastTransitionTime"] = json!(object::now());
            conditions.push(condition);
        }
    }
}

/// Upstream's UpdateDisruptionAllowedCondition: DisruptionAllowed follows
/// status.disruptionsAllowed (SufficientPods when positive, InsufficientPods otherwise).
pub fn update_disruption_allowed_condition(pdb: &mut Object) {
    let allowed = status_count(pdb, "disruptionsAllowed") > 0;
    let observed = status_count(pdb, "observedGeneration");
    let (status, reason) = if allowed {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    set_status_condition(
        &mut pdb["status"],
        json!({
            "type": "DisruptionAllowed",
            "status": status,
            "reason": reason,
            "message": "",
            "observedGeneration": observed,
        }),
    );
}

/// The 429 of a budget the disruption controller has not looked at since its last change.
pub fn still_processing(pdb_name: &str) -> RegistryError {
    RegistryError::TooManyRequests {
        message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
        retry_after_seconds: 10,
        causes: vec![Cause::new(
            DISRUPTION_BUDGET_CAUSE,
            "",
            format!("The disruption budget {pdb_name} is still being processed by the server."),
        )],
    }
}

fn forbidden(pdb_name: &str, why: &str) -> RegistryError {
    RegistryError::forbidden(
        &Qualified::new("policy", "poddisruptionbudget"),
        pdb_name,
        why,
    )
}

/// Upstream's checkAndDecrement on the stored budget: refuses the eviction when the budget
/// allows no disruption (or is stale or broken); otherwise takes one disruption and records
/// the pod in status.disruptedPods so the controller does not count it as healthy meanwhile.
pub fn check_and_decrement(pdb: &mut Object, pod_name: &str) -> Result<()> {
    let name = object::name(pdb).to_string();
    if status_count(pdb, "observedGeneration") < object::generation(pdb) {
        return Err(still_processing(&name));
    }
    let allowed = status_count(pdb, "disruptionsAllowed");
    if allowed < 0 {
        return Err(forbidden(&name, "pdb disruptions allowed is negative"));
    }
    let disrupted = pdb["status"]["disruptedPods"]
        .as_object()
        .map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_POD_SIZE {
        return Err(forbidden(
            &name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(RegistryError::TooManyRequests {
            message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
            retry_after_seconds: 0,
            causes: vec![Cause::new(
                DISRUPTION_BUDGET_CAUSE,
                "",
                format!(
                    "The disruption budget {name} needs {} healthy pods and has {} currently",
                    status_count(pdb, "desiredHealthy"),
                    status_count(pdb, "currentHealthy"),
                ),
            )],
        });
    }
    pdb["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if allowed - 1 == 0 {
        update_disruption_allowed_condition(pdb);
    }
    if !pdb["status"]["disruptedPods"].is_object() {
        pdb["status"]["disruptedPods"] = json!({});
    }
    pdb["status"]["disruptedPods"][pod_name] = json!(object::now());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(allowed: i64) -> Object {
        json!({
            "metadata": {"name": "web", "namespace": "default", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                       "desiredHealthy": 2, "currentHealthy": 2},
        })
    }

    #[test]
    fn a_budget_with_room_takes_one_disruption_and_records_the_pod() {
        let mut pdb = budget(1);
        check_and_decrement(&mut pdb, "web-1").expect("allowed");
        assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
        assert!(pdb["status"]["disruptedPods"]["web-1"].is_string());
        assert_eq!(pdb["status"]["conditions"][0]["reason"], "InsufficientPods");
    }

    #[test]
    fn an_exhausted_budget_refuses_with_upstreams_cause() {
        let mut pdb = budget(0);
        let err = check_and_decrement(&mut pdb, "web-1").expect_err("refused");
        let status = err.status();
        assert_eq!(status.code, 429);
        let details = status.details.expect("details");
        assert_eq!(
            details.causes[0].message,
            "The disruption budget web needs 2 healthy pods and has 2 currently"
        );
        assert_eq!(details.retry_after_seconds, None);
    }

    #[test]
    fn empty_and_invalid_selectors_match_nothing() {
        let pod = json!({"metadata": {"namespace": "default", "labels": {"app": "web"}}});
        let mut empty = budget(1);
        empty["spec"]["selector"] = json!({});
        let mut other_ns = budget(1);
        other_ns["metadata"]["namespace"] = json!("other");
        let budgets = vec![budget(1), empty, other_ns];
        assert_eq!(matching_budgets(&budgets, &pod).len(), 1);
    }
}
