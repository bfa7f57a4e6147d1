//! HorizontalPodAutoscaler validation (upstream's pkg/apis/autoscaling/validation), on the
//! autoscaling/v2 shape every version is judged in (upstream judges the internal type, so a
//! v1 request's problems carry v2's field paths too).

use serde_json::Value;

use crate::error::Cause;
use crate::types::parse_quantity;
use crate::validation::{names, quote};

const MAX_PERIOD_SECONDS: i64 = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
const SOURCE_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];

fn int(obj: &Value, field: &str) -> Option<i64> {
    obj.get(field).and_then(Value::as_i64)
}

fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn present<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get(field).filter(|v| !v.is_null())
}

/// The spec, with the lowest minReplicas allowed (0 only for objects that already have it:
/// HPAScaleToZero is off by default).
pub(super) fn spec_causes(spec: &Value, min_lower_bound: i64) -> Vec<Cause> {
    let mut causes = Vec::new();
    let min = int(spec, "minReplicas");
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < min_lower_bound) {
        causes.push(Cause::invalid(
            "spec.minReplicas",
            min,
            &format!("must be greater than or equal to {min_lower_bound}"),
        ));
    }
    if max < 1 {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|min| max < min) {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = spec.get("scaleTargetRef").cloned().unwrap_or(Value::Null);
    causes.extend(reference_causes(&target, "spec.scaleTargetRef"));
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let (mut object, mut external) = (false, false);
    for (i, metric) in metrics.iter().enumerate() {
        causes.extend(metric_causes(metric, &format!("spec.metrics[{i}]")));
        object |= text(metric, "type") == "Object";
        external |= text(metric, "type") == "External";
    }
    if min == Some(0) && !object && !external {
        causes.push(Cause::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    if let Some(behavior) = present(spec, "behavior") {
        for direction in ["scaleUp", "scaleDown"] {
            if let Some(rules) = present(behavior, direction) {
                causes.extend(rules_causes(rules, &format!("spec.behavior.{direction}")));
            }
        }
    }
    causes
}

/// A CrossVersionObjectReference: a kind and a name, each a valid path segment.
fn reference_causes(reference: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for field in ["kind", "name"] {
        let value = text(reference, field);
        let at = format!("{path}.{field}");
        if value.is_empty() {
            causes.push(Cause::required(&at));
        } else {
            for msg in names::path_segment_name(value, false) {
                causes.push(Cause::invalid(&at, quote(value), &msg));
            }
        }
    }
    causes
}

fn rules_causes(rules: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(window) = int(rules, "stabilizationWindowSeconds") {
        let field = format!("{path}.stabilizationWindowSeconds");
        if window < 0 {
            causes.push(Cause::invalid(
                &field,
                window,
                "must be greater than or equal to zero",
            ));
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            causes.push(Cause::invalid(
                &field,
                window,
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(policy) = present(rules, "selectPolicy").and_then(Value::as_str) {
        if !SELECT_POLICIES.contains(&policy) {
            causes.push(Cause::not_supported(
                &format!("{path}.selectPolicy"),
                policy,
                SELECT_POLICIES,
            ));
        }
    }
    let policies = rules
        .get("policies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if policies.is_empty() {
        causes.push(Cause::required_because(
            &format!("{path}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, policy) in policies.iter().enumerate() {
        let at = format!("{path}.policies[{i}]");
        let kind = text(policy, "type");
        if !POLICY_TYPES.contains(&kind) {
            causes.push(Cause::not_supported(
                &format!("{at}.type"),
                kind,
                POLICY_TYPES,
            ));
        }
        let value = int(policy, "value").unwrap_or(0);
        if value <= 0 {
            causes.push(Cause::invalid(
                &format!("{at}.value"),
                value,
                "must be greater than zero",
            ));
        }
        let period = int(policy, "periodSeconds").unwrap_or(0);
        if period <= 0 {
            causes.push(Cause::invalid(
                &format!("{at}.periodSeconds"),
                period,
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            causes.push(Cause::invalid(
                &format!("{at}.periodSeconds"),
                period,
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
    causes
}

/// The field of each metric source type.
fn source_field(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => return None,
    })
}

fn metric_causes(metric: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = text(metric, "type");
    if kind.is_empty() {
        causes.push(Cause::required_because(
            &format!("{path}.type"),
            "must specify a metric source type",
        ));
    }
    if !SOURCE_TYPES.contains(&kind) {
        causes.push(Cause::not_supported(
            &format!("{path}.type"),
            kind,
            SOURCE_TYPES,
        ));
    }
    // Upstream looks at the sources in this order and validates only the first present.
    let order = [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ];
    let present_sources: Vec<&str> = order
        .iter()
        .copied()
        .filter(|f| present(metric, f).is_some())
        .collect();
    if let Some(first) = present_sources.first() {
        let source = &metric[*first];
        let at = format!("{path}.{first}");
        causes.extend(match *first {
            "object" => object_causes(source, &at),
            "external" => external_causes(source, &at),
            "pods" => pods_causes(source, &at),
            "resource" => resource_causes(source, &at, false),
            _ => resource_causes(source, &at, true),
        });
    }
    let expected = source_field(kind);
    match expected {
        Some(field) if present(metric, field).is_none() => causes.push(Cause::required_because(
            &format!("{path}.{field}"),
            "must populate information for the given metric source",
        )),
        Some(_) => {}
        None => causes.push(Cause::not_supported(
            &format!("{path}.type"),
            kind,
            SOURCE_TYPES,
        )),
    }
    if present_sources.len() != 1 {
        let mut others: Vec<&str> = present_sources
            .into_iter()
            .filter(|f| Some(*f) != expected)
            .collect();
        others.sort_unstable();
        for other in others {
            causes.push(Cause::forbidden(
                &format!("{path}.{other}"),
                "must populate the given metric source only",
            ));
        }
    }
    causes
}

fn quantity_sign(value: &Value) -> Option<f64> {
    value
        .as_str()
        .and_then(parse_quantity)
        .or_else(|| value.as_f64())
}

fn target_causes(target: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = text(target, "type");
    if kind.is_empty() {
        causes.push(Cause::required_because(
            &format!("{path}.type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        causes.push(Cause::invalid(
            &format!("{path}.type"),
            quote(kind),
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        if let Some(value) = present(target, field) {
            if quantity_sign(value).is_none_or(|v| v <= 0.0) {
                let shown = value
                    .as_str()
                    .map(quote)
                    .unwrap_or_else(|| value.to_string());
                causes.push(Cause::invalid(
                    &format!("{path}.{field}"),
                    shown,
                    "must be positive",
                ));
            }
        }
    }
    if let Some(utilization) = int(target, "averageUtilization").filter(|u| *u < 1) {
        causes.push(Cause::invalid(
            &format!("{path}.averageUtilization"),
            utilization,
            "must be greater than 0",
        ));
    }
    causes
}

fn identifier_causes(id: &Value, path: &str) -> Vec<Cause> {
    let name = text(id, "name");
    let at = format!("{path}.name");
    if name.is_empty() {
        return vec![Cause::required_because(&at, "must specify a metric name")];
    }
    names::path_segment_name(name, false)
        .into_iter()
        .map(|msg| Cause::invalid(&at, quote(name), &msg))
        .collect()
}

fn has(target: &Value, field: &str) -> bool {
    present(target, field).is_some()
}

fn object_causes(source: &Value, path: &str) -> Vec<Cause> {
    let target = source.get("target").cloned().unwrap_or(Value::Null);
    let mut causes = reference_causes(
        source.get("describedObject").unwrap_or(&Value::Null),
        &format!("{path}.describedObject"),
    );
    causes.extend(identifier_causes(
        source.get("metric").unwrap_or(&Value::Null),
        &format!("{path}.metric"),
    ));
    causes.extend(target_causes(&target, &format!("{path}.target")));
    if !has(&target, "value") && !has(&target, "averageValue") {
        causes.push(Cause::required_because(
            &format!("{path}.target.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
    causes
}

fn external_causes(source: &Value, path: &str) -> Vec<Cause> {
    let target = source.get("target").cloned().unwrap_or(Value::Null);
    let mut causes = identifier_causes(
        source.get("metric").unwrap_or(&Value::Null),
        &format!("{path}.metric"),
    );
    causes.extend(target_causes(&target, &format!("{path}.target")));
    if !has(&target, "value") && !has(&target, "averageValue") {
        causes.push(Cause::required_because(
            &format!("{path}.target.averageValue"),
            "must set either a target value for metric or a per-pod target",
        ));
    }
    if has(&target, "value") && has(&target, "averageValue") {
        causes.push(Cause::forbidden(
            &format!("{path}.target.value"),
            "may not set both a target value for metric and a per-pod target",
        ));
    }
    causes
}

fn pods_causes(source: &Value, path: &str) -> Vec<Cause> {
    let target = source.get("target").cloned().unwrap_or(Value::Null);
    let mut causes = identifier_causes(
        source.get("metric").unwrap_or(&Value::Null),
        &format!("{path}.metric"),
    );
    causes.extend(target_causes(&target, &format!("{path}.target")));
    if !has(&target, "averageValue") {
        causes.push(Cause::required_because(
            &format!("{path}.target.averageValue"),
            "must specify a positive target averageValue",
        ));
    }
    causes
}

fn resource_causes(source: &Value, path: &str, container: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    if text(source, "name").is_empty() {
        causes.push(Cause::required_because(
            &format!("{path}.name"),
            "must specify a resource name",
        ));
    }
    if container {
        let name = text(source, "container");
        let at = format!("{path}.container");
        if name.is_empty() {
            causes.push(Cause::required_because(&at, "must specify a container"));
        } else {
            for msg in names::is_dns1123_label(name) {
                causes.push(Cause::invalid(&at, quote(name), &msg));
            }
        }
    }
    let target = source.get("target").cloned().unwrap_or(Value::Null);
    causes.extend(target_causes(&target, &format!("{path}.target")));
    if !has(&target, "averageUtilization") && !has(&target, "averageValue") {
        causes.push(Cause::required_because(
            &format!("{path}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if has(&target, "averageUtilization") && has(&target, "averageValue") {
        causes.push(Cause::forbidden(
            &format!("{path}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
    causes
}
