//! What reconciling one object means (upstream's computeReconciledRole and
//! computeReconciledRoleBinding): the default's missing labels, annotations, permissions,
//! aggregation selectors and subjects are added to what is there; a binding of another role
//! is made again; an object annotated autoupdate "false" is only reported.

use serde_json::{Map, Value};

use super::objects::AUTOUPDATE_ANNOTATION;
use super::rule::{rules_of, to_json, PolicyRule};
use crate::object;
use crate::rbac::covers::covers;
use crate::rbac::Subject;

pub(super) enum Plan {
    Nothing,
    /// The object as it must be written, and what that adds.
    Update(Value, String),
    Recreate,
    /// Differs, but autoupdate is "false": what is missing.
    Protected(String),
}

fn protected(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str)
        == Some("false")
}

/// Adds the default's labels and annotations the object lacks; its own values win.
fn merge_metadata(target: &mut Value, expected: &Value) -> bool {
    let mut changed = false;
    for field in ["labels", "annotations"] {
        let Some(wanted) = expected
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let meta = object::meta_mut(target);
        let have = meta
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()));
        if !have.is_object() {
            *have = Value::Object(Map::new());
        }
        if let Value::Object(have) = have {
            for (k, v) in wanted {
                if !have.contains_key(k) {
                    have.insert(k.clone(), v.clone());
                    changed = true;
                }
            }
        }
    }
    changed
}

fn selectors(role: &Value) -> Option<Vec<Value>> {
    let rule = role.get("aggregationRule").filter(|r| !r.is_null())?;
    Some(
        rule.get("clusterRoleSelectors")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    )
}

fn describe(rules: &[PolicyRule]) -> String {
    serde_json::to_string(rules).unwrap_or_default()
}

pub(super) fn plan_role(existing: &Value, expected: &Value) -> Plan {
    let mut role = existing.clone();
    let mut added = Vec::new();
    if merge_metadata(&mut role, expected) {
        added.push("labels or annotations".to_string());
    }
    let have = rules_of(existing.get("rules"));
    let (_, missing) = covers(&have, &rules_of(expected.get("rules")));
    if !missing.is_empty() {
        let mut rules = have;
        rules.extend(missing.iter().cloned());
        role["rules"] = Value::Array(rules.iter().map(to_json).collect());
        added.push(format!("additional permissions: {}", describe(&missing)));
    }
    match (selectors(expected), selectors(existing)) {
        (None, Some(_)) => {
            if let Value::Object(map) = &mut role {
                map.remove("aggregationRule");
            }
            added.push("no aggregation rule".to_string());
        }
        (Some(wanted), have) => {
            let have = have.unwrap_or_default();
            let missing: Vec<Value> = wanted.into_iter().filter(|s| !have.contains(s)).collect();
            if !missing.is_empty() {
                let mut all = have;
                all.extend(missing.iter().cloned());
                role["aggregationRule"] = serde_json::json!({"clusterRoleSelectors": all});
                added.push(format!(
                    "additional aggregation selectors: {}",
                    Value::Array(missing)
                ));
            }
        }
        (None, None) => {}
    }
    decide(existing, role, added)
}

fn decide(existing: &Value, updated: Value, added: Vec<String>) -> Plan {
    if added.is_empty() {
        Plan::Nothing
    } else if protected(existing) {
        Plan::Protected(added.join("; "))
    } else {
        Plan::Update(updated, added.join("; "))
    }
}

/// A binding's subjects, each as compared (field by field, as upstream) and as stored.
fn subjects(binding: &Value) -> Vec<(Subject, Value)> {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .map(|s| {
                    (
                        serde_json::from_value(s.clone()).unwrap_or_default(),
                        s.clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn plan_binding(existing: &Value, expected: &Value) -> Plan {
    let role_ref = |b: &Value| {
        let r = b.get("roleRef");
        ["apiGroup", "kind", "name"].map(|f| {
            r.and_then(|r| r.get(f))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
    };
    if role_ref(existing) != role_ref(expected) {
        return if protected(existing) {
            Plan::Protected("the default roleRef".to_string())
        } else {
            Plan::Recreate
        };
    }
    let mut binding = existing.clone();
    let mut added = Vec::new();
    if merge_metadata(&mut binding, expected) {
        added.push("labels or annotations".to_string());
    }
    let have = subjects(existing);
    let missing: Vec<Value> = subjects(expected)
        .into_iter()
        .filter(|(key, _)| !have.iter().any(|(k, _)| k == key))
        .map(|(_, s)| s)
        .collect();
    if !missing.is_empty() {
        let mut all: Vec<Value> = have.into_iter().map(|(_, s)| s).collect();
        all.extend(missing.iter().cloned());
        binding["subjects"] = Value::Array(all);
        added.push(format!("additional subjects: {}", Value::Array(missing)));
    }
    decide(existing, binding, added)
}
