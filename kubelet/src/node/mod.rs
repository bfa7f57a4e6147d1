//! A simulated node: its Node object (registration, as the kubelet's
//! registerWithAPIServer), its periodic status (nodeStatusReportFrequency) and its Lease
//! heartbeat in kube-node-lease.

pub mod devices;
pub mod lease;
pub mod object;

use std::sync::Arc;
use std::time::Duration;

use registry::options::{ListOptions, WriteOptions};
use registry::{RegistryError, Store, Subresource};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::KubeletTimings;

/// A failed registration or status write is tried again after this long.
const RETRY: Duration = Duration::from_secs(1);

/// Registers the node (or takes over the one already stored), then keeps its status and
/// lease fresh until `stop`.
pub async fn run_heartbeat(
    nodes: Arc<Store>,
    leases: Arc<Store>,
    node: Value,
    timings: KubeletTimings,
    stop: CancellationToken,
) {
    let name = registry::object::name(&node).to_string();
    let registered = loop {
        match register(&nodes, &node).await {
            Ok(n) => break n,
            Err(e) => warn!(node = %name, error = %e, "node registration failed; retrying"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(RETRY) => {}
        }
    };
    info!(node = %name, "node registered");
    let uid = registry::object::uid(&registered).to_string();
    let mut lease_tick = tokio::time::interval(timings.lease_renew_interval);
    let mut status_tick = tokio::time::interval(timings.node_status_report_frequency);
    // The first tick of each is at once: registration already wrote the status.
    status_tick.tick().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = lease_tick.tick() => {
                if let Err(e) = lease::renew(&leases, &name, &uid, timings.lease_duration_seconds).await {
                    warn!(node = %name, error = %e, "node lease renewal failed");
                }
            }
            _ = status_tick.tick() => {
                if let Err(e) = update_status(&nodes, &node).await {
                    warn!(node = %name, error = %e, "node status update failed");
                }
            }
        }
    }
}

/// Creates the node; one already stored keeps its spec and gets a fresh status.
async fn register(nodes: &Store, node: &Value) -> Result<Value, RegistryError> {
    match nodes
        .create(None, node.clone(), &WriteOptions::by("kubelet"))
        .await
    {
        // A Node is created with its status, as a kubelet registers it.
        Ok(created) => Ok(created),
        Err(RegistryError::AlreadyExists { .. }) => update_status(nodes, node).await,
        Err(e) => Err(e),
    }
}

/// Writes the node's status: heartbeat times now, transition times kept.
async fn update_status(nodes: &Store, desired: &Value) -> Result<Value, RegistryError> {
    let name = registry::object::name(desired);
    let mut stored = nodes.get(None, name, &ListOptions::default()).await?;
    stored["status"] = object::refreshed_status(&desired["status"], &stored["status"]);
    let (updated, _) = nodes
        .update(
            None,
            name,
            stored,
            Subresource::Status,
            &WriteOptions::by("kubelet"),
        )
        .await?;
    Ok(updated)
}
