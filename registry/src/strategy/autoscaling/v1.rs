//! autoscaling/v1 ⇄ autoscaling/v2 HorizontalPodAutoscalers, as upstream's v1 conversion maps
//! them through the internal type: v1 keeps the CPU utilization target and current value as
//! fields, and carries everything else v2 has (other metrics, their statuses, conditions and
//! the scaling behavior) in annotations, so a v1 client's read-modify-write loses nothing.

use serde_json::{json, Map, Value};

use crate::strategy::conversion::Conversion;

pub const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
pub const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";
const ROUND_TRIP: [&str; 4] = [
    METRICS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
];

/// Serves the stored (v2) object as autoscaling/v1.
pub struct V1;

impl Conversion for V1 {
    fn to_served(&self, obj: &mut Value) {
        *obj = to_v1(obj);
    }

    /// Stored defaulted as v2 (upstream defaults what it reads back from storage; defaulting
    /// once on the way in reads the same).
    fn to_stored(&self, obj: &mut Value) {
        *obj = to_v2(obj);
        super::set_v2_defaults(obj);
    }
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(v) = value.filter(|v| !v.is_null()) {
        map.insert(key.into(), v.clone());
    }
}

fn is_cpu_utilization(metric: &Value) -> bool {
    metric["type"] == "Resource"
        && metric["resource"]["name"] == "cpu"
        && metric["resource"]["target"]
            .get("averageUtilization")
            .is_some_and(|u| !u.is_null())
}

/// A list as the JSON text an annotation holds, each item in its Go type's field order
/// (`io.k8s.api.autoscaling.v1.MetricSpec`, ...), as encoding/json writes it.
fn encoded(items: &[Value], definition: &str) -> Value {
    let def = openapi::wire_order::definition(definition);
    let mut out = b"[".to_vec();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if crate::wire::write_as(&mut out, item, def, crate::wire::Style::Compact).is_err() {
            return Value::String(serde_json::to_string(items).unwrap_or_default());
        }
    }
    out.push(b']');
    Value::String(String::from_utf8_lossy(&out).into_owned())
}

/// The v2 object as v1.
pub fn to_v1(v2: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    put(&mut out, "kind", v2.get("kind"));
    let mut meta = v2.get("metadata").cloned().unwrap_or(json!({}));
    let mut annotations: Map<String, Value> = meta
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for key in ROUND_TRIP {
        annotations.remove(key);
    }

    let spec = v2.get("spec").cloned().unwrap_or(json!({}));
    let mut v1_spec = Map::new();
    put(&mut v1_spec, "scaleTargetRef", spec.get("scaleTargetRef"));
    put(&mut v1_spec, "minReplicas", spec.get("minReplicas"));
    put(&mut v1_spec, "maxReplicas", spec.get("maxReplicas"));
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(cpu) = metrics
        .iter()
        .find(|m| m["type"] == "Resource" && m["resource"]["name"] == "cpu")
    {
        put(
            &mut v1_spec,
            "targetCPUUtilizationPercentage",
            cpu["resource"]["target"].get("averageUtilization"),
        );
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(spec_to_v1)
        .collect();
    if !others.is_empty() {
        annotations.insert(
            METRICS_ANNOTATION.into(),
            encoded(&others, "io.k8s.api.autoscaling.v1.MetricSpec"),
        );
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        annotations.insert(
            BEHAVIOR_ANNOTATION.into(),
            Value::String(internal_behavior(behavior)),
        );
    }

    let status = v2.get("status").cloned().unwrap_or(Value::Null);
    let mut v1_status = Map::new();
    if status.is_object() {
        for field in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            put(&mut v1_status, field, status.get(field));
        }
        v1_status.entry("currentReplicas").or_insert(json!(0));
        v1_status.entry("desiredReplicas").or_insert(json!(0));
        let current = status
            .get("currentMetrics")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for metric in &current {
            if metric["type"] == "Resource" && metric["resource"]["name"] == "cpu" {
                put(
                    &mut v1_status,
                    "currentCPUUtilizationPercentage",
                    metric["resource"]["current"].get("averageUtilization"),
                );
            }
        }
        if !current.is_empty() {
            let statuses: Vec<Value> = current.iter().map(status_to_v1).collect();
            annotations.insert(
                CURRENT_METRICS_ANNOTATION.into(),
                encoded(&statuses, "io.k8s.api.autoscaling.v1.MetricStatus"),
            );
        }
        if let Some(conditions) = status
            .get("conditions")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
        {
            annotations.insert(
                CONDITIONS_ANNOTATION.into(),
                encoded(
                    conditions,
                    "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerCondition",
                ),
            );
        }
    }
    if let Some(map) = meta.as_object_mut() {
        if annotations.is_empty() {
            map.remove("annotations");
        } else {
            map.insert("annotations".into(), Value::Object(annotations));
        }
    }
    out.insert("metadata".into(), meta);
    out.insert("spec".into(), Value::Object(v1_spec));
    if status.is_object() {
        out.insert("status".into(), Value::Object(v1_status));
    }
    Value::Object(out)
}

/// The v1 object as v2.
pub fn to_v2(v1: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    put(&mut out, "kind", v1.get("kind"));
    let mut meta = v1.get("metadata").cloned().unwrap_or(json!({}));
    let annotations: Map<String, Value> = meta
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let parsed = |key: &str| -> Option<Value> {
        annotations
            .get(key)
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str(text).ok())
    };

    let spec = v1.get("spec").cloned().unwrap_or(json!({}));
    let mut v2_spec = Map::new();
    put(&mut v2_spec, "scaleTargetRef", spec.get("scaleTargetRef"));
    put(&mut v2_spec, "minReplicas", spec.get("minReplicas"));
    put(&mut v2_spec, "maxReplicas", spec.get("maxReplicas"));
    let mut metrics: Vec<Value> = match parsed(METRICS_ANNOTATION) {
        Some(Value::Array(others)) => others.iter().map(spec_to_v2).collect(),
        _ => Vec::new(),
    };
    if let Some(cpu) = spec
        .get("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        metrics.push(json!({"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}
        }}));
    }
    if !metrics.is_empty() {
        v2_spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(behavior) = parsed(BEHAVIOR_ANNOTATION) {
        v2_spec.insert("behavior".into(), behavior_from_internal(&behavior));
    }

    let status = v1.get("status").cloned().unwrap_or(Value::Null);
    let mut v2_status = Map::new();
    if status.is_object() {
        for field in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            put(&mut v2_status, field, status.get(field));
        }
        // v2 leaves a zero currentReplicas out (omitempty); desiredReplicas is always there.
        if v2_status.get("currentReplicas").and_then(Value::as_i64) == Some(0) {
            v2_status.remove("currentReplicas");
        }
        v2_status.entry("desiredReplicas").or_insert(json!(0));
        if let Some(cpu) = status
            .get("currentCPUUtilizationPercentage")
            .filter(|v| !v.is_null())
        {
            v2_status.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}]),
            );
        }
        if let Some(Value::Array(current)) = parsed(CURRENT_METRICS_ANNOTATION) {
            v2_status.insert(
                "currentMetrics".into(),
                Value::Array(current.iter().map(status_to_v2).collect()),
            );
        }
        if let Some(Value::Array(conditions)) = parsed(CONDITIONS_ANNOTATION) {
            v2_status.insert("conditions".into(), Value::Array(conditions));
        }
    }
    if let Some(map) = meta.as_object_mut() {
        let mut kept = annotations.clone();
        for key in ROUND_TRIP {
            kept.remove(key);
        }
        if kept.is_empty() {
            map.remove("annotations");
        } else {
            map.insert("annotations".into(), Value::Object(kept));
        }
    }
    out.insert("metadata".into(), meta);
    out.insert("spec".into(), Value::Object(v2_spec));
    if status.is_object() {
        out.insert("status".into(), Value::Object(v2_status));
    }
    Value::Object(out)
}

fn reference(described: &Value) -> Value {
    let mut out = Map::new();
    for field in ["kind", "name", "apiVersion"] {
        put(&mut out, field, described.get(field));
    }
    Value::Object(out)
}

/// A v2 MetricSpec as v1's (the v2beta1-shaped annotation form).
fn spec_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", m.get("type"));
    let target = |source: &Value| source.get("target").cloned().unwrap_or(json!({}));
    if let Some(o) = m.get("object").filter(|v| !v.is_null()) {
        let t = target(o);
        let mut src = Map::new();
        src.insert("target".into(), reference(&o["describedObject"]));
        put(&mut src, "metricName", o["metric"].get("name"));
        src.insert(
            "targetValue".into(),
            t.get("value")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(json!("0")),
        );
        put(&mut src, "selector", o["metric"].get("selector"));
        put(&mut src, "averageValue", t.get("averageValue"));
        out.insert("object".into(), Value::Object(src));
    }
    if let Some(p) = m.get("pods").filter(|v| !v.is_null()) {
        let mut src = Map::new();
        put(&mut src, "metricName", p["metric"].get("name"));
        src.insert(
            "targetAverageValue".into(),
            target(p)
                .get("averageValue")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(json!("0")),
        );
        put(&mut src, "selector", p["metric"].get("selector"));
        out.insert("pods".into(), Value::Object(src));
    }
    for (field, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = m.get(field).filter(|v| !v.is_null()) {
            let t = target(r);
            let mut src = Map::new();
            put(&mut src, "name", r.get("name"));
            put(
                &mut src,
                "targetAverageUtilization",
                t.get("averageUtilization"),
            );
            put(&mut src, "targetAverageValue", t.get("averageValue"));
            if container {
                put(&mut src, "container", r.get("container"));
            }
            out.insert(field.into(), Value::Object(src));
        }
    }
    if let Some(e) = m.get("external").filter(|v| !v.is_null()) {
        let t = target(e);
        let mut src = Map::new();
        put(&mut src, "metricName", e["metric"].get("name"));
        put(&mut src, "metricSelector", e["metric"].get("selector"));
        put(&mut src, "targetValue", t.get("value"));
        put(&mut src, "targetAverageValue", t.get("averageValue"));
        out.insert("external".into(), Value::Object(src));
    }
    Value::Object(out)
}

fn identifier(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut out = Map::new();
    put(&mut out, "name", name);
    put(&mut out, "selector", selector);
    Value::Object(out)
}

fn metric_target(kind: &str, fields: &[(&str, Option<&Value>)]) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(kind));
    for (field, value) in fields {
        put(&mut out, field, *value);
    }
    Value::Object(out)
}

/// A v1 (annotation) MetricSpec as v2's.
fn spec_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", m.get("type"));
    if let Some(o) = m.get("object").filter(|v| !v.is_null()) {
        let average = o.get("averageValue").filter(|v| !v.is_null());
        let kind = if average.is_some() {
            "AverageValue"
        } else {
            "Value"
        };
        out.insert("object".into(), json!({
            "describedObject": reference(&o["target"]),
            "metric": identifier(o.get("metricName"), o.get("selector")),
            "target": metric_target(kind, &[("value", o.get("targetValue")), ("averageValue", average)]),
        }));
    }
    if let Some(p) = m.get("pods").filter(|v| !v.is_null()) {
        out.insert("pods".into(), json!({
            "metric": identifier(p.get("metricName"), p.get("selector")),
            "target": metric_target("AverageValue", &[("averageValue", p.get("targetAverageValue"))]),
        }));
    }
    for (field, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = m.get(field).filter(|v| !v.is_null()) {
            let utilization = r.get("targetAverageUtilization").filter(|v| !v.is_null());
            let kind = if utilization.is_some() {
                "Utilization"
            } else {
                "AverageValue"
            };
            let mut src = Map::new();
            put(&mut src, "name", r.get("name"));
            src.insert(
                "target".into(),
                metric_target(
                    kind,
                    &[
                        ("averageUtilization", utilization),
                        ("averageValue", r.get("targetAverageValue")),
                    ],
                ),
            );
            if container {
                put(&mut src, "container", r.get("container"));
            }
            out.insert(field.into(), Value::Object(src));
        }
    }
    if let Some(e) = m.get("external").filter(|v| !v.is_null()) {
        let value = e.get("targetValue").filter(|v| !v.is_null());
        let kind = if value.is_some() {
            "Value"
        } else {
            "AverageValue"
        };
        out.insert("external".into(), json!({
            "metric": identifier(e.get("metricName"), e.get("metricSelector")),
            "target": metric_target(kind, &[("value", value), ("averageValue", e.get("targetAverageValue"))]),
        }));
    }
    Value::Object(out)
}

/// A v2 MetricStatus as v1's.
fn status_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", m.get("type"));
    let current = |source: &Value| source.get("current").cloned().unwrap_or(json!({}));
    let zero = json!("0");
    if let Some(o) = m.get("object").filter(|v| !v.is_null()) {
        let c = current(o);
        let mut src = Map::new();
        src.insert("target".into(), reference(&o["describedObject"]));
        put(&mut src, "metricName", o["metric"].get("name"));
        src.insert(
            "currentValue".into(),
            c.get("value")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or_else(|| zero.clone()),
        );
        put(&mut src, "selector", o["metric"].get("selector"));
        put(&mut src, "averageValue", c.get("averageValue"));
        out.insert("object".into(), Value::Object(src));
    }
    if let Some(p) = m.get("pods").filter(|v| !v.is_null()) {
        let mut src = Map::new();
        put(&mut src, "metricName", p["metric"].get("name"));
        src.insert(
            "currentAverageValue".into(),
            current(p)
                .get("averageValue")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or_else(|| zero.clone()),
        );
        put(&mut src, "selector", p["metric"].get("selector"));
        out.insert("pods".into(), Value::Object(src));
    }
    for (field, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = m.get(field).filter(|v| !v.is_null()) {
            let c = current(r);
            let mut src = Map::new();
            put(&mut src, "name", r.get("name"));
            put(
                &mut src,
                "currentAverageUtilization",
                c.get("averageUtilization"),
            );
            src.insert(
                "currentAverageValue".into(),
                c.get("averageValue")
                    .filter(|v| !v.is_null())
                    .cloned()
                    .unwrap_or_else(|| zero.clone()),
            );
            if container {
                put(&mut src, "container", r.get("container"));
            }
            out.insert(field.into(), Value::Object(src));
        }
    }
    if let Some(e) = m.get("external").filter(|v| !v.is_null()) {
        let c = current(e);
        let mut src = Map::new();
        put(&mut src, "metricName", e["metric"].get("name"));
        put(&mut src, "metricSelector", e["metric"].get("selector"));
        src.insert(
            "currentValue".into(),
            c.get("value")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or_else(|| zero.clone()),
        );
        put(&mut src, "currentAverageValue", c.get("averageValue"));
        out.insert("external".into(), Value::Object(src));
    }
    Value::Object(out)
}

fn metric_value(fields: &[(&str, Option<&Value>)]) -> Value {
    let mut out = Map::new();
    for (field, value) in fields {
        put(&mut out, field, *value);
    }
    Value::Object(out)
}

/// A v1 (annotation) MetricStatus as v2's.
fn status_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", m.get("type"));
    if let Some(o) = m.get("object").filter(|v| !v.is_null()) {
        out.insert("object".into(), json!({
            "describedObject": reference(&o["target"]),
            "metric": identifier(o.get("metricName"), o.get("selector")),
            "current": metric_value(&[("value", o.get("currentValue")), ("averageValue", o.get("averageValue"))]),
        }));
    }
    if let Some(p) = m.get("pods").filter(|v| !v.is_null()) {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(p.get("metricName"), p.get("selector")),
                "current": metric_value(&[("averageValue", p.get("currentAverageValue"))]),
            }),
        );
    }
    for (field, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = m.get(field).filter(|v| !v.is_null()) {
            let mut src = Map::new();
            put(&mut src, "name", r.get("name"));
            src.insert(
                "current".into(),
                metric_value(&[
                    ("averageUtilization", r.get("currentAverageUtilization")),
                    ("averageValue", r.get("currentAverageValue")),
                ]),
            );
            if container {
                put(&mut src, "container", r.get("container"));
            }
            out.insert(field.into(), Value::Object(src));
        }
    }
    if let Some(e) = m.get("external").filter(|v| !v.is_null()) {
        out.insert("external".into(), json!({
            "metric": identifier(e.get("metricName"), e.get("metricSelector")),
            "current": metric_value(&[("value", e.get("currentValue")), ("averageValue", e.get("currentAverageValue"))]),
        }));
    }
    Value::Object(out)
}

/// The behavior as upstream writes it into the annotation: its internal Go type marshalled
/// as is, with Go's field names (the internal type has no JSON tags) in struct order.
fn internal_behavior(behavior: &Value) -> String {
    let rules = |rules: &Value| -> String {
        if rules.is_null() {
            return "null".into();
        }
        let scalar = |v: Option<&Value>| {
            v.filter(|v| !v.is_null())
                .map_or_else(|| "null".to_string(), Value::to_string)
        };
        let policies = match rules.get("policies").and_then(Value::as_array) {
            Some(list) => format!(
                "[{}]",
                list.iter()
                    .map(|p| format!(
                        "{{\"Type\":{},\"Value\":{},\"PeriodSeconds\":{}}}",
                        scalar(p.get("type")),
                        p.get("value").cloned().unwrap_or(json!(0)),
                        p.get("periodSeconds").cloned().unwrap_or(json!(0)),
                    ))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            None => "null".into(),
        };
        format!(
            "{{\"StabilizationWindowSeconds\":{},\"SelectPolicy\":{},\"Policies\":{policies},\"Tolerance\":{}}}",
            scalar(rules.get("stabilizationWindowSeconds")),
            scalar(rules.get("selectPolicy")),
            scalar(rules.get("tolerance")),
        )
    };
    format!(
        "{{\"ScaleUp\":{},\"ScaleDown\":{}}}",
        rules(behavior.get("scaleUp").unwrap_or(&Value::Null)),
        rules(behavior.get("scaleDown").unwrap_or(&Value::Null)),
    )
}

/// The annotation's internal behavior back in v2's names.
fn behavior_from_internal(internal: &Value) -> Value {
    let rules = |rules: &Value| -> Value {
        if !rules.is_object() {
            return Value::Null;
        }
        let mut out = Map::new();
        put(
            &mut out,
            "stabilizationWindowSeconds",
            rules.get("StabilizationWindowSeconds"),
        );
        put(&mut out, "selectPolicy", rules.get("SelectPolicy"));
        if let Some(list) = rules.get("Policies").and_then(Value::as_array) {
            let policies: Vec<Value> = list
                .iter()
                .map(|p| json!({"type": p["Type"], "value": p["Value"], "periodSeconds": p["PeriodSeconds"]}))
                .collect();
            out.insert("policies".into(), Value::Array(policies));
        }
        put(&mut out, "tolerance", rules.get("Tolerance"));
        Value::Object(out)
    };
    let mut out = Map::new();
    for (internal_name, name) in [("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")] {
        let converted = rules(internal.get(internal_name).unwrap_or(&Value::Null));
        if !converted.is_null() {
            out.insert(name.into(), converted);
        }
    }
    Value::Object(out)
}
