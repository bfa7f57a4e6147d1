//! The storage protection controllers (upstream's pkg/controller/volume/pvcprotection and
//! pvprotection): a claim being deleted keeps `kubernetes.io/pvc-protection` while a scheduled
//! pod uses it, and a volume being deleted keeps `kubernetes.io/pv-protection` while it is
//! bound; then the finalizer goes and the deletion finishes.

use std::sync::Arc;

use registry::admission::{PVC_PROTECTION, PV_PROTECTION};
use registry::options::WriteOptions;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use client::controller::Controller;
use client::informer::{FactoryError, InformerFactory, SharedInformer};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

const MANAGER: &str = "kube-controller-manager";

/// The claims a pod's volumes name (its own claims and its generic ephemeral volumes').
fn claims_of(pod: &Value) -> Vec<String> {
    let pod_name = object::name(pod);
    pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            if let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() {
                return Some(claim.to_string());
            }
            v.get("ephemeral")
                .filter(|e| !e.is_null())
                .map(|_| format!("{pod_name}-{}", v["name"].as_str().unwrap_or_default()))
        })
        .collect()
}

/// Whether `pod` keeps `claim` in use: a scheduled pod naming it (upstream's podUsesPVC).
fn uses(pod: &Value, claim: &str) -> bool {
    pod["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty())
        && claims_of(pod).iter().any(|c| c == claim)
}

/// The object without `finalizer`, when it is being deleted and has it.
fn releasable(obj: &Value, finalizer: &str) -> Option<Value> {
    object::deletion_timestamp(obj)?;
    let finalizers = object::finalizers(obj);
    if !finalizers.iter().any(|f| f == finalizer) {
        return None;
    }
    let mut next = obj.clone();
    let kept: Vec<Value> = finalizers
        .iter()
        .filter(|f| *f != finalizer)
        .map(|f| Value::from(f.as_str()))
        .collect();
    object::meta_mut(&mut next).insert("finalizers".into(), Value::Array(kept));
    Some(next)
}

async fn release(store: &Store, namespace: Option<&str>, obj: Value) -> Result<(), RegistryError> {
    let name = object::name(&obj).to_string();
    match store
        .update(
            namespace,
            &name,
            obj,
            Subresource::Main,
            &WriteOptions::by(MANAGER),
        )
        .await
    {
        Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// persistentvolumeclaim-protection-controller.
pub struct PvcProtectionController {
    claims: SharedInformer,
    pods: SharedInformer,
    store: Arc<Store>,
    queue: RateLimitingQueue<String>,
}

impl PvcProtectionController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, FactoryError> {
        let claims = informers.informer("", "v1", "persistentvolumeclaims")?;
        let store = informers
            .registry()
            .store("", "v1", "persistentvolumeclaims")
            .ok_or_else(|| FactoryError::NotServed("persistentvolumeclaims".into()))?;
        Ok(Arc::new(Self {
            claims,
            pods: informers.informer("", "v1", "pods")?,
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("pvcprotection"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("pvc-protection", self.clone(), self.queue.clone())
            .primary(&self.claims, "PersistentVolumeClaim")
            // A pod's change may free the claims it named.
            .handles(&self.pods, |c, n| {
                for state in n.states() {
                    let namespace = object::namespace(state);
                    for claim in claims_of(state) {
                        c.queue.add(format!("{namespace}/{claim}"));
                    }
                }
            })
            .run(stop, |c, key| async move {
                Next::after_sync(
                    c.sync(&key).await,
                    |e| warn!(pvc = %key, error = %e, "releasing the claim failed; retrying"),
                )
            })
            .await
    }

    async fn sync(&self, key: &str) -> Result<(), RegistryError> {
        let Some(claim) = self.claims.indexer().get(key) else {
            return Ok(());
        };
        let Some(next) = releasable(&claim, PVC_PROTECTION) else {
            return Ok(());
        };
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let in_use = self
            .pods
            .indexer()
            .list()
            .iter()
            .any(|p| object::namespace(p) == namespace && uses(p, name));
        if in_use {
            return Ok(());
        }
        release(&self.store, Some(namespace), next).await?;
        info!(
            pvc = key,
            "removed the protection finalizer of a claim no pod uses"
        );
        Ok(())
    }
}

/// persistentvolume-protection-controller.
pub struct PvProtectionController {
    volumes: SharedInformer,
    store: Arc<Store>,
    queue: RateLimitingQueue<String>,
}

impl PvProtectionController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, FactoryError> {
        let volumes = informers.informer("", "v1", "persistentvolumes")?;
        let store = informers
            .registry()
            .store("", "v1", "persistentvolumes")
            .ok_or_else(|| FactoryError::NotServed("persistentvolumes".into()))?;
        Ok(Arc::new(Self {
            volumes,
            store,
            queue: RateLimitingQueue::with_default_rate_limiter("pvprotection"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new("pv-protection", self.clone(), self.queue.clone())
            .primary(&self.volumes, "PersistentVolume")
            .run(stop, |c, name| async move {
                Next::after_sync(
                    c.sync(&name).await,
                    |e| warn!(pv = %name, error = %e, "releasing the volume failed; retrying"),
                )
            })
            .await
    }

    async fn sync(&self, name: &str) -> Result<(), RegistryError> {
        let Some(volume) = self.volumes.indexer().get(name) else {
            return Ok(());
        };
        // A bound volume is in use (upstream's isVolumeUsed).
        if volume["status"]["phase"] == "Bound" {
            return Ok(());
        }
        let Some(next) = releasable(&volume, PV_PROTECTION) else {
            return Ok(());
        };
        release(&self.store, None, next).await?;
        info!(
            pv = name,
            "removed the protection finalizer of an unbound volume"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scheduled_pods_naming_a_claim_use_it() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {
            "nodeName": "n1",
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
            ],
        }});
        assert!(uses(&pod, "data"));
        assert!(uses(&pod, "p-scratch"));
        assert!(!uses(&pod, "other"));
        let mut pending = pod.clone();
        pending["spec"]["nodeName"] = json!("");
        assert!(!uses(&pending, "data"));
    }

    #[test]
    fn only_deleting_objects_with_the_finalizer_are_released() {
        let claim = json!({"metadata": {"name": "c", "finalizers": [PVC_PROTECTION, "other"]}});
        assert!(releasable(&claim, PVC_PROTECTION).is_none());
        let mut deleting = claim.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let released = releasable(&deleting, PVC_PROTECTION).expect("released");
        assert_eq!(released["metadata"]["finalizers"], json!(["other"]));
    }
}
