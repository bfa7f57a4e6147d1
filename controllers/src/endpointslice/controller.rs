//! The EndpointSlice controller (upstream's pkg/controller/endpointslice): every Service with
//! a selector gets EndpointSlices of the pods it selects, kept in step as pods come, go and
//! change readiness.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use registry::options::{DeleteOptions, WriteOptions};
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::pods::{
    endpoint_ready, has_endpoint, pod_ip, pod_ready, resolved_ports, selected_pods,
    service_selector, services_for_pod, target_ref, terminating,
};
use super::reconcile::{reconcile, Desired, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY};
use client::controller::Controller;
use client::controller_utils::SyncError;
use client::informer::{FactoryError, InformerFactory, SharedInformer, NAMESPACE_INDEX};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

/// How soon a Service is looked at again while the slice cache has not caught up with this
/// controller's own writes.
const STALE_RETRY: Duration = Duration::from_millis(200);

#[derive(Debug, Error)]
pub enum EndpointSliceError {
    #[error("the registry serves no discovery.k8s.io/v1 endpointslices")]
    NoSlices,
    #[error(transparent)]
    Informer(#[from] FactoryError),
}

#[derive(Clone, Debug)]
pub struct EndpointSliceControllerConfig {
    /// `--concurrent-service-endpoint-syncs`.
    pub workers: usize,
}

impl Default for EndpointSliceControllerConfig {
    fn default() -> Self {
        Self { workers: 5 }
    }
}

pub struct EndpointSliceController {
    config: EndpointSliceControllerConfig,
    slices_store: Arc<Store>,
    services: SharedInformer,
    pods: SharedInformer,
    slices: SharedInformer,
    queue: RateLimitingQueue<String>,
    /// The slices this controller last wrote per Service, by name: the resourceVersion
    /// written, or None once deleted (upstream's endpointSliceTracker), so a sync never acts
    /// on a cache that has not seen those writes yet.
    written: Mutex<HashMap<String, HashMap<String, Option<i64>>>>,
}

impl EndpointSliceController {
    pub fn new(
        informers: &InformerFactory,
        config: EndpointSliceControllerConfig,
    ) -> Result<Arc<Self>, EndpointSliceError> {
        let slices_store = informers
            .registry()
            .store("discovery.k8s.io", "v1", "endpointslices")
            .ok_or(EndpointSliceError::NoSlices)?;
        Ok(Arc::new(Self {
            services: informers.informer("", "v1", "services")?,
            pods: informers.informer("", "v1", "pods")?,
            slices: informers.informer_for(&slices_store),
            slices_store,
            queue: RateLimitingQueue::with_default_rate_limiter("endpoint_slice"),
            written: Mutex::default(),
            config,
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("endpointslice-controller", self.clone(), self.queue.clone())
            .workers(self.config.workers)
            .primary(&self.services, "Service")
            .watches(&self.pods, |eps, pod| services_for_pod(&eps.services, pod))
            // A change of a slice this controller manages queues its Service.
            .watches(&self.slices, |_, slice| {
                let service = slice["metadata"]["labels"][LABEL_SERVICE_NAME].as_str();
                managed(slice).then(|| key(object::namespace(slice), service.unwrap_or("")))
            })
            .run(stop, |eps, key| async move {
                let result = eps.sync(&key).await;
                if let Err(e) = &result {
                    warn!(service = %key, error = %e, "syncing endpoint slices failed; retrying");
                }
                Next::from(result)
            })
            .await
    }

    /// This Service's slices as this controller manages them.
    fn slices_of(&self, namespace: &str, name: &str) -> Vec<Arc<Value>> {
        self.slices
            .indexer()
            .by_index_selected(NAMESPACE_INDEX, namespace, |s| {
                s.labels().get(LABEL_MANAGED_BY) == Some(MANAGED_BY)
                    && s.labels().get(LABEL_SERVICE_NAME) == Some(name)
            })
            .unwrap_or_default()
    }

    /// Whether the cache has seen every write this controller made for `key`.
    fn cache_current(&self, key: &str, slices: &[Arc<Value>]) -> bool {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mine) = written.get(key) else {
            return true;
        };
        mine.iter().all(|(name, rv)| {
            let cached = slices.iter().find(|s| object::name(s) == name);
            match (rv, cached) {
                (None, None) => true,
                (Some(rv), Some(s)) => {
                    object::resource_version(s).parse::<i64>().unwrap_or(0) >= *rv
                }
                _ => false,
            }
        })
    }

    fn record(&self, key: &str, name: &str, written: Option<&Value>) {
        let rv = written.map(|s| object::resource_version(s).parse::<i64>().unwrap_or(0));
        let mut all = self.written.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(key.to_string())
            .or_default()
            .insert(name.to_string(), rv);
    }

    async fn sync(&self, key: &str) -> Result<Option<Duration>, SyncError> {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let Some(svc) = self.services.indexer().get(key) else {
            // The garbage collector removes the slices through their owner reference.
            self.written
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(key);
            return Ok(None);
        };
        if service_selector(&svc).is_none() || svc["spec"]["type"] == "ExternalName" {
            return Ok(None);
        }
        let existing = self.slices_of(namespace, name);
        if !self.cache_current(key, &existing) {
            return Ok(Some(STALE_RETRY));
        }
        let desired: Vec<Desired> = selected_pods(&self.pods, &svc)
            .iter()
            .filter(|p| has_endpoint(p))
            .map(|pod| Desired {
                ports: resolved_ports(&svc, pod),
                endpoint: endpoint(&svc, pod),
            })
            .collect();
        let plan = reconcile(&svc, desired, &existing);
        let ns = Some(namespace);
        let opts = WriteOptions::default();
        for slice in plan.create {
            let made = self.slices_store.create(ns, slice, &opts).await?;
            self.record(key, object::name(&made), Some(&made));
        }
        for slice in plan.update {
            let slice_name = object::name(&slice).to_string();
            let (made, _) = self
                .slices_store
                .update(ns, &slice_name, slice, Subresource::Main, &opts)
                .await?;
            self.record(key, &slice_name, Some(&made));
        }
        for slice in plan.delete {
            let slice_name = object::name(&slice);
            match self
                .slices_store
                .delete(ns, slice_name, DeleteOptions::default())
                .await
            {
                Ok(_) | Err(RegistryError::NotFound { .. }) => self.record(key, slice_name, None),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

fn managed(slice: &Value) -> bool {
    slice["metadata"]["labels"][LABEL_MANAGED_BY] == MANAGED_BY
}

/// A pod as an endpoint (upstream's podToEndpoint).
fn endpoint(svc: &Value, pod: &Value) -> Value {
    let mut endpoint = json!({
        "addresses": [pod_ip(pod)],
        "conditions": {
            "ready": endpoint_ready(svc, pod),
            "serving": pod_ready(pod),
            "terminating": terminating(pod),
        },
        "targetRef": target_ref(pod),
    });
    if let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        endpoint["nodeName"] = json!(node);
    }
    if let Some(zone) = pod["metadata"]["labels"]["topology.kubernetes.io/zone"].as_str() {
        endpoint["zone"] = json!(zone);
    }
    // A pod named in the Service's subdomain is reachable by its hostname.
    let hostname = pod["spec"]["hostname"].as_str().unwrap_or("");
    if !hostname.is_empty() && pod["spec"]["subdomain"] == object::name(svc) {
        endpoint["hostname"] = json!(hostname);
    }
    endpoint
}
