//! The replica count the metrics ask for (upstream's computeReplicasForMetrics): each metric
//! of the spec proposes a count, the highest wins; a metric that fails is reported (its event,
//! the ScalingActive condition) and, while any fails, the target is never scaled down.
//! Resource and ContainerResource metrics are read from the resource metrics API
//! ([`super::source`]); Pods, Object and External metrics need adapters this server does not
//! have and fail as they do without one (`metrics::failure`).

use std::collections::BTreeMap;

use registry::options::ListOptions;
use registry::quota::Quantity;
use serde_json::{json, Value};

use super::metrics::{self, MetricFailure};
use super::replicas::{self, Target};
use super::source::PodMetric;
use super::HorizontalController;

/// What the metrics decided.
pub(super) struct Computed {
    pub replicas: i64,
    /// The metric that asked for the most (for the rescale reason).
    pub metric_name: String,
    pub statuses: Vec<Value>,
    /// Metrics that failed while the others scale up or hold (each still reported).
    pub failures: Vec<MetricFailure>,
}

/// Why no count could be computed: every metric failed, or one failed while the others
/// would scale down.
pub(super) struct Failed {
    pub failures: Vec<MetricFailure>,
    pub total: usize,
    pub statuses: Vec<Value>,
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A resource metric's source fields: (resource, container, target).
fn resource_source(metric: &Value) -> Option<(String, Option<String>, Option<Target>)> {
    let (source, container) = match text(metric, "/type") {
        "Resource" => (&metric["resource"], None),
        "ContainerResource" => (
            &metric["containerResource"],
            Some(text(metric, "/containerResource/container").to_string()),
        ),
        _ => return None,
    };
    let target = &source["target"];
    let goal = match (
        target["averageUtilization"].as_i64(),
        target["averageValue"].as_str(),
    ) {
        (Some(percent), _) => Some(Target::Utilization(percent)),
        (None, Some(value)) => Quantity::parse(value)
            .map(|q| Target::AverageMilli(i64::try_from(q.milli_value()).unwrap_or(i64::MAX))),
        _ => None,
    };
    Some((
        source["name"].as_str().unwrap_or_default().to_string(),
        container,
        goal,
    ))
}

impl HorizontalController {
    async fn pods(&self, namespace: &str, selector: &str) -> Vec<Value> {
        let Some(store) = self.registry.store("", "v1", "pods") else {
            return Vec::new();
        };
        let options = ListOptions {
            label_selector: Some(selector.to_string()),
            resource_version: Some("0".into()),
            ..Default::default()
        };
        store
            .list(Some(namespace), &options)
            .await
            .map(|list| list["items"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    /// One resource metric's proposal and status; Err is its failure.
    async fn resource_metric(
        &self,
        metric: &Value,
        namespace: &str,
        selector: &str,
        current: i64,
        cache: &mut Option<Result<BTreeMap<String, PodMetric>, String>>,
    ) -> Result<(i64, String, Value), MetricFailure> {
        let Some((resource, container, Some(target))) = resource_source(metric) else {
            return Err(metrics::failure(metric, namespace));
        };
        let container_kind = container.is_some();
        let fail = |error: String| {
            let (reason, what) = if container_kind {
                ("FailedGetContainerResourceMetric", "container resource")
            } else {
                ("FailedGetResourceMetric", "resource")
            };
            MetricFailure {
                reason,
                wrapped: format!("failed to get {resource} {what} metric value: {error}"),
                error,
            }
        };
        let measure = match target {
            Target::Utilization(_) => "utilization",
            Target::AverageMilli(_) => "usage",
        };
        let Some(client) = &self.config.metrics else {
            return Err(metrics::failure(metric, namespace));
        };
        if cache.is_none() {
            *cache = Some(client.0.pod_metrics(namespace, selector).await);
        }
        let fetched = match cache {
            Some(Ok(found)) if !found.is_empty() => found,
            Some(Ok(_)) => {
                return Err(fail(format!("failed to get {resource} {measure}: unable to get metrics for resource {resource}: no metrics returned from resource metrics API")))
            }
            Some(Err(e)) => {
                return Err(fail(format!("failed to get {resource} {measure}: unable to get metrics for resource {resource}: unable to fetch metrics from resource metrics API: {e}")))
            }
            None => return Err(metrics::failure(metric, namespace)),
        };
        let pods = self.pods(namespace, selector).await;
        let proposal = replicas::propose(
            current,
            target,
            &resource,
            container.as_deref(),
            &pods,
            fetched,
            chrono::Utc::now(),
        )
        .map_err(|e| fail(format!("failed to get {resource} {measure}: {e}")))?;
        let average = Quantity::from_milli(i128::from(proposal.average_milli), false).to_string();
        let mut current_value = json!({"averageValue": average});
        if let Some(utilization) = proposal.utilization {
            current_value["averageUtilization"] = json!(utilization);
        }
        let container_part = if container_kind { " container" } else { "" };
        let name = match target {
            Target::Utilization(_) => {
                format!("{resource}{container_part} resource utilization (percentage of request)")
            }
            Target::AverageMilli(_) => format!("{resource}{container_part} resource"),
        };
        let status = match &container {
            None => json!({"type": "Resource",
                "resource": {"name": resource, "current": current_value}}),
            Some(c) => json!({"type": "ContainerResource",
                "containerResource": {"name": resource, "container": c, "current": current_value}}),
        };
        Ok((proposal.replicas, name, status))
    }

    /// computeReplicasForMetrics over the spec's metrics, for a target of `current` replicas
    /// whose scale's selector is `selector`.
    pub(super) async fn compute(
        &self,
        spec: &Value,
        namespace: &str,
        selector: &str,
        current: i64,
    ) -> Result<Computed, Failed> {
        let specs = spec["metrics"].as_array().cloned().unwrap_or_default();
        let mut failures = Vec::new();
        let mut statuses = Vec::new();
        let mut best: Option<(i64, String)> = None;
        let mut cache = None;
        for metric in &specs {
            match self
                .resource_metric(metric, namespace, selector, current, &mut cache)
                .await
            {
                Ok((replicas, name, status)) => {
                    statuses.push(status);
                    if best.as_ref().is_none_or(|(r, _)| replicas > *r) {
                        best = Some((replicas, name));
                    }
                }
                Err(failure) => {
                    statuses.push(json!({"type": ""}));
                    failures.push(failure);
                }
            }
        }
        match best {
            Some((replicas, metric_name)) if failures.is_empty() || replicas >= current => {
                Ok(Computed {
                    replicas,
                    metric_name,
                    statuses,
                    failures,
                })
            }
            _ => Err(Failed {
                failures,
                total: specs.len(),
                statuses,
            }),
        }
    }
}
