//! The simulated DRA driver of each node (`gpu.sim.kube.io`): as a kubelet plugin publishes
//! its devices, the node's devices are one ResourceSlice, a pool named after the node, owned
//! by the Node (so it goes with it), made once the node is registered and kept as it should be.
//! Dynamic resource allocation's scheduler allocates from it.

use std::sync::Arc;
use std::time::Duration;

use registry::options::{ListOptions, WriteOptions};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub const DRIVER: &str = "gpu.sim.kube.io";
const RETRY: Duration = Duration::from_secs(1);

/// The slice of `count` devices of the node `node` (uid `uid`).
pub fn slice(node: &str, uid: &str, count: u32) -> Value {
    let devices: Vec<Value> = (0..count)
        .map(|i| {
            json!({
                "name": format!("gpu-{i}"),
                "attributes": {
                    "index": {"int": i},
                    "model": {"string": "sim-gpu"},
                    "uuid": {"string": format!("gpu-{node}-{i}")},
                },
                "capacity": {"memory": {"value": "16Gi"}},
            })
        })
        .collect();
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "generateName": format!("{node}-{DRIVER}-"),
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Node", "name": node, "uid": uid, "controller": true,
            }],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    })
}

async fn publish_once(
    slices: &Store,
    nodes: &Store,
    node: &str,
    count: u32,
) -> Result<bool, RegistryError> {
    let registered = match nodes.get(None, node, &ListOptions::default()).await {
        Ok(n) => n,
        Err(RegistryError::NotFound { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    let wanted = slice(node, object::uid(&registered), count);
    let ours = slices
        .list(None, &ListOptions::default())
        .await?
        .get("items")
        .and_then(Value::as_array)
        .and_then(|items| {
            items
                .iter()
                .find(|s| s["spec"]["nodeName"] == node && s["spec"]["driver"] == DRIVER)
                .cloned()
        });
    let opts = WriteOptions::by("kubelet");
    match ours {
        None => {
            slices.create(None, wanted, &opts).await?;
        }
        Some(mut current) if current["spec"]["devices"] != wanted["spec"]["devices"] => {
            current["spec"] = wanted["spec"].clone();
            let name = object::name(&current).to_string();
            slices
                .update(None, &name, current, Subresource::Main, &opts)
                .await?;
        }
        Some(_) => {}
    }
    Ok(true)
}

/// Publishes the node's devices once it is registered; nothing when `count` is 0.
pub async fn publish(
    slices: Arc<Store>,
    nodes: Arc<Store>,
    node: String,
    count: u32,
    stop: CancellationToken,
) {
    if count == 0 {
        return;
    }
    loop {
        match publish_once(&slices, &nodes, &node, count).await {
            Ok(true) => {
                info!(node = %node, devices = count, driver = DRIVER, "published the node's devices");
                return;
            }
            Ok(false) => {}
            Err(e) => {
                warn!(node = %node, error = %e, "publishing the node's devices failed; retrying")
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RETRY) => {}
        }
    }
}
