//! The admissionregistration.k8s.io/v1 kinds (upstream's
//! pkg/apis/admissionregistration/validation and v1 defaults): webhook configurations and
//! validating admission policies with their bindings, served and validated here. Admission
//! itself consults them in a later step.

mod policy;
#[cfg(test)]
mod tests;
mod webhooks;

pub use policy::{PolicyBindingStrategy, PolicyStrategy};
pub use webhooks::WebhookConfigurationStrategy;

use serde_json::Value;

use crate::error::Cause;
use crate::validation::quote;

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

/// A Go `[]string` as `%#v` prints it, which upstream shows for invalid lists.
fn go_strings(kind: &str, values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]{kind}{{{}}}", quoted.join(", "))
}

/// A rule with operations (validateRuleWithOperations and validateRule): operations, API
/// groups, versions and resources (with subresources, wildcards used consistently), scope.
fn rule_with_operations(rule: &Value, field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let operations = strings(&rule["operations"]);
    if operations.is_empty() {
        causes.push(Cause::required(&format!("{field}.operations")));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        causes.push(Cause::invalid(
            &format!("{field}.operations"),
            go_strings("admissionregistration.OperationType", &operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            causes.push(Cause::not_supported(
                &format!("{field}.operations[{i}]"),
                op,
                OPERATIONS,
            ));
        }
    }
    causes.extend(rule_fields(rule, field, true));
    causes
}

/// validateRule: the groups, versions and resources a rule names.
fn rule_fields(rule: &Value, field: &str, subresources: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let groups = strings(&rule["apiGroups"]);
    if groups.is_empty() {
        causes.push(Cause::required(&format!("{field}.apiGroups")));
    }
    if groups.len() > 1 && groups.contains(&"*") {
        causes.push(Cause::invalid(
            &format!("{field}.apiGroups"),
            go_strings("string", &groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(&rule["apiVersions"]);
    if versions.is_empty() {
        causes.push(Cause::required(&format!("{field}.apiVersions")));
    }
    if versions.len() > 1 && versions.contains(&"*") {
        causes.push(Cause::invalid(
            &format!("{field}.apiVersions"),
            go_strings("string", &versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            causes.push(Cause::required(&format!("{field}.apiVersions[{i}]")));
        }
    }
    let resources = strings(&rule["resources"]);
    let path = format!("{field}.resources");
    if subresources {
        causes.extend(resources_with_subresources(&resources, &path));
    } else {
        if resources.is_empty() {
            causes.push(Cause::required(&path));
        }
        for (i, r) in resources.iter().enumerate() {
            if r.is_empty() {
                causes.push(Cause::required(&format!("{path}[{i}]")));
            }
            if r.contains('/') {
                causes.push(Cause::invalid(
                    &format!("{path}[{i}]"),
                    quote(r),
                    "must not specify subresources",
                ));
            }
        }
        if resources.len() > 1 && resources.contains(&"*") {
            causes.push(Cause::invalid(
                &path,
                go_strings("string", &resources),
                "if '*' is present, must not specify other resources",
            ));
        }
    }
    if let Some(scope) = rule["scope"].as_str() {
        if !SCOPES.contains(&scope) {
            causes.push(Cause::not_supported(
                &format!("{field}.scope"),
                scope,
                SCOPES,
            ));
        }
    }
    causes
}

/// validateResources: `res/*` and `*/sub` exclude the names they cover; `*/*` stands alone.
fn resources_with_subresources(resources: &[&str], field: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if resources.is_empty() {
        causes.push(Cause::required(field));
    }
    let mut wildcard_subresources: Vec<&str> = Vec::new();
    let mut wildcard_resources: Vec<&str> = Vec::new();
    let mut double = false;
    let mut single = false;
    let mut plain = false;
    for (i, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            causes.push(Cause::required(&format!("{field}[{i}]")));
            continue;
        }
        double |= *entry == "*/*";
        single |= *entry == "*";
        let Some((resource, sub)) = entry.split_once('/') else {
            // Upstream keeps the last plain entry's answer.
            plain = *entry != "*";
            continue;
        };
        if wildcard_subresources.contains(&resource) {
            causes.push(Cause::invalid(
                &format!("{field}[{i}]"),
                quote(entry),
                &format!("if '{resource}/*' is present, must not specify {entry}"),
            ));
        }
        if wildcard_resources.contains(&sub) {
            causes.push(Cause::invalid(
                &format!("{field}[{i}]"),
                quote(entry),
                &format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            wildcard_subresources.push(resource);
        }
        if resource == "*" {
            wildcard_resources.push(sub);
        }
    }
    if resources.len() > 1 && double {
        causes.push(Cause::invalid(
            field,
            go_strings("string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        causes.push(Cause::invalid(
            field,
            go_strings("string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    causes
}
