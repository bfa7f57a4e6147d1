//! The IPAddress objects of Services' cluster IPs (networking.k8s.io/v1, GA in 1.33; upstream's
//! IPAddress-backed allocator and its repair controller): every cluster IP a Service holds has
//! an IPAddress named by the address, its parent the Service, labelled as upstream's allocator
//! labels it; it goes when the Service gives the address up or goes. The range allocation in
//! storage (`registry::service`) still decides which address a Service gets; this keeps the
//! IPAddress objects that show it.

use std::sync::Arc;

use registry::options::{DeleteOptions, PreconditionsSpec, WriteOptions};
use registry::{object, RegistryError, Store};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use client::controller::Controller;
use client::informer::{InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
/// Upstream's allocator's name in the managed-by label.
const MANAGER: &str = "ipallocator.k8s.io";

#[derive(Debug, Error)]
pub enum IpAddressError {
    #[error("the registry serves no v1 services or networking.k8s.io/v1 ipaddresses")]
    NotServed,
}

pub struct IpAddressController {
    services: SharedInformer,
    addresses: SharedInformer,
    store: Arc<Store>,
    /// Service keys.
    queue: RateLimitingQueue<String>,
}

/// The Service key an allocator-managed IPAddress belongs to.
fn parent_key(address: &Value) -> Option<String> {
    if address["metadata"]["labels"][MANAGED_BY_LABEL] != MANAGER {
        return None;
    }
    let parent = &address["spec"]["parentRef"];
    if parent["resource"] != "services" || parent["group"].as_str().unwrap_or_default() != "" {
        return None;
    }
    Some(format!(
        "{}/{}",
        parent["namespace"].as_str().unwrap_or_default(),
        parent["name"].as_str().unwrap_or_default()
    ))
}

/// The cluster IPs a Service holds (none for headless and ExternalName Services).
fn cluster_ips(service: &Value) -> Vec<String> {
    let ips: Vec<String> = service["spec"]["clusterIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|ip| !ip.is_empty() && *ip != "None")
        .map(str::to_string)
        .collect();
    if !ips.is_empty() {
        return ips;
    }
    match service["spec"]["clusterIP"].as_str() {
        Some(ip) if !ip.is_empty() && ip != "None" => vec![ip.to_string()],
        _ => Vec::new(),
    }
}

/// The IPAddress of `ip` held by the Service `namespace/name`.
pub fn address_for(ip: &str, namespace: &str, name: &str) -> Value {
    let family = if ip.contains(':') { "IPv6" } else { "IPv4" };
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": ip,
            "labels": {FAMILY_LABEL: family, MANAGED_BY_LABEL: MANAGER},
        },
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": namespace, "name": name}},
    })
}

impl IpAddressController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, IpAddressError> {
        let registry = informers.registry();
        let services = registry
            .store("", "v1", "services")
            .ok_or(IpAddressError::NotServed)?;
        let store = registry
            .store("networking.k8s.io", "v1", "ipaddresses")
            .ok_or(IpAddressError::NotServed)?;
        Ok(Arc::new(Self {
            services: informers.informer_for(&services),
            addresses: informers.informer_for(&store),
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("ipaddresses"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new(
            "ipallocator-repair-controller",
            self.clone(),
            self.queue.clone(),
        )
        .primary(&self.services, "Service")
        .handles(&self.addresses, |c, n| {
            for state in n.states() {
                if let Some(key) = parent_key(state) {
                    c.queue.add(key);
                }
            }
        })
        .run(stop, |c, key| async move {
            Next::after_sync(
                c.sync(&key).await,
                |e| warn!(service = %key, error = %e, "keeping the IPAddresses failed; retrying"),
            )
        })
        .await
    }

    async fn sync(&self, key: &str) -> Result<(), RegistryError> {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let wanted = self
            .services
            .indexer()
            .get(key)
            .map(|svc| cluster_ips(&svc))
            .unwrap_or_default();
        let held: Vec<Arc<Value>> = self
            .addresses
            .indexer()
            .list()
            .into_iter()
            .filter(|a| parent_key(a).as_deref() == Some(key))
            .collect();
        for ip in &wanted {
            if self.addresses.indexer().get(ip).is_some() {
                continue;
            }
            match self
                .store
                .create(
                    None,
                    address_for(ip, namespace, name),
                    &WriteOptions::by(MANAGER),
                )
                .await
            {
                Ok(_) => debug!(service = key, ip = %ip, "created IPAddress"),
                Err(RegistryError::AlreadyExists { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        for address in held {
            let ip = object::name(&address);
            if wanted.iter().any(|w| w == ip) {
                continue;
            }
            let opts = DeleteOptions {
                preconditions: Some(PreconditionsSpec {
                    uid: address["metadata"]["uid"].as_str().map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            };
            match self.store.delete(None, ip, opts).await {
                Ok(_) => debug!(service = key, ip, "deleted IPAddress"),
                Err(RegistryError::NotFound { .. } | RegistryError::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_their_service_and_only_the_allocators_are_followed() {
        let made = address_for("10.96.0.10", "default", "web");
        assert_eq!(parent_key(&made).as_deref(), Some("default/web"));
        assert_eq!(made["metadata"]["labels"][FAMILY_LABEL], "IPv4");
        assert_eq!(
            address_for("fd00::a", "ns", "db")["metadata"]["labels"][FAMILY_LABEL],
            "IPv6"
        );
        let mut foreign = made.clone();
        foreign["metadata"]["labels"] = json!({});
        assert_eq!(parent_key(&foreign), None);
    }

    #[test]
    fn headless_and_external_services_hold_no_address() {
        let svc = |spec: Value| json!({"spec": spec});
        assert_eq!(
            cluster_ips(&svc(json!({"clusterIP": "None", "clusterIPs": ["None"]}))),
            Vec::<String>::new()
        );
        assert_eq!(
            cluster_ips(&svc(json!({"type": "ExternalName"}))),
            Vec::<String>::new()
        );
        assert_eq!(
            cluster_ips(&svc(
                json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"]})
            )),
            ["10.96.0.5"]
        );
    }
}
