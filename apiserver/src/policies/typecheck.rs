//! `status.typeChecking` of ValidatingAdmissionPolicies (upstream's validating.TypeChecker and
//! the policy status controller): when a policy's generation is new, each validation's
//! `expression` and `messageExpression` are type-checked against the schema of every kind its
//! `matchConstraints` name explicitly (no wildcard group, version or resource, no
//! subresource; at most ten kinds; `params` typed by the paramKind's schema), and what is
//! found is written with the generation through the status subresource. Findings are
//! warnings only: the policy acts as written.

use std::collections::BTreeSet;

use apiextensions::cel::{check_policy_expression, ObjectType};
use registry::options::WriteOptions;
use registry::{Registry, RegistryError, Subresource};
use serde_json::{json, Value};

use super::GROUP;

/// upstream's maxTypesToCheck.
const MAX_KINDS: usize = 10;

/// The field manager of the status writes (upstream's controller name).
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

/// Whether `policy`'s status is behind its spec.
pub fn stale(policy: &Value) -> bool {
    let generation = policy["metadata"]["generation"].as_i64().unwrap_or(0);
    policy["status"]["observedGeneration"].as_i64() != Some(generation)
}

/// The kinds (group, version, kind) the policy's rules name explicitly, sorted.
fn kinds(registry: &Registry, policy: &Value) -> Vec<(String, String, String)> {
    let explicit = |rule: &Value, key: &str| -> Option<Vec<String>> {
        let values: Vec<String> = rule[key]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        // a wildcard gives up on the rule
        (!values.iter().any(|v| v.contains('*'))).then_some(values)
    };
    let mut found = BTreeSet::new();
    let rules = policy["spec"]["matchConstraints"]["resourceRules"].as_array();
    for rule in rules.into_iter().flatten() {
        let (Some(mut groups), Some(mut versions)) =
            (explicit(rule, "apiGroups"), explicit(rule, "apiVersions"))
        else {
            continue;
        };
        let mut resources: Vec<&str> = rule["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        groups.sort();
        versions.sort();
        resources.sort();
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    if let Some(info) = registry.catalogue().lookup(group, version, resource) {
                        found.insert((group.clone(), version.clone(), info.kind.clone()));
                        if found.len() == MAX_KINDS {
                            return found.into_iter().collect();
                        }
                    }
                }
            }
        }
    }
    found.into_iter().collect()
}

/// The expression warnings of `policy`: `[{fieldRef, warning}]`.
pub fn warnings(registry: &Registry, policy: &Value) -> Vec<Value> {
    let Some(source) = registry.field_schemas().source() else {
        return Vec::new();
    };
    let types: Vec<(String, ObjectType)> = kinds(registry, policy)
        .into_iter()
        .filter_map(|(group, version, kind)| {
            let schema = source.schema_for(&group, &version, &kind)?;
            // upstream prints the GroupVersionKind as `group/version, Kind=kind`
            Some((
                format!("{group}/{version}, Kind={kind}"),
                ObjectType::new(&schema),
            ))
        })
        .collect();
    if types.is_empty() {
        return Vec::new();
    }
    // params are typed by the paramKind's schema, when it is known
    let kind = &policy["spec"]["paramKind"];
    let api_version = kind["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let params = kind["kind"]
        .as_str()
        .and_then(|k| source.schema_for(group, version, k))
        .map(|schema| ObjectType::new(&schema));
    let mut warnings = Vec::new();
    let validations = policy["spec"]["validations"].as_array();
    for (i, validation) in validations.into_iter().flatten().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(expression) = validation[field].as_str().filter(|e| !e.is_empty()) else {
                continue;
            };
            let found: Vec<String> = types
                .iter()
                .filter_map(|(gvk, object)| {
                    check_policy_expression(expression, Some(object), params.as_ref())
                        .err()
                        .map(|issues| format!("{gvk}: {issues}\n"))
                })
                .collect();
            if !found.is_empty() {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": found.join("\n"),
                }));
            }
        }
    }
    warnings
}

/// Writes `policy`'s status with its `warnings`, unless a newer write got there first.
pub async fn sync(registry: &Registry, policy: &Value, warnings: Vec<Value>) {
    let Some(store) = registry.store(GROUP, "v1", "validatingadmissionpolicies") else {
        return;
    };
    let mut updated = policy.clone();
    updated["status"] = json!({
        "observedGeneration": policy["metadata"]["generation"].clone(),
        "typeChecking": if warnings.is_empty() { json!({}) } else { json!({"expressionWarnings": warnings}) },
    });
    let name = registry::object::name(policy);
    match store
        .update(
            None,
            name,
            updated,
            Subresource::Status,
            &WriteOptions::by(MANAGER),
        )
        .await
    {
        // A conflict or a deleted policy: the newer state is seen (and checked) next.
        Ok(_) | Err(RegistryError::Conflict { .. }) | Err(RegistryError::NotFound { .. }) => {}
        Err(e) => {
            tracing::warn!(policy = %name, error = %e, "writing the policy's type checking failed")
        }
    }
}
