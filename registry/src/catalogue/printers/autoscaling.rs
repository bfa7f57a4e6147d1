//! autoscaling: upstream's printHorizontalPodAutoscaler, from the v2 shape whichever version
//! is served (upstream prints the internal type), its TARGETS as formatHPAMetrics writes them.

use serde_json::Value;

use super::zero_values::{get, text};
use super::{age, name, text_column, TableColumn};
use crate::strategy::autoscaling::in_v2_shape;

fn doc(definition: &str, property: &str) -> String {
    openapi::property_description(&format!("io.k8s.api.autoscaling.v2.{definition}"), property)
        .unwrap_or_else(|| property.to_string())
}

pub(in crate::catalogue) fn hpa_columns() -> Vec<TableColumn> {
    vec![
        name(),
        text_column(
            "Reference",
            &doc("HorizontalPodAutoscalerSpec", "scaleTargetRef"),
            |hpa| {
                let target = &hpa["spec"]["scaleTargetRef"];
                Value::String(format!(
                    "{}/{}",
                    text(target, &["kind"]),
                    text(target, &["name"])
                ))
            },
        ),
        text_column(
            "Targets",
            &doc("HorizontalPodAutoscalerSpec", "metrics"),
            |hpa| Value::String(targets(&in_v2_shape(hpa))),
        ),
        text_column(
            "MinPods",
            &doc("HorizontalPodAutoscalerSpec", "minReplicas"),
            |hpa| {
                Value::String(
                    match get(hpa, &["spec", "minReplicas"]).and_then(Value::as_i64) {
                        Some(n) => n.to_string(),
                        None => "<unset>".into(),
                    },
                )
            },
        ),
        text_column(
            "MaxPods",
            &doc("HorizontalPodAutoscalerSpec", "maxReplicas"),
            |hpa| {
                Value::from(
                    get(hpa, &["spec", "maxReplicas"])
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                )
            },
        ),
        text_column(
            "Replicas",
            &doc("HorizontalPodAutoscalerStatus", "currentReplicas"),
            |hpa| {
                Value::from(
                    get(hpa, &["status", "currentReplicas"])
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                )
            },
        ),
        age(),
    ]
}

fn quantity(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => "0".into(),
    }
}

/// One metric's `current/target`, as upstream's formatHPAMetrics prints it.
fn target(spec: &Value, status: Option<&Value>) -> String {
    let unknown = || "<unknown>".to_string();
    let kind = text(spec, &["type"]);
    let source = |v: &Value, field: &str| v.get(field).filter(|s| !s.is_null()).cloned();
    match kind {
        "External" | "Object" => {
            let field = if kind == "External" {
                "external"
            } else {
                "object"
            };
            let t = source(spec, field)
                .map(|s| s["target"].clone())
                .unwrap_or(Value::Null);
            let current = status
                .and_then(|s| source(s, field))
                .map(|s| s["current"].clone());
            if t.get("averageValue").is_some_and(|v| !v.is_null()) {
                let now = current
                    .and_then(|c| c.get("averageValue").filter(|v| !v.is_null()).cloned())
                    .map_or_else(unknown, |v| quantity(Some(&v)));
                format!("{now}/{} (avg)", quantity(t.get("averageValue")))
            } else {
                let now = current.map_or_else(unknown, |c| quantity(c.get("value")));
                format!("{now}/{}", quantity(t.get("value")))
            }
        }
        "Pods" => {
            let t = source(spec, "pods")
                .map(|s| s["target"].clone())
                .unwrap_or(Value::Null);
            let now = status
                .and_then(|s| source(s, "pods"))
                .map_or_else(unknown, |s| quantity(s["current"].get("averageValue")));
            format!("{now}/{}", quantity(t.get("averageValue")))
        }
        "Resource" | "ContainerResource" => {
            let field = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let s = source(spec, field).unwrap_or(Value::Null);
            let resource = text(&s, &["name"]).to_string();
            let t = &s["target"];
            let current = status
                .and_then(|st| source(st, field))
                .map(|st| st["current"].clone());
            if t.get("averageValue").is_some_and(|v| !v.is_null()) {
                let now = current.map_or_else(unknown, |c| quantity(c.get("averageValue")));
                format!("{resource}: {now}/{}", quantity(t.get("averageValue")))
            } else {
                let now = current
                    .and_then(|c| c.get("averageUtilization").and_then(Value::as_i64))
                    .map_or_else(unknown, |u| format!("{u}%"));
                let goal = t
                    .get("averageUtilization")
                    .and_then(Value::as_i64)
                    .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                format!("{resource}: {now}/{goal}")
            }
        }
        _ => "<unknown type>".into(),
    }
}

/// The TARGETS cell: the first two metrics, then how many more.
fn targets(hpa: &Value) -> String {
    let specs = hpa["spec"]["metrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = hpa["status"]["currentMetrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| target(spec, statuses.get(i)))
        .collect();
    if list.len() > 2 {
        format!("{} + {} more...", list[..2].join(", "), list.len() - 2)
    } else {
        list.join(", ")
    }
}
