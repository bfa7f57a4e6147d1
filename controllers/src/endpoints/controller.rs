//! Keeps each selecting Service's Endpoints in step with its pods.

use std::sync::Arc;
use std::time::Duration;

use registry::options::{DeleteOptions, WriteOptions};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Map, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::endpointslice::pods::{
    endpoint_ready, has_endpoint, pod_ip, resolved_ports, selected_pods, service_selector,
    services_for_pod, target_ref, terminating,
};
use client::controller::Controller;
use client::controller_utils::SyncError;
use client::informer::{FactoryError, InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

/// Upstream labels the Endpoints of a headless Service so.
const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";

#[derive(Debug, Error)]
pub enum EndpointsError {
    #[error("the registry serves no v1 endpoints")]
    NoEndpoints,
    #[error(transparent)]
    Informer(#[from] FactoryError),
}

#[derive(Clone, Debug)]
pub struct EndpointsControllerConfig {
    /// `--concurrent-endpoint-syncs`.
    pub workers: usize,
}

impl Default for EndpointsControllerConfig {
    fn default() -> Self {
        Self { workers: 5 }
    }
}

pub struct EndpointsController {
    config: EndpointsControllerConfig,
    store: Arc<Store>,
    services: SharedInformer,
    pods: SharedInformer,
    endpoints: SharedInformer,
    queue: RateLimitingQueue<String>,
}

impl EndpointsController {
    pub fn new(
        informers: &InformerFactory,
        config: EndpointsControllerConfig,
    ) -> Result<Arc<Self>, EndpointsError> {
        let store = informers
            .registry()
            .store("", "v1", "endpoints")
            .ok_or(EndpointsError::NoEndpoints)?;
        Ok(Arc::new(Self {
            services: informers.informer("", "v1", "services")?,
            pods: informers.informer("", "v1", "pods")?,
            endpoints: informers.informer_for(&store),
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("endpoint"),
            config,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("endpoints-controller", self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .primary(&self.services, "Service")
            .watches(&self.pods, |ep, pod| services_for_pod(&ep.services, pod))
            .reads(&self.endpoints)
            .run(stop, |ep, key| async move {
                let result = ep.sync(&key).await;
                if let Err(e) = &result {
                    warn!(service = %key, error = %e, "syncing endpoints failed; retrying");
                }
                Next::from(result.map(|()| None::<Duration>))
            })
            .await
    }

    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let ns = Some(namespace);
        let Some(svc) = self.services.indexer().get(key) else {
            // Endpoints have no owner reference: the controller removes them itself.
            return match self.store.delete(ns, name, DeleteOptions::default()).await {
                Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            };
        };
        if service_selector(&svc).is_none() {
            return Ok(());
        }
        let subsets = subsets(&svc, &selected_pods(&self.pods, &svc));
        let labels = labels(&svc);
        let current = self.endpoints.indexer().get(key);
        if let Some(current) = &current {
            let same_subsets = current.get("subsets").unwrap_or(&json!([])) == &subsets;
            if same_subsets && current["metadata"]["labels"] == labels {
                return Ok(());
            }
        }
        let mut next = match &current {
            Some(c) => (**c).clone(),
            None => json!({"apiVersion": "v1", "kind": "Endpoints",
                           "metadata": {"name": name, "namespace": namespace}}),
        };
        next["subsets"] = subsets;
        object::meta_mut(&mut next).insert("labels".into(), labels);
        let opts = WriteOptions::default();
        match current {
            None => self.store.create(ns, next, &opts).await.map(|_| ())?,
            Some(_) => self
                .store
                .update(ns, name, next, Subresource::Main, &opts)
                .await
                .map(|_| ())?,
        }
        Ok(())
    }
}

/// The Service's labels, and the headless mark when it has no cluster IP.
fn labels(svc: &Value) -> Value {
    let mut labels = svc["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if svc["spec"]["clusterIP"] == "None" {
        labels.insert(LABEL_HEADLESS.into(), json!(""));
    }
    Value::Object(labels)
}

/// Upstream's subsets: one per distinct set of ports, addresses sorted by IP. Terminating
/// pods are left out unless the Service publishes not-ready addresses.
fn subsets(svc: &Value, pods: &[Arc<Value>]) -> Value {
    let publish = svc["spec"]["publishNotReadyAddresses"] == true;
    let mut groups: Vec<(Vec<Value>, Vec<Value>, Vec<Value>)> = Vec::new();
    for pod in pods.iter().filter(|p| has_endpoint(p)) {
        if terminating(pod) && !publish {
            continue;
        }
        let ports = resolved_ports(svc, pod);
        let mut address = json!({"ip": pod_ip(pod), "targetRef": target_ref(pod)});
        if let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            address["nodeName"] = json!(node);
        }
        let at = match groups.iter().position(|(p, _, _)| *p == ports) {
            Some(at) => at,
            None => {
                groups.push((ports, Vec::new(), Vec::new()));
                groups.len() - 1
            }
        };
        let (_, ready, not_ready) = &mut groups[at];
        if endpoint_ready(svc, pod) {
            ready.push(address);
        } else {
            not_ready.push(address);
        }
    }
    let by_ip = |a: &Value, b: &Value| a["ip"].as_str().cmp(&b["ip"].as_str());
    Value::Array(
        groups
            .into_iter()
            .map(|(ports, mut ready, mut not_ready)| {
                ready.sort_by(by_ip);
                not_ready.sort_by(by_ip);
                let mut subset = Map::new();
                if !ready.is_empty() {
                    subset.insert("addresses".into(), Value::Array(ready));
                }
                if !not_ready.is_empty() {
                    subset.insert("notReadyAddresses".into(), Value::Array(not_ready));
                }
                if !ports.is_empty() {
                    subset.insert("ports".into(), Value::Array(ports));
                }
                Value::Object(subset)
            })
            .collect(),
    )
}
