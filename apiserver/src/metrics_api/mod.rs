//! The resource metrics API (`metrics.k8s.io/v1beta1`, what metrics-server serves) for the
//! simulated nodes, served in-process behind the local APIService `v1beta1.metrics.k8s.io`
//! (so a real metrics-server registered over it later, with `spec.service`, takes over and
//! is proxied to). NodeMetrics and PodMetrics are read-only (get and list, label selectors),
//! computed when asked from the running pods by the kubelets' usage model
//! (`kubelet::usage`): a node uses what its pods use. Tables have metrics-server's columns
//! (Name, cpu, memory, Window), so `kubectl get` and `kubectl top` read them as they do from
//! metrics-server.

pub mod client;

use std::sync::Arc;

use async_trait::async_trait;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use registry::options::ListOptions;
use registry::quota::Quantity;
use registry::{Qualified, Registry, RegistryError};
use serde_json::{json, Value};

use crate::aggregator::local::{LocalApi, LocalRequest};
use crate::api::response::{self, Format};

pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";
/// The window a usage is measured over (metrics-server's default metric resolution).
const WINDOW: &str = "15s";

pub struct MetricsApi {
    registry: Arc<Registry>,
}

impl MetricsApi {
    pub fn new(registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(Self { registry })
    }
}

fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

/// What metrics-server lists at `/apis/metrics.k8s.io/v1beta1`.
pub fn resource_list() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version(),
    "resources": [
        {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics",
            "verbs": ["get", "list"]},
        {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics",
            "verbs": ["get", "list"]},
    ]})
}

fn store(registry: &Registry, plural: &str) -> Result<Arc<registry::Store>, RegistryError> {
    registry
        .store("", "v1", plural)
        .ok_or_else(|| RegistryError::Internal(format!("{plural} are not served")))
}

fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn metadata(obj: &Value, now: &str) -> Value {
    let mut meta = json!({"name": obj["metadata"]["name"], "creationTimestamp": now});
    if let Some(ns) = obj["metadata"]["namespace"].as_str() {
        meta["namespace"] = json!(ns);
    }
    if obj["metadata"]["labels"].is_object() {
        meta["labels"] = obj["metadata"]["labels"].clone();
    }
    meta
}

fn usage(cpu: &Quantity, memory: &Quantity) -> Value {
    json!({"cpu": cpu.to_string(), "memory": memory.to_string()})
}

/// A pod's metrics; None when it does not run.
fn pod_metrics(pod: &Value, now: chrono::DateTime<Utc>) -> Option<Value> {
    let containers = kubelet::usage::pod_usage(pod, now)?;
    let stamp = registry::object::timestamp(now);
    Some(json!({"kind": "PodMetrics", "apiVersion": api_version(),
        "metadata": metadata(pod, &stamp), "timestamp": stamp, "window": WINDOW,
        "containers": containers.iter().map(|c| json!({"name": c.name, "usage": usage(&c.cpu, &c.memory)}))
            .collect::<Vec<_>>()}))
}

fn node_metrics(node: &Value, pods: &[Value], now: chrono::DateTime<Utc>) -> Value {
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    let on_node = pods.iter().filter(|p| p["spec"]["nodeName"] == name);
    let (cpu, memory) = kubelet::usage::node_usage(on_node, now);
    let stamp = registry::object::timestamp(now);
    json!({"kind": "NodeMetrics", "apiVersion": api_version(),
        "metadata": metadata(node, &stamp), "timestamp": stamp, "window": WINDOW,
        "usage": usage(&cpu, &memory)})
}

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

/// metrics-server's Table: Name, one quantity column per resource, Window.
fn table(objects: &[Value]) -> Value {
    let columns = json!([
        {"name": "Name", "type": "string", "format": "name", "description": "Name of the resource", "priority": 0},
        {"name": "cpu", "type": "string", "format": "quantity", "description": "", "priority": 0},
        {"name": "memory", "type": "string", "format": "quantity", "description": "", "priority": 0},
        {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0},
    ]);
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let (mut cpu, mut memory) = (Quantity::default(), Quantity::default());
            let mut add = |u: &Value| {
                cpu.add(&u["cpu"].as_str().and_then(Quantity::parse).unwrap_or_default());
                memory.add(
                    &u["memory"]
                        .as_str()
                        .and_then(Quantity::parse)
                        .unwrap_or_default(),
                );
            };
            match obj["containers"].as_array() {
                Some(containers) => containers.iter().for_each(|c| add(&c["usage"])),
                None => add(&obj["usage"]),
            }
            json!({"cells": [obj["metadata"]["name"], cpu.to_string(), memory.to_string(), obj["window"]],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj["metadata"]}})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": columns, "rows": rows})
}

impl MetricsApi {
    async fn answer(&self, request: &LocalRequest) -> Result<Value, RegistryError> {
        let Some(info) = &request.info else {
            return Ok(resource_list());
        };
        if info.resource.is_empty() {
            return Ok(resource_list());
        }
        let verb = info.verb.map(registry::Verb::as_str).unwrap_or_default();
        if !matches!(verb, "get" | "list") {
            return Err(RegistryError::MethodNotAllowed(format!(
                "{verb} is not supported on {}.{GROUP}",
                info.resource
            )));
        }
        if info.subresource.is_some() {
            return Err(RegistryError::NoSuchResource);
        }
        let selector = param(&request.query, "labelSelector")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let cached = ListOptions {
            resource_version: Some("0".into()),
            ..Default::default()
        };
        let selected = ListOptions {
            label_selector: selector,
            ..cached.clone()
        };
        let now = Utc::now();
        let namespace = info.namespace.as_deref();
        match (info.resource.as_str(), info.name.as_deref()) {
            ("nodes", name) => {
                let pods = items(&store(&self.registry, "pods")?.list(None, &cached).await?);
                let nodes = store(&self.registry, "nodes")?;
                if let Some(name) = name {
                    let node = nodes.get(None, name, &cached).await.map_err(|_| {
                        RegistryError::not_found(&Qualified::new(GROUP, "nodemetrics"), name)
                    })?;
                    return Ok(node_metrics(&node, &pods, now));
                }
                let listed: Vec<Value> = items(&nodes.list(None, &selected).await?)
                    .iter()
                    .map(|node| node_metrics(node, &pods, now))
                    .collect();
                Ok(
                    json!({"kind": "NodeMetricsList", "apiVersion": api_version(),
                    "metadata": {}, "items": listed}),
                )
            }
            ("pods", Some(name)) => {
                let pods = store(&self.registry, "pods")?;
                let not_found = || {
                    RegistryError::not_found(
                        &Qualified::new(GROUP, "podmetrics"),
                        &format!("{}/{name}", namespace.unwrap_or_default()),
                    )
                };
                let pod = pods
                    .get(namespace, name, &cached)
                    .await
                    .map_err(|_| not_found())?;
                pod_metrics(&pod, now).ok_or_else(not_found)
            }
            ("pods", None) => {
                let pods = store(&self.registry, "pods")?;
                let listed: Vec<Value> = items(&pods.list(namespace, &selected).await?)
                    .iter()
                    .filter_map(|pod| pod_metrics(pod, now))
                    .collect();
                Ok(
                    json!({"kind": "PodMetricsList", "apiVersion": api_version(),
                    "metadata": {}, "items": listed}),
                )
            }
            _ => Err(RegistryError::NoSuchResource),
        }
    }
}

#[async_trait]
impl LocalApi for MetricsApi {
    fn group(&self) -> &str {
        GROUP
    }
    fn version(&self) -> &str {
        VERSION
    }
    /// metrics-server's manifest's priorities.
    fn group_priority(&self) -> i64 {
        100
    }
    fn version_priority(&self) -> i64 {
        100
    }
    fn resource_list(&self) -> Value {
        resource_list()
    }
    fn version_discovery(&self) -> Value {
        crate::discovery::external::version_from_resource_list(&resource_list(), GROUP, VERSION)
    }

    async fn serve(&self, request: LocalRequest) -> Response {
        let pretty = response::is_pretty(param(&request.query, "pretty"), &request.headers);
        let format = match response::negotiate(&request.headers) {
            Ok(format) => format,
            Err(e) => return response::error_in(e, pretty),
        };
        match self.answer(&request).await {
            Ok(body) => {
                let body = match (format, body["items"].as_array()) {
                    (format, Some(list)) if format.is_table() => table(list),
                    (format, None) if format.is_table() && body["kind"] != "APIResourceList" => {
                        table(std::slice::from_ref(&body))
                    }
                    _ => body,
                };
                let format = if format == Format::Table {
                    Format::Json
                } else {
                    format
                };
                response::encoded(StatusCode::OK, &body, format, pretty)
            }
            Err(e) => response::error_in(e, pretty),
        }
    }
}
