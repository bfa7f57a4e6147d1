//! ValidatingAdmissionPolicies and their bindings: a policy's failure policy, match
//! constraints, validations (or audit annotations) and variables; a binding's policy,
//! actions and parameters. The CEL in them is compiled when admission evaluates policies (a
//! later step); here it is checked for presence and length only.

use serde_json::{json, Value};

use super::webhooks::match_conditions;
use super::{rule_with_operations, strings, FAILURE_POLICIES, MATCH_POLICIES};
use crate::error::Cause;
use crate::strategy::Strategy;
use crate::validation::{label_selector, quote};

const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
const NOT_FOUND_ACTIONS: &[&str] = &["Allow", "Deny"];
const MAX_AUDIT_ANNOTATIONS: usize = 20;

/// The defaults of a policy's or binding's match resources (SetDefaults_MatchResources).
fn default_match_resources(resources: Option<&mut Value>) {
    let Some(resources) = resources.and_then(Value::as_object_mut) else {
        return;
    };
    for (field, value) in [
        ("matchPolicy", json!("Equivalent")),
        ("namespaceSelector", json!({})),
        ("objectSelector", json!({})),
    ] {
        resources.entry(field).or_insert(value);
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for rule in resources
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            rule.entry("scope").or_insert_with(|| json!("*"));
        }
    }
}

/// validateMatchResources: the selectors, policy and rules (a policy must name rules).
fn match_resources(resources: &Value, field: &str, rules_required: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(policy) = resources["matchPolicy"].as_str() {
        if !MATCH_POLICIES.contains(&policy) {
            causes.push(Cause::not_supported(
                &format!("{field}.matchPolicy"),
                policy,
                MATCH_POLICIES,
            ));
        }
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        causes.extend(label_selector(
            resources.get(selector),
            &format!("{field}.{selector}"),
        ));
    }
    let rules = resources["resourceRules"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if rules_required && rules.is_empty() {
        causes.push(Cause::required(&format!("{field}.resourceRules")));
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in resources[list].as_array().into_iter().flatten().enumerate() {
            let path = format!("{field}.{list}[{i}]");
            causes.extend(rule_with_operations(rule, &path));
            for (j, name) in strings(&rule["resourceNames"]).iter().enumerate() {
                if name.is_empty() {
                    causes.push(Cause::required(&format!("{path}.resourceNames[{j}]")));
                }
            }
        }
    }
    causes
}

pub struct PolicyStrategy;

impl Strategy for PolicyStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("failurePolicy").or_insert_with(|| json!("Fail"));
            default_match_resources(spec.get_mut("matchConstraints"));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let spec = &obj["spec"];
        let mut causes = Vec::new();
        match spec["failurePolicy"].as_str() {
            None => causes.push(Cause::required("spec.failurePolicy")),
            Some(p) if !FAILURE_POLICIES.contains(&p) => causes.push(Cause::not_supported(
                "spec.failurePolicy",
                p,
                FAILURE_POLICIES,
            )),
            Some(_) => {}
        }
        if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
            for field in ["apiVersion", "kind"] {
                if kind[field].as_str().unwrap_or_default().is_empty() {
                    causes.push(Cause::required(&format!("spec.paramKind.{field}")));
                }
            }
        }
        match spec.get("matchConstraints").filter(|m| !m.is_null()) {
            None => causes.push(Cause::required("spec.matchConstraints")),
            Some(m) => causes.extend(match_resources(m, "spec.matchConstraints", true)),
        }
        let validations = spec["validations"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        let annotations = spec["auditAnnotations"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        if validations.is_empty() && annotations.is_empty() {
            causes.push(Cause::required_because(
                "spec.validations",
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        for (i, validation) in validations.iter().enumerate() {
            let path = format!("spec.validations[{i}]");
            let expression = validation["expression"].as_str().unwrap_or_default();
            if expression.trim().is_empty() {
                causes.push(Cause::required(&format!("{path}.expression")));
            }
            let message = validation["message"].as_str().unwrap_or_default();
            if !message.is_empty() && message.trim().is_empty() {
                causes.push(Cause::invalid(
                    &format!("{path}.message"),
                    quote(message),
                    "message must be non-empty if specified",
                ));
            }
            if message.contains('\n') {
                causes.push(Cause::invalid(
                    &format!("{path}.message"),
                    quote(message),
                    "message must not contain line breaks",
                ));
            }
            if let Some(reason) = validation["reason"].as_str() {
                if !REASONS.contains(&reason) {
                    causes.push(Cause::not_supported(
                        &format!("{path}.reason"),
                        reason,
                        REASONS,
                    ));
                }
            }
        }
        if annotations.len() > MAX_AUDIT_ANNOTATIONS {
            causes.push(Cause::invalid(
                "spec.auditAnnotations",
                annotations.len(),
                &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
            ));
        }
        let mut keys: Vec<&str> = Vec::new();
        for (i, annotation) in annotations.iter().enumerate() {
            let path = format!("spec.auditAnnotations[{i}]");
            let key = annotation["key"].as_str().unwrap_or_default();
            if key.is_empty() {
                causes.push(Cause::required(&format!("{path}.key")));
            } else if keys.contains(&key) {
                causes.push(Cause::duplicate(&format!("{path}.key"), quote(key)));
            }
            keys.push(key);
            if annotation["valueExpression"]
                .as_str()
                .unwrap_or_default()
                .is_empty()
            {
                causes.push(Cause::required(&format!("{path}.valueExpression")));
            }
        }
        causes.extend(match_conditions(
            &spec["matchConditions"],
            "spec.matchConditions",
        ));
        for (i, variable) in spec["variables"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let path = format!("spec.variables[{i}]");
            if variable["name"].as_str().unwrap_or_default().is_empty() {
                causes.push(Cause::required(&format!("{path}.name")));
            }
            if variable["expression"]
                .as_str()
                .unwrap_or_default()
                .is_empty()
            {
                causes.push(Cause::required(&format!("{path}.expression")));
            }
        }
        causes
    }

    /// A status write changes only the status (type checking is upstream's controller's).
    fn validate_status_update(&self, _new: &Value, _old: &Value) -> Vec<Cause> {
        Vec::new()
    }
}

pub struct PolicyBindingStrategy;

impl Strategy for PolicyBindingStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default_match_resources(spec.get_mut("matchResources"));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        self.prepare_for_create(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let spec = &obj["spec"];
        let mut causes = Vec::new();
        if spec["policyName"].as_str().unwrap_or_default().is_empty() {
            causes.push(Cause::required("spec.policyName"));
        }
        if let Some(param) = spec.get("paramRef").filter(|p| !p.is_null()) {
            let name = param["name"].as_str().unwrap_or_default();
            let selector = param.get("selector").filter(|s| !s.is_null());
            match (name.is_empty(), selector) {
                (false, Some(_)) => causes.push(Cause::forbidden(
                    "spec.paramRef.name",
                    "name and selector are mutually exclusive",
                )),
                (true, None) => causes.push(Cause::required_because(
                    "spec.paramRef",
                    "one of name or selector must be specified",
                )),
                _ => {}
            }
            causes.extend(label_selector(selector, "spec.paramRef.selector"));
            match param["parameterNotFoundAction"].as_str() {
                None => causes.push(Cause::required("spec.paramRef.parameterNotFoundAction")),
                Some(a) if !NOT_FOUND_ACTIONS.contains(&a) => causes.push(Cause::not_supported(
                    "spec.paramRef.parameterNotFoundAction",
                    a,
                    NOT_FOUND_ACTIONS,
                )),
                Some(_) => {}
            }
        }
        if let Some(resources) = spec.get("matchResources").filter(|m| !m.is_null()) {
            causes.extend(match_resources(resources, "spec.matchResources", false));
        }
        let actions = strings(&spec["validationActions"]);
        if actions.is_empty() {
            causes.push(Cause::required_because(
                "spec.validationActions",
                "at least one validation action is required",
            ));
        }
        let mut seen: Vec<&str> = Vec::new();
        for (i, action) in actions.iter().enumerate() {
            let path = format!("spec.validationActions[{i}]");
            if seen.contains(action) {
                causes.push(Cause::duplicate(&path, quote(action)));
            }
            seen.push(action);
            if !ACTIONS.contains(action) {
                causes.push(Cause::not_supported(&path, action, ACTIONS));
            }
        }
        if seen.contains(&"Deny") && seen.contains(&"Warn") {
            causes.push(Cause::invalid(
                "spec.validationActions",
                super::go_strings("admissionregistration.ValidationAction", &actions),
                "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ));
        }
        causes
    }
}
