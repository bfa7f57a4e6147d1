//! What `nodes/<name>/proxy/<path>` reaches: the simulated kubelet's read-only endpoints,
//! answered from the registry (the Node, its pods, its Lease) so every server of the cluster
//! answers alike, not only the one running the kubelets.
//!
//! Served: `healthz`, `pods` (the kubelet's /pods: a v1 PodList of the pods bound to the
//! node) and `configz` (the settings of this kubelet that the stored state shows). Not served
//! (404 as an unknown path): `stats/summary` and `metrics/*`, since nothing here measures
//! usage, and the streaming endpoints (`exec`, `logs/`, `run`). A node that is not Ready has
//! a kubelet that does not answer: 503, as the proxy's failed dial would give.

use registry::options::ListOptions;
use registry::{Registry, RegistryError};
use serde_json::{json, Value};

use crate::node::lease;

/// A kubelet endpoint's answer.
#[derive(Debug, PartialEq)]
pub enum ProxyResponse {
    /// text/plain
    Text(String),
    Json(Value),
}

fn store(
    registry: &Registry,
    plural: &str,
) -> Result<std::sync::Arc<registry::Store>, RegistryError> {
    registry
        .store("", "v1", plural)
        .ok_or_else(|| RegistryError::Internal(format!("no {plural} resource")))
}

fn ready(node: &Value) -> bool {
    node["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Answers `path` (below `proxy/`, without its leading slash) for the kubelet of `node`.
pub async fn serve(
    registry: &Registry,
    node: &str,
    path: &str,
) -> Result<ProxyResponse, RegistryError> {
    let nodes = store(registry, "nodes")?;
    let node_obj = nodes.get(None, node, &ListOptions::default()).await?;
    let path = path.trim_matches('/');
    if !matches!(path, "healthz" | "pods" | "configz") {
        return Err(RegistryError::NoSuchResource);
    }
    if !ready(&node_obj) {
        return Err(RegistryError::ServiceUnavailable(format!(
            "error trying to reach service: the kubelet of node {node:?} is not responding"
        )));
    }
    match path {
        "healthz" => Ok(ProxyResponse::Text("ok".to_string())),
        "pods" => pods(registry, node).await.map(ProxyResponse::Json),
        _ => configz(registry, &node_obj).await.map(ProxyResponse::Json),
    }
}

/// The kubelet's /pods: the pods it runs, as a PodList with no list metadata.
async fn pods(registry: &Registry, node: &str) -> Result<Value, RegistryError> {
    let opts = ListOptions {
        field_selector: Some(format!("spec.nodeName={node}")),
        ..Default::default()
    };
    let list = store(registry, "pods")?.list(None, &opts).await?;
    Ok(json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {},
        "items": list["items"].clone(),
    }))
}

/// The kubelet's /configz: `{"kubeletconfig": {...}}` with the KubeletConfiguration fields
/// the stored Node and Lease show; the others are not known outside the kubelet and are left
/// out rather than made up.
async fn configz(registry: &Registry, node: &Value) -> Result<Value, RegistryError> {
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    let mut config = json!({});
    if let Some(pods) = node["status"]["capacity"]["pods"]
        .as_str()
        .and_then(|p| p.parse::<u64>().ok())
    {
        config["maxPods"] = json!(pods);
    }
    if let Some(cidr) = node["spec"]["podCIDR"].as_str() {
        config["podCIDR"] = json!(cidr);
    }
    let leases = registry
        .store("coordination.k8s.io", "v1", "leases")
        .ok_or_else(|| RegistryError::Internal("no leases resource".into()))?;
    match leases
        .get(Some(lease::NAMESPACE), name, &ListOptions::default())
        .await
    {
        Ok(l) => {
            if let Some(seconds) = l["spec"]["leaseDurationSeconds"].as_i64() {
                config["nodeLeaseDurationSeconds"] = json!(seconds);
            }
        }
        Err(RegistryError::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    // Nothing reserved: allocatable is the capacity.
    config["enforceNodeAllocatable"] = json!(["pods"]);
    config["kubeReserved"] = json!({});
    config["systemReserved"] = json!({});
    Ok(json!({"kubeletconfig": config}))
}
