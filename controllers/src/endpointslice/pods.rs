//! What the EndpointSlice and Endpoints controllers both read from a Service and its pods
//! (upstream's pkg/controller/util/endpoint and endpointslice/utils.go): the selector, which
//! pods count, their readiness, and the ports a Service's targetPorts resolve to on a pod.

use std::sync::Arc;

use registry::object;
use registry::selector::LabelSelector;
use registry::types::{ConditionStatus, PodPhase};
use serde_json::{json, Value};

use client::informer::{SharedInformer, NAMESPACE_INDEX};

/// The selector of a Service that has one; None for Services whose endpoints are managed by
/// someone else (no selector), which the controllers leave alone.
pub fn service_selector(svc: &Value) -> Option<LabelSelector> {
    let selector = svc["spec"]["selector"].as_object()?;
    if selector.is_empty() {
        return None;
    }
    LabelSelector::from_label_selector_json(&json!({"matchLabels": selector})).ok()
}

/// The pods of the Service's namespace its selector picks.
pub fn selected_pods(pods: &SharedInformer, svc: &Value) -> Vec<Arc<Value>> {
    let Some(selector) = service_selector(svc) else {
        return Vec::new();
    };
    let mut found: Vec<Arc<Value>> = pods
        .indexer()
        .by_index_selected(NAMESPACE_INDEX, object::namespace(svc), |p| {
            p.labels().matches(&selector)
        })
        .unwrap_or_default();
    found.sort_by(|a, b| object::name(a).cmp(object::name(b)));
    found
}

/// Keys of the Services in the pod's namespace whose selector picks it.
pub fn services_for_pod(services: &SharedInformer, pod: &Value) -> Vec<String> {
    let namespace = object::namespace(pod);
    services
        .indexer()
        .by_index(NAMESPACE_INDEX, namespace)
        .unwrap_or_default()
        .iter()
        .filter(|svc| service_selector(svc).is_some_and(|s| s.matches_labels(object::labels(pod))))
        .map(|svc| format!("{namespace}/{}", object::name(svc)))
        .collect()
}

/// Upstream's ShouldPodBeInEndpoints: a pod with an address that has not finished.
pub fn has_endpoint(pod: &Value) -> bool {
    !pod_ip(pod).is_empty() && !PodPhase::terminal(pod)
}

pub fn pod_ip(pod: &Value) -> &str {
    pod["status"]["podIPs"][0]["ip"]
        .as_str()
        .or_else(|| pod["status"]["podIP"].as_str())
        .unwrap_or("")
}

/// The pod's Ready condition is True.
pub fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"] == "Ready"
                && ConditionStatus::from_value(&c["status"]) == Some(ConditionStatus::True)
        })
}

pub fn terminating(pod: &Value) -> bool {
    object::deletion_timestamp(pod).is_some()
}

/// A ready endpoint: ready and not going, or any pod of a Service that publishes
/// not-ready addresses.
pub fn endpoint_ready(svc: &Value, pod: &Value) -> bool {
    svc["spec"]["publishNotReadyAddresses"] == true || (pod_ready(pod) && !terminating(pod))
}

/// The port a Service port's targetPort names on `pod`: a number as is, a name through the
/// pod's container ports; None when the pod has no such named port.
pub fn target_port(port: &Value, pod: &Value) -> Option<i64> {
    match &port["targetPort"] {
        Value::Number(n) => n.as_i64(),
        Value::String(name) if name.parse::<i64>().is_ok() => name.parse().ok(),
        Value::String(name) => {
            let protocol = port["protocol"].as_str().unwrap_or("TCP");
            pod["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|c| c["ports"].as_array().into_iter().flatten())
                .find(|p| {
                    p["name"] == name.as_str()
                        && p["protocol"].as_str().unwrap_or("TCP") == protocol
                })
                .and_then(|p| p["containerPort"].as_i64())
        }
        _ => port["port"].as_i64(),
    }
}

/// The Service's ports as they resolve on `pod` (upstream's EndpointPort list, ports the
/// pod lacks left out), in the Service's order.
pub fn resolved_ports(svc: &Value, pod: &Value) -> Vec<Value> {
    svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let number = target_port(p, pod)?;
            let mut out = json!({
                "name": p["name"].as_str().unwrap_or(""),
                "port": number,
                "protocol": p["protocol"].as_str().unwrap_or("TCP"),
            });
            if let Some(app) = p.get("appProtocol") {
                out["appProtocol"] = app.clone();
            }
            Some(out)
        })
        .collect()
}

/// The pod as an object reference.
pub fn target_ref(pod: &Value) -> Value {
    json!({
        "kind": "Pod",
        "namespace": object::namespace(pod),
        "name": object::name(pod),
        "uid": object::uid(pod),
    })
}
