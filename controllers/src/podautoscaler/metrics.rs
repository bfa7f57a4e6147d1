//! How a metric fails that no API of this server can give: Pods and Object metrics (the
//! custom metrics API), External metrics (the external metrics API), and resource metrics
//! when no resource metrics API is given. Each fails as on a cluster without the adapter or
//! metrics-server, in upstream's words.

use serde_json::Value;

/// Why a metric gave no value: the condition reason and the error upstream reports.
pub(super) struct MetricFailure {
    pub reason: &'static str,
    /// What the per-metric event says (and the condition quotes).
    pub error: String,
    /// The error as computeReplicasForMetric wraps it.
    pub wrapped: String,
}

const NO_RESOURCE_METRICS: &str = "unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";
const NO_CUSTOM_METRICS: &str =
    "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered";
const NO_EXTERNAL_METRICS: &str =
    "unable to fetch metrics from external metrics API: no external metrics API (external.metrics.k8s.io) registered";

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The failure of one metric of the spec.
pub(super) fn failure(metric: &Value, namespace: &str) -> MetricFailure {
    match text(metric, "/type") {
        kind @ ("Resource" | "ContainerResource") => {
            let field = if kind == "Resource" {
                "/resource"
            } else {
                "/containerResource"
            };
            let source = metric.pointer(field).cloned().unwrap_or(Value::Null);
            let name = text(&source, "/name");
            let by_value = source
                .pointer("/target/averageValue")
                .is_some_and(|v| !v.is_null());
            let measure = if by_value { "usage" } else { "utilization" };
            let reason = if kind == "Resource" {
                "FailedGetResourceMetric"
            } else {
                "FailedGetContainerResourceMetric"
            };
            let error = format!("failed to get {name} {measure}: unable to get metrics for resource {name}: {NO_RESOURCE_METRICS}");
            let what = if kind == "Resource" {
                "resource"
            } else {
                "container resource"
            };
            MetricFailure {
                reason,
                wrapped: format!("failed to get {name} {what} metric value: {error}"),
                error,
            }
        }
        "Pods" => {
            let name = text(metric, "/pods/metric/name");
            let error = format!("unable to get metric {name}: {NO_CUSTOM_METRICS}");
            MetricFailure {
                reason: "FailedGetPodsMetric",
                wrapped: format!("failed to get pods metric value: {error}"),
                error,
            }
        }
        "Object" => {
            let name = text(metric, "/object/metric/name");
            let object = format!(
                "{} {}/{}",
                text(metric, "/object/describedObject/kind"),
                namespace,
                text(metric, "/object/describedObject/name")
            );
            let error = format!("unable to get metric {name}: {object}/{NO_CUSTOM_METRICS}");
            MetricFailure {
                reason: "FailedGetObjectMetric",
                wrapped: format!("failed to get object metric value: {error}"),
                error,
            }
        }
        "External" => {
            let name = text(metric, "/external/metric/name");
            let error = format!(
                "unable to get external metric {namespace}/{name}/nil: {NO_EXTERNAL_METRICS}"
            );
            MetricFailure {
                reason: "FailedGetExternalMetric",
                wrapped: format!("failed to get external metric value: {error}"),
                error,
            }
        }
        other => {
            let error = format!("unknown metric source type {other:?}");
            MetricFailure {
                reason: "InvalidMetricSourceType",
                wrapped: error.clone(),
                error,
            }
        }
    }
}
