//! Mutating and validating webhook configurations: each webhook fully named, reached by
//! URL (https) or Service, with rules, selectors, policies and match conditions, and
//! upstream's v1 defaults (Fail, Equivalent, 10 s, empty selectors, port 443, scope `*`).

use serde_json::{json, Value};

use super::{rule_with_operations, strings, FAILURE_POLICIES, MATCH_POLICIES};
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::names::is_dns1123_subdomain;
use crate::validation::webhook::client_config;
use crate::validation::{label_selector, quote};

const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const ALL_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];

pub struct WebhookConfigurationStrategy {
    /// MutatingWebhookConfiguration (which has a reinvocation policy) or validating.
    pub mutating: bool,
}

fn webhooks(obj: &Value) -> &[Value] {
    obj["webhooks"].as_array().map_or(&[], Vec::as_slice)
}

/// What an update may keep that a create may not (upstream relaxes a rule on update when
/// the stored configuration already breaks it).
#[derive(Clone, Copy)]
struct Strictness {
    no_side_effects: bool,
    recognized_versions: bool,
    unique_names: bool,
}

const STRICT: Strictness = Strictness {
    no_side_effects: true,
    recognized_versions: true,
    unique_names: true,
};

impl WebhookConfigurationStrategy {
    fn defaults(&self, obj: &mut Value) {
        let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
            return;
        };
        for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
            let mut defaults = vec![
                ("failurePolicy", json!("Fail")),
                ("matchPolicy", json!("Equivalent")),
                ("namespaceSelector", json!({})),
                ("objectSelector", json!({})),
                ("timeoutSeconds", json!(10)),
            ];
            if self.mutating {
                defaults.push(("reinvocationPolicy", json!("Never")));
            }
            for (field, value) in defaults {
                if hook.get(field).is_none_or(Value::is_null) {
                    hook.insert(field.into(), value);
                }
            }
            if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
                for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                    rule.entry("scope").or_insert_with(|| json!("*"));
                }
            }
            if let Some(service) = hook
                .get_mut("clientConfig")
                .and_then(|c| c.get_mut("service"))
                .and_then(Value::as_object_mut)
            {
                service.entry("port").or_insert_with(|| json!(443));
            }
        }
    }

    fn validate_with(&self, obj: &Value, strict: Strictness) -> Vec<Cause> {
        let mut causes = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (i, hook) in webhooks(obj).iter().enumerate() {
            let field = format!("webhooks[{i}]");
            causes.extend(self.validate_hook(hook, &field, strict));
            causes.extend(review_versions(
                &hook["admissionReviewVersions"],
                &format!("{field}.admissionReviewVersions"),
                strict.recognized_versions,
            ));
            let name = hook["name"].as_str().unwrap_or_default();
            if strict.unique_names && !name.is_empty() {
                if names.contains(&name) {
                    causes.push(Cause::duplicate(&format!("{field}.name"), quote(name)));
                } else {
                    names.push(name);
                }
            }
        }
        causes
    }

    fn validate_hook(&self, hook: &Value, field: &str, strict: Strictness) -> Vec<Cause> {
        let mut causes = fully_qualified_name(
            hook["name"].as_str().unwrap_or_default(),
            &format!("{field}.name"),
        );
        for (i, rule) in hook["rules"].as_array().into_iter().flatten().enumerate() {
            causes.extend(rule_with_operations(rule, &format!("{field}.rules[{i}]")));
        }
        let enumerated = [
            ("failurePolicy", FAILURE_POLICIES),
            ("matchPolicy", MATCH_POLICIES),
        ];
        for (name, supported) in enumerated {
            if let Some(value) = hook[name].as_str() {
                if !supported.contains(&value) {
                    causes.push(Cause::not_supported(
                        &format!("{field}.{name}"),
                        value,
                        supported,
                    ));
                }
            }
        }
        let allowed = if strict.no_side_effects {
            NO_SIDE_EFFECTS
        } else {
            ALL_SIDE_EFFECTS
        };
        match hook["sideEffects"].as_str() {
            None => causes.push(Cause::required_because(
                &format!("{field}.sideEffects"),
                &format!("must specify one of {}", allowed.join(", ")),
            )),
            Some(value) if !allowed.contains(&value) => causes.push(Cause::not_supported(
                &format!("{field}.sideEffects"),
                value,
                allowed,
            )),
            Some(_) => {}
        }
        if let Some(timeout) = hook["timeoutSeconds"].as_i64() {
            if !(1..=30).contains(&timeout) {
                causes.push(Cause::invalid(
                    &format!("{field}.timeoutSeconds"),
                    timeout,
                    "the timeout value must be between 1 and 30 seconds",
                ));
            }
        }
        for selector in ["namespaceSelector", "objectSelector"] {
            causes.extend(label_selector(
                hook.get(selector),
                &format!("{field}.{selector}"),
            ));
        }
        if self.mutating {
            if let Some(policy) = hook["reinvocationPolicy"].as_str() {
                if !REINVOCATION_POLICIES.contains(&policy) {
                    causes.push(Cause::not_supported(
                        &format!("{field}.reinvocationPolicy"),
                        policy,
                        REINVOCATION_POLICIES,
                    ));
                }
            }
        }
        causes.extend(client_config(
            &hook["clientConfig"],
            &format!("{field}.clientConfig"),
        ));
        causes.extend(match_conditions(
            &hook["matchConditions"],
            &format!("{field}.matchConditions"),
        ));
        causes
    }
}

impl Strategy for WebhookConfigurationStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        self.defaults(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.defaults(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.validate_with(obj, STRICT)
    }

    /// Rules the stored configuration already breaks are not enforced again.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let old_hooks = webhooks(old);
        let mut names: Vec<&str> = Vec::new();
        let mut unique = true;
        for hook in old_hooks {
            let name = hook["name"].as_str().unwrap_or_default();
            unique &= !names.contains(&name);
            names.push(name);
        }
        let strict = Strictness {
            no_side_effects: old_hooks.iter().all(|h| {
                h["sideEffects"]
                    .as_str()
                    .is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))
            }),
            recognized_versions: old_hooks.iter().all(|h| {
                let versions = strings(&h["admissionReviewVersions"]);
                versions.is_empty()
                    || versions
                        .iter()
                        .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
            }),
            unique_names: unique,
        };
        self.validate_with(new, strict)
    }
}

/// IsFullyQualifiedName: a DNS subdomain of at least three segments.
fn fully_qualified_name(name: &str, field: &str) -> Vec<Cause> {
    if name.is_empty() {
        return vec![Cause::required(field)];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let problems = is_dns1123_subdomain(name);
    if !problems.is_empty() {
        return vec![Cause::invalid(field, quote(name), &problems.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![Cause::invalid(
            field,
            quote(name),
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

fn review_versions(versions: &Value, field: &str, require_recognized: bool) -> Vec<Cause> {
    let versions = strings(versions);
    if versions.is_empty() {
        return vec![Cause::required_because(
            field,
            &format!(
                "must specify one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        )];
    }
    let mut causes = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(v) {
            causes.push(Cause::invalid(
                &format!("{field}[{i}]"),
                quote(v),
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for m in crate::validation::is_dns1035_label(v) {
            causes.push(Cause::invalid(&format!("{field}[{i}]"), quote(v), &m));
        }
    }
    if require_recognized
        && !versions
            .iter()
            .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(v))
    {
        causes.push(Cause::invalid(
            field,
            super::go_strings("string", &versions),
            &format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    causes
}

/// Match conditions: unique qualified names, an expression each, at most 64 of them. Their
/// CEL is compiled when admission evaluates them (a later step), not here.
pub(super) fn match_conditions(conditions: &Value, field: &str) -> Vec<Cause> {
    const MAX: usize = 64;
    let list = conditions.as_array().map_or(&[][..], Vec::as_slice);
    let mut causes = Vec::new();
    if list.len() > MAX {
        causes.push(Cause::too_many(field, list.len(), MAX));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, condition) in list.iter().enumerate() {
        let name = condition["name"].as_str().unwrap_or_default();
        let path = format!("{field}[{i}]");
        if name.is_empty() {
            causes.push(Cause::required(&format!("{path}.name")));
        } else {
            for m in crate::validation::is_qualified_name(name) {
                causes.push(Cause::invalid(&format!("{path}.name"), quote(name), &m));
            }
            if names.contains(&name) {
                causes.push(Cause::duplicate(&format!("{path}.name"), quote(name)));
            }
            names.push(name);
        }
        if condition["expression"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            causes.push(Cause::required(&format!("{path}.expression")));
        }
    }
    causes
}
