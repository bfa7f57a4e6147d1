//! What the workload kinds share: pod template defaults and validation, the apps/v1 selector
//! rules, and the numeric rules of their specs (non-negative counts, int-or-percent).

use serde_json::Value;

use crate::error::Cause;
use crate::go_fmt;
use crate::selector::labels::LabelSelector;
use crate::strategy::pod::{default_pod_spec, validate_pod_spec};
use crate::strategy::{at, at_mut};
use crate::validation::{self, names::regex_error};

/// Pod spec defaults (SetDefaults_PodSpec and friends) for the template at `path`.
pub(super) fn default_template(obj: &mut Value, path: &[&str]) {
    let mut spec_path = path.to_vec();
    spec_path.push("spec");
    if let Some(spec) = at_mut(obj, &spec_path) {
        default_pod_spec(spec);
    }
}

/// Upstream's ValidatePodTemplateSpec at `field`: labels and annotations (whose paths are
/// `<field>.labels`, not `.metadata.labels`, as upstream words them) and the pod spec.
pub(super) fn validate_template(template: Option<&Value>, field: &str) -> Vec<Cause> {
    let mut causes = template_metadata(template, field);
    causes.extend(validate_pod_spec(
        template.and_then(|t| t.get("spec")),
        &format!("{field}.spec"),
    ));
    causes
}

/// The template's labels and annotations alone (StatefulSets validate no more than this).
pub(super) fn template_metadata(template: Option<&Value>, field: &str) -> Vec<Cause> {
    let meta = template.and_then(|t| t.get("metadata"));
    let mut causes = validation::validate_labels(
        meta.and_then(|m| m.get("labels")).unwrap_or(&Value::Null),
        &format!("{field}.labels"),
    );
    causes.extend(validation::validate_annotations(
        meta.and_then(|m| m.get("annotations"))
            .unwrap_or(&Value::Null),
        &format!("{field}.annotations"),
    ));
    causes
}

/// Long-running pods only: restartPolicy Always and no activeDeadlineSeconds.
pub(super) fn long_running(template: Option<&Value>, field: &str, kind: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = template.and_then(|t| t.get("spec"));
    let policy = spec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if policy != "Always" {
        causes.push(Cause::not_supported(
            &format!("{field}.spec.restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if spec
        .and_then(|s| s.get("activeDeadlineSeconds"))
        .is_some_and(|v| !v.is_null())
    {
        causes.push(Cause::forbidden(
            &format!("{field}.spec.activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    causes
}

/// The template's labels (null when absent).
pub(super) fn template_labels<'a>(obj: &'a Value, template: &[&str]) -> Option<&'a Value> {
    let mut path = template.to_vec();
    path.extend(["metadata", "labels"]);
    at(obj, &path).filter(|l| !l.is_null())
}

/// `<template>.metadata.labels` must match the selector.
pub(super) fn selector_matches(
    selector: &LabelSelector,
    labels: Option<&Value>,
    field: &str,
) -> Option<Cause> {
    (!selector.matches_labels(labels.unwrap_or(&Value::Null))).then(|| {
        Cause::invalid(
            &format!("{field}.metadata.labels"),
            go_fmt::string_map(labels),
            "`selector` does not match template `labels`",
        )
    })
}

/// A metav1.LabelSelector at `field`, converted; a cause when it cannot be.
pub(super) fn convert_selector(
    selector: &Value,
    field: &str,
    why: &str,
) -> Result<LabelSelector, Vec<Cause>> {
    LabelSelector::from_label_selector_json(selector).map_err(|e| {
        let rendered = go_fmt::label_selector(selector);
        let mut causes = vec![Cause::invalid(field, &rendered, e.message())];
        causes.push(if why.is_empty() {
            Cause::new(
                "FieldValueInvalid",
                field,
                format!("Invalid value: {rendered}"),
            )
        } else {
            Cause::invalid(field, &rendered, why)
        });
        causes
    })
}

/// The apps/v1 selector rules (Deployment, ReplicaSet, StatefulSet): required, valid, not
/// empty, and matching the template's labels. `why_invalid` is the kind's word for a
/// selector that does not convert.
pub(super) fn apps_selector(obj: &Value, kind: &str, why_invalid: &str) -> Vec<Cause> {
    let selector = match at(obj, &["spec", "selector"]) {
        None | Some(Value::Null) => {
            // A nil selector selects nothing, so the template cannot match it either.
            let labels = template_labels(obj, &["spec", "template"]);
            return std::iter::once(Cause::required("spec.selector"))
                .chain(selector_matches(
                    &LabelSelector::nothing(),
                    labels,
                    "spec.template",
                ))
                .collect();
        }
        Some(selector) => selector,
    };
    let mut causes = Vec::new();
    let converted = match convert_selector(selector, "spec.selector", why_invalid) {
        Ok(converted) => converted,
        Err(found) => return found,
    };
    if converted.is_empty() {
        causes.push(Cause::invalid(
            "spec.selector",
            go_fmt::label_selector(selector),
            &format!("empty selector is invalid for {kind}"),
        ));
    } else {
        let labels = template_labels(obj, &["spec", "template"]);
        causes.extend(selector_matches(&converted, labels, "spec.template"));
    }
    causes
}

/// Selectors compared as upstream's semantic equality does: nil and empty lists alike.
pub(super) fn same_selector(a: Option<&Value>, b: Option<&Value>) -> bool {
    let norm = |v: Option<&Value>| -> Value {
        let mut v = v.cloned().unwrap_or(Value::Null);
        if let Some(map) = v.as_object_mut() {
            map.retain(|_, x| match x {
                Value::Null => false,
                Value::Object(m) => !m.is_empty(),
                Value::Array(a) => !a.is_empty(),
                _ => true,
            });
        }
        v
    };
    norm(a) == norm(b)
}

/// apps/v1 selectors are immutable once created.
pub(super) fn selector_unchanged(new: &Value, old: &Value) -> Option<Cause> {
    let (n, o) = (
        at(new, &["spec", "selector"]),
        at(old, &["spec", "selector"]),
    );
    (!same_selector(n, o)).then(|| {
        Cause::invalid(
            "spec.selector",
            go_fmt::label_selector(n.unwrap_or(&Value::Null)),
            "field is immutable",
        )
    })
}

/// ValidateNonnegativeField for the integer at `path`, if set.
pub(super) fn nonnegative(obj: &Value, path: &[&str], causes: &mut Vec<Cause>) {
    if let Some(n) = at(obj, path).and_then(Value::as_i64).filter(|n| *n < 0) {
        causes.push(Cause::invalid(
            &path.join("."),
            n,
            "must be greater than or equal to 0",
        ));
    }
}

/// The integer at `path`, 0 when unset (Go's zero value).
pub(super) fn int_at(obj: &Value, path: &[&str]) -> i64 {
    at(obj, path).and_then(Value::as_i64).unwrap_or(0)
}

fn percent(value: &Value) -> Option<i64> {
    let s = value.as_str()?;
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Upstream's getIntOrPercentValue: the number of an int or of a valid percent.
pub(super) fn int_or_percent_value(value: &Value) -> i64 {
    percent(value)
        .or_else(|| value.as_i64())
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// ValidatePositiveIntOrPercent: a non-negative int or a valid percent.
pub(super) fn int_or_percent(value: &Value, field: &str) -> Option<Cause> {
    match value {
        Value::String(_) if percent(value).is_none() => Some(Cause::invalid(
            field,
            go_fmt::int_or_string(value),
            &regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%",
                &["1%", "93%"],
            ),
        )),
        Value::Number(n) if n.as_i64().is_some_and(|n| n < 0) => Some(Cause::invalid(
            field,
            n,
            "must be greater than or equal to 0",
        )),
        _ => None,
    }
}

/// IsNotMoreThan100Percent.
pub(super) fn at_most_100_percent(value: &Value, field: &str) -> Option<Cause> {
    percent(value).filter(|p| *p > 100).map(|_| {
        Cause::invalid(
            field,
            go_fmt::int_or_string(value),
            "must not be greater than 100%",
        )
    })
}
