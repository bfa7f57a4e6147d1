//! The node heartbeat (pkg/kubelet/nodelease): a Lease named after the node in
//! kube-node-lease, owned by the Node, whose renewTime the kubelet moves on every
//! renew interval.

use chrono::{SecondsFormat, Utc};
use registry::options::{ListOptions, WriteOptions};
use registry::{RegistryError, Store, Subresource};
use serde_json::{json, Value};

pub const NAMESPACE: &str = "kube-node-lease";

/// metav1.MicroTime as it serializes.
fn micro_now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Creates the node's lease or renews it. The renewal starts from the watch cache's copy
/// (upstream's lease controller renews from the lease it last wrote, reading only after a
/// failure): the kubelet is the lease's only writer, so the copy is current but for the
/// moment the cache lags a write, when the update's conflict sends it to the store.
pub async fn renew(
    leases: &Store,
    node: &str,
    node_uid: &str,
    duration: u32,
) -> Result<Value, RegistryError> {
    let now = micro_now();
    let mut read = ListOptions::any();
    loop {
        let cached = read.resource_version.is_some();
        match leases.get(Some(NAMESPACE), node, &read).await {
            Ok(mut lease) => {
                lease["spec"]["holderIdentity"] = json!(node);
                lease["spec"]["leaseDurationSeconds"] = json!(duration);
                lease["spec"]["renewTime"] = json!(now);
                match leases
                    .update(
                        Some(NAMESPACE),
                        node,
                        lease,
                        Subresource::Main,
                        &WriteOptions::by("kubelet"),
                    )
                    .await
                {
                    Ok((updated, _)) => return Ok(updated),
                    Err(RegistryError::Conflict { .. }) if cached => {}
                    Err(e) => return Err(e),
                }
            }
            // Not in the cache may only mean not in it yet.
            Err(RegistryError::NotFound { .. }) if cached => {}
            Err(RegistryError::NotFound { .. }) => {
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": node, "namespace": NAMESPACE,
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]},
                    "spec": {"holderIdentity": node, "leaseDurationSeconds": duration, "renewTime": now},
                });
                return leases
                    .create(Some(NAMESPACE), lease, &WriteOptions::by("kubelet"))
                    .await;
            }
            Err(e) => return Err(e),
        }
        read = ListOptions::default();
    }
}
