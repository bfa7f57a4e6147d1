//! rbac/v1 PolicyRules as the bootstrap policy writes them (upstream's PolicyRuleBuilder: every
//! list sorted).

use serde_json::Value;

pub use crate::rbac::rules::PolicyRule;

pub const READ: &[&str] = &["get", "list", "watch"];
pub const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
pub const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// The core group, as rules spell it.
pub const CORE: &str = "";

fn sorted(items: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    out.sort();
    out
}

/// A resource rule: `verbs` on `resources` of `groups`.
pub fn res(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: sorted(verbs),
        api_groups: sorted(groups),
        resources: sorted(resources),
        ..PolicyRule::default()
    }
}

/// A resource rule in the core group.
pub fn core(verbs: &[&str], resources: &[&str]) -> PolicyRule {
    res(verbs, &[CORE], resources)
}

/// A non-resource rule: `verbs` on URL paths.
pub fn urls(verbs: &[&str], paths: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: sorted(verbs),
        non_resource_urls: sorted(paths),
        ..PolicyRule::default()
    }
}

/// Upstream's eventsRule(): recording events through either events API.
pub fn events() -> PolicyRule {
    res(
        &["create", "update", "patch"],
        &[CORE, "events.k8s.io"],
        &["events"],
    )
}

/// Restricts the rule to objects of these names.
pub fn named(mut rule: PolicyRule, names: &[&str]) -> PolicyRule {
    rule.resource_names = sorted(names);
    rule
}

pub fn to_json(rule: &PolicyRule) -> Value {
    serde_json::to_value(rule).unwrap_or(Value::Null)
}

/// The rules of a stored role; a malformed entry is no rule.
pub fn rules_of(rules: Option<&Value>) -> Vec<PolicyRule> {
    rules
        .and_then(Value::as_array)
        .map(|rules| {
            rules
                .iter()
                .filter_map(|r| serde_json::from_value(r.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_sorts_like_upstreams() {
        let r = core(&["watch", "get"], &["secrets", "configmaps"]);
        assert_eq!(r.verbs, ["get", "watch"]);
        assert_eq!(r.resources, ["configmaps", "secrets"]);
        assert_eq!(
            to_json(&r),
            serde_json::json!({"verbs": ["get", "watch"], "apiGroups": [""], "resources": ["configmaps", "secrets"]})
        );
    }
}
