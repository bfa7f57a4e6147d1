//! The `kubernetes` Service in `default` (upstream's bootstrap controller,
//! pkg/controlplane/controller/kubernetesservice, and its endpoint reconciler): the first
//! address of the service range, port 443 to the server's port, with Endpoints and an
//! EndpointSlice naming the server's address. Made at start and put right again every
//! [`INTERVAL`], so a deleted or edited one comes back.
//!
//! Each server adds its own address and never removes another's: upstream's lease reconciler
//! also expires the addresses of servers that stopped, which needs the server leases this
//! project does not keep yet.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use registry::options::{ListOptions, WriteOptions};
use registry::{object, Registry, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Upstream's --endpoint-reconciler interval.
const INTERVAL: Duration = Duration::from_secs(10);
const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";

/// Keeps the `kubernetes` Service until `stop`.
pub fn start(registry: Arc<Registry>, address: IpAddr, port: u16, stop: CancellationToken) {
    tokio::spawn(async move {
        loop {
            match reconcile(&registry, address, port).await {
                Ok(()) => {}
                Err(e) => warn!(error = %e, "reconciling the kubernetes service failed"),
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(INTERVAL) => {}
            }
        }
    });
    info!(%address, port, "reconciling the kubernetes service");
}

fn store(registry: &Registry, group: &str, plural: &str) -> Result<Arc<Store>, RegistryError> {
    registry
        .store(group, "v1", plural)
        .ok_or_else(|| RegistryError::Internal(format!("no {plural} resource")))
}

async fn get(store: &Store) -> Result<Option<Value>, RegistryError> {
    match store
        .get(Some(NAMESPACE), NAME, &ListOptions::default())
        .await
    {
        Ok(obj) => Ok(Some(obj)),
        Err(RegistryError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `wanted` unless `current` already has every field of it.
async fn put(store: &Store, current: Option<Value>, wanted: Value) -> Result<(), RegistryError> {
    let opts = WriteOptions::default();
    let Some(mut current) = current else {
        return match store.create(Some(NAMESPACE), wanted, &opts).await {
            Ok(_) | Err(RegistryError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e),
        };
    };
    let mut changed = false;
    if let (Some(have), Some(want)) = (current.as_object_mut(), wanted.as_object()) {
        for (field, value) in want.iter().filter(|(k, _)| *k != "metadata") {
            if have.get(field) != Some(value) {
                have.insert(field.clone(), value.clone());
                changed = true;
            }
        }
    }
    if let Some(labels) = wanted["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if current["metadata"]["labels"][k] != *v {
                object::meta_mut(&mut current)
                    .entry("labels")
                    .or_insert_with(|| json!({}))[k] = v.clone();
                changed = true;
            }
        }
    }
    if !changed {
        return Ok(());
    }
    match store
        .update(Some(NAMESPACE), NAME, current, Subresource::Main, &opts)
        .await
    {
        // Another server wrote meanwhile; the next round looks again.
        Ok(_) | Err(RegistryError::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn reconcile(registry: &Registry, address: IpAddr, port: u16) -> Result<(), RegistryError> {
    let services = store(registry, "", "services")?;
    let current = get(&services).await?;
    // The spec the server owns; the cluster IP stays whatever was allocated.
    let mut spec = current.as_ref().map(|c| c["spec"].clone()).unwrap_or_else(
        || json!({"clusterIP": registry.service_network().cluster_ips.first().to_string()}),
    );
    spec["type"] = json!("ClusterIP");
    spec["sessionAffinity"] = json!("None");
    spec["ports"] = json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]);
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": spec,
    });
    put(&services, current, service).await?;

    let ip = address.to_string();
    let ports = json!([{"name": "https", "port": port, "protocol": "TCP"}]);
    let endpoints = store(registry, "", "endpoints")?;
    let current = get(&endpoints).await?;
    let mut addresses: Vec<Value> = current
        .as_ref()
        .and_then(|c| c["subsets"][0]["addresses"].as_array().cloned())
        .unwrap_or_default();
    if !addresses.iter().any(|a| a["ip"] == ip.as_str()) {
        addresses.push(json!({"ip": ip}));
    }
    let ips: Vec<Value> = addresses.iter().map(|a| a["ip"].clone()).collect();
    let wanted = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": addresses, "ports": ports}],
    });
    put(&endpoints, current, wanted).await?;

    let slices = store(registry, "discovery.k8s.io", "endpointslices")?;
    let current = get(&slices).await?;
    let wanted = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"kubernetes.io/service-name": NAME}},
        "addressType": "IPv4",
        "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>(),
        "ports": ports,
    });
    put(&slices, current, wanted).await
}
