//! The horizontal pod autoscaler's resource metrics client: PodMetrics read from whoever
//! serves `metrics.k8s.io/v1beta1` now, as upstream's controller reads them through the
//! API server: the in-process API while its APIService is local, else the aggregated server
//! (a real metrics-server) its APIService names, asked as the autoscaler's service account.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::http::{HeaderMap, Method, StatusCode};
use controllers::podautoscaler::source::{PodMetric, ResourceMetrics};
use registry::auth::UserInfo;
use registry::Verb;
use serde_json::Value;

use super::{GROUP, VERSION};
use crate::aggregator::local::LocalRequest;
use crate::aggregator::proxy::{self, Peer};
use crate::aggregator::{Aggregator, Route};
use crate::api::request_info::RequestInfo;

const TIMEOUT: Duration = Duration::from_secs(10);
const NOT_SERVED: &str =
    "the server could not find the requested resource (get pods.metrics.k8s.io)";

pub struct AggregatedMetrics {
    aggregator: Arc<Aggregator>,
}

impl AggregatedMetrics {
    pub fn new(aggregator: Arc<Aggregator>) -> Arc<Self> {
        Arc::new(Self { aggregator })
    }
}

fn autoscaler() -> UserInfo {
    UserInfo {
        name: "system:serviceaccount:kube-system:horizontal-pod-autoscaler".into(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            "system:authenticated".into(),
        ],
        ..Default::default()
    }
}

/// `15s`, `15.2s`, `1m0s` as Go prints a Duration; what cannot be read counts as zero.
fn go_duration(text: &str) -> Duration {
    let mut total = 0.0;
    let mut number = String::new();
    for c in text.chars() {
        match c {
            '0'..='9' | '.' => number.push(c),
            unit => {
                let value: f64 = number.parse().unwrap_or(0.0);
                number.clear();
                total += value
                    * match unit {
                        'h' => 3600.0,
                        'm' => 60.0,
                        's' => 1.0,
                        _ => 0.0,
                    };
            }
        }
    }
    Duration::from_secs_f64(total)
}

/// PodMetricsList → per pod, per container, per resource, thousandths.
fn parse(list: &Value) -> BTreeMap<String, PodMetric> {
    let mut out = BTreeMap::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let Some(name) = item["metadata"]["name"].as_str() else {
            continue;
        };
        let timestamp = item["timestamp"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_else(chrono::Utc::now);
        let containers = item["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let usage = c["usage"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(resource, q)| {
                        let milli = registry::quota::Quantity::parse(q.as_str()?)?.milli_value();
                        Some((resource.clone(), i64::try_from(milli).ok()?))
                    })
                    .collect();
                (c["name"].as_str().unwrap_or_default().to_string(), usage)
            })
            .collect();
        out.insert(
            name.to_string(),
            PodMetric {
                timestamp,
                window: go_duration(item["window"].as_str().unwrap_or_default()),
                containers,
            },
        );
    }
    out
}

#[async_trait]
impl ResourceMetrics for AggregatedMetrics {
    async fn pod_metrics(
        &self,
        namespace: &str,
        selector: &str,
    ) -> Result<BTreeMap<String, PodMetric>, String> {
        let path = format!("{GROUP}/{VERSION}/namespaces/{namespace}/pods");
        let query =
            percent_encoding::utf8_percent_encode(selector, percent_encoding::NON_ALPHANUMERIC);
        let body: Value = match self.aggregator.route(&path) {
            None => return Err(NOT_SERVED.into()),
            Some(Route::Local(api)) => {
                let request = LocalRequest {
                    method: Method::GET,
                    uri: format!("/apis/{path}?labelSelector={query}")
                        .parse()
                        .map_err(|e| format!("{e}"))?,
                    headers: HeaderMap::new(),
                    query: vec![("labelSelector".into(), selector.into())],
                    body: Default::default(),
                    info: Some(RequestInfo {
                        verb: Some(Verb::List),
                        group: GROUP.into(),
                        version: VERSION.into(),
                        namespace: Some(namespace.into()),
                        resource: "pods".into(),
                        ..Default::default()
                    }),
                    user: Some(Arc::new(autoscaler())),
                };
                let response = api.serve(request).await;
                let ok = response.status() == StatusCode::OK;
                let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                    .await
                    .map_err(|e| e.to_string())?;
                let body: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
                if !ok {
                    return Err(body["message"].as_str().unwrap_or(NOT_SERVED).to_string());
                }
                body
            }
            Some(Route::Remote(service)) => {
                let Some(backend) = &service.backend else {
                    return Err(NOT_SERVED.into());
                };
                if !service.available {
                    return Err("the server is currently unable to handle the request (get pods.metrics.k8s.io)".into());
                }
                let address = proxy::endpoint(self.aggregator.registry(), backend)
                    .await
                    .map_err(|_| "the server is currently unable to handle the request (get pods.metrics.k8s.io)".to_string())?;
                let trust = if backend.insecure_skip_tls_verify {
                    crate::aggregator::tls::Trust::Insecure
                } else {
                    crate::aggregator::tls::Trust::Bundle(&backend.ca_bundle)
                };
                let peer = Peer {
                    address: &address,
                    backend,
                    trust,
                    front_proxy: &self.aggregator.front_proxy,
                };
                let fetched = proxy::get(
                    peer,
                    &autoscaler(),
                    &format!("/apis/{path}?labelSelector={query}"),
                    "application/json",
                    TIMEOUT,
                )
                .await?;
                let body: Value =
                    serde_json::from_slice(&fetched.body).map_err(|e| e.to_string())?;
                if fetched.status != 200 {
                    return Err(body["message"].as_str().unwrap_or(NOT_SERVED).to_string());
                }
                body
            }
        };
        Ok(parse(&body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_and_pod_metrics_read() {
        assert_eq!(go_duration("15s"), Duration::from_secs(15));
        assert_eq!(go_duration("1m0s"), Duration::from_secs(60));
        let list = serde_json::json!({"items": [{"metadata": {"name": "a"},
            "timestamp": "2026-01-01T00:00:00Z", "window": "15s",
            "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "1Mi"}}]}]});
        let parsed = parse(&list);
        assert_eq!(parsed["a"].usage("cpu", None), Some(250));
        assert_eq!(
            parsed["a"].usage("memory", Some("app")),
            Some(1_048_576_000)
        );
    }
}
