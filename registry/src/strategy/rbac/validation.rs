//! Upstream's RBAC validation (pkg/apis/rbac/validation) on the v1 JSON shape, with its field
//! paths and message texts. Metadata (names as path segments) is the Store's generic check.

use serde_json::Value;

use crate::error::Cause;
use crate::go_fmt;
use crate::rbac::GROUP;
use crate::selector::labels::LabelSelector;
use crate::strategy::at;
use crate::validation::{
    is_dns1123_subdomain, is_qualified_name, is_valid_label_value, path_segment_name, quote,
    validate_labels,
};

const SERVICE_ACCOUNT: &str = "ServiceAccount";
const USER: &str = "User";
const GROUP_KIND: &str = "Group";

fn text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// How many entries a list field has (null and absent are Go's nil slice).
fn count(obj: &Value, key: &str) -> usize {
    obj.get(key).and_then(Value::as_array).map_or(0, Vec::len)
}

fn items<'a>(obj: &'a Value, path: &[&str]) -> &'a [Value] {
    at(obj, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// field.NotSupported with a string value, which upstream prints as Go's `%q`.
fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
    Cause::new(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: {}: supported values: {}",
            quote(value),
            list.join(", ")
        ),
    )
}

/// The rules of a Role (`namespaced`) or a ClusterRole (upstream's ValidatePolicyRule for
/// each).
pub fn rules(role: &Value, namespaced: bool) -> Vec<Cause> {
    items(role, &["rules"])
        .iter()
        .enumerate()
        .flat_map(|(i, rule)| policy_rule(rule, namespaced, &format!("rules[{i}]")))
        .collect()
}

/// A rule grants verbs on resources or on non-resource URLs, never both; namespaced rules
/// only on resources.
pub fn policy_rule(rule: &Value, namespaced: bool, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if count(rule, "verbs") == 0 {
        causes.push(Cause::required_because(
            &format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if count(rule, "nonResourceURLs") > 0 {
        let field = format!("{path}.nonResourceURLs");
        let urls = go_fmt::string_slice(rule.get("nonResourceURLs"));
        if namespaced {
            causes.push(Cause::invalid(
                &field,
                &urls,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        let on_resources = ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|key| count(rule, key) > 0);
        if on_resources {
            causes.push(Cause::invalid(
                &field,
                &urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return causes;
    }
    if count(rule, "apiGroups") == 0 {
        causes.push(Cause::required_because(
            &format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if count(rule, "resources") == 0 {
        causes.push(Cause::required_because(
            &format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    causes
}

/// A ClusterRole's aggregationRule: when set, at least one selector, each a valid label
/// selector. `allow_invalid_label_values` keeps accepting bad values an old object already
/// had (upstream's AllowInvalidLabelValueInSelector on update).
pub fn aggregation_rule(role: &Value, allow_invalid_label_values: bool) -> Vec<Cause> {
    let Some(rule) = role.get("aggregationRule").filter(|r| !r.is_null()) else {
        return Vec::new();
    };
    let selectors = items(rule, &["clusterRoleSelectors"]);
    let mut causes = Vec::new();
    if selectors.is_empty() {
        causes.push(Cause::required_because(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        let path = format!("aggregationRule.clusterRoleSelectors[{i}]");
        causes.extend(label_selector(selector, allow_invalid_label_values, &path));
        if LabelSelector::from_label_selector_json(selector).is_err() {
            // Upstream reports the selector that failed to convert, which is nil by then.
            causes.push(Cause::invalid(
                &path,
                quote("null"),
                "invalid label selector.",
            ));
        }
    }
    causes
}

/// Whether any of a ClusterRole's selectors fails the label selector rules (then an update
/// may keep its bad values).
pub fn has_invalid_selector_values(role: &Value) -> bool {
    items(role, &["aggregationRule", "clusterRoleSelectors"])
        .iter()
        .any(|selector| !label_selector(selector, false, "").is_empty())
}

/// Upstream's metav1 ValidateLabelSelector.
pub fn label_selector(selector: &Value, allow_invalid_values: bool, path: &str) -> Vec<Cause> {
    let mut causes = validate_labels(
        selector.get("matchLabels").unwrap_or(&Value::Null),
        &format!("{path}.matchLabels"),
    );
    for (i, requirement) in items(selector, &["matchExpressions"]).iter().enumerate() {
        let path = format!("{path}.matchExpressions[{i}]");
        let values = items(requirement, &["values"]);
        let operator = text(requirement, "operator");
        match operator {
            "In" | "NotIn" if values.is_empty() => causes.push(Cause::required_because(
                &format!("{path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(Cause::forbidden(
                &format!("{path}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push(Cause::invalid(
                &format!("{path}.operator"),
                quote(other),
                "not a valid selector operator",
            )),
        }
        let key = text(requirement, "key");
        for why in is_qualified_name(key) {
            causes.push(Cause::invalid(&format!("{path}.key"), quote(key), &why));
        }
        if !allow_invalid_values {
            for (j, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                for why in is_valid_label_value(value) {
                    causes.push(Cause::invalid(
                        &format!("{path}.values[{j}]"),
                        quote(value),
                        &why,
                    ));
                }
            }
        }
    }
    causes
}

/// A RoleBinding (`namespaced`: its roleRef may name a Role or a ClusterRole) or a
/// ClusterRoleBinding (a ClusterRole only; service account subjects name their namespace).
pub fn binding(binding: &Value, namespaced: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let api_group = text(role_ref, "apiGroup");
    if api_group != GROUP {
        causes.push(not_supported("roleRef.apiGroup", api_group, &[GROUP]));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = text(role_ref, "kind");
    if !kinds.contains(&kind) {
        causes.push(not_supported("roleRef.kind", kind, kinds));
    }
    let name = text(role_ref, "name");
    if name.is_empty() {
        causes.push(Cause::required("roleRef.name"));
    } else {
        for why in path_segment_name(name, false) {
            causes.push(Cause::invalid("roleRef.name", quote(name), &why));
        }
    }
    for (i, subject) in items(binding, &["subjects"]).iter().enumerate() {
        causes.extend(self::subject(
            subject,
            namespaced,
            &format!("subjects[{i}]"),
        ));
    }
    causes
}

/// Upstream's ValidateRoleBindingSubject.
pub fn subject(subject: &Value, namespaced: bool, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = text(subject, "name");
    if name.is_empty() {
        causes.push(Cause::required(&format!("{path}.name")));
    }
    let api_group = text(subject, "apiGroup");
    match text(subject, "kind") {
        SERVICE_ACCOUNT => {
            if !name.is_empty() {
                for why in is_dns1123_subdomain(name) {
                    causes.push(Cause::invalid(&format!("{path}.name"), quote(name), &why));
                }
            }
            if !api_group.is_empty() {
                causes.push(not_supported(&format!("{path}.apiGroup"), api_group, &[""]));
            }
            if !namespaced && text(subject, "namespace").is_empty() {
                causes.push(Cause::required(&format!("{path}.namespace")));
            }
        }
        USER | GROUP_KIND => {
            if api_group != GROUP {
                causes.push(not_supported(
                    &format!("{path}.apiGroup"),
                    api_group,
                    &[GROUP],
                ));
            }
        }
        other => causes.push(not_supported(
            &format!("{path}.kind"),
            other,
            &[SERVICE_ACCOUNT, USER, GROUP_KIND],
        )),
    }
    causes
}

/// A binding's roleRef is fixed for its life: granting another role means a new binding.
pub fn role_ref_unchanged(new: &Value, old: &Value) -> Option<Cause> {
    let fields = |binding: &Value| {
        let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
        ["apiGroup", "kind", "name"].map(|key| text(role_ref, key).to_string())
    };
    let new_ref = fields(new);
    if fields(old) == new_ref {
        return None;
    }
    let [api_group, kind, name] = &new_ref;
    // Upstream prints the internal struct with Go's `%#v`.
    let rendered = format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        quote(api_group),
        quote(kind),
        quote(name)
    );
    Some(Cause::invalid("roleRef", rendered, "cannot change roleRef"))
}

/// Upstream's v1 defaults, applied to every decoded binding: the roleRef's group, and each
/// user or group subject's.
pub fn default_binding(binding: &mut Value) {
    if let Some(role_ref) = binding.get_mut("roleRef").filter(|r| r.is_object()) {
        default_group(role_ref, GROUP);
    } else if let Some(map) = binding.as_object_mut() {
        map.insert("roleRef".into(), serde_json::json!({ "apiGroup": GROUP }));
    }
    if let Some(Value::Array(subjects)) = binding.get_mut("subjects") {
        for subject in subjects.iter_mut() {
            if matches!(text(subject, "kind"), USER | GROUP_KIND) {
                default_group(subject, GROUP);
            }
        }
    }
}

fn default_group(obj: &mut Value, group: &str) {
    if let Some(map) = obj.as_object_mut() {
        let unset = match map.get("apiGroup") {
            None | Some(Value::Null) => true,
            Some(Value::String(g)) => g.is_empty(),
            Some(_) => false,
        };
        if unset {
            map.insert("apiGroup".into(), Value::from(group));
        }
    }
}
