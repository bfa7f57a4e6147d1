//! The resource claim controller (upstream's pkg/controller/resourceclaim): a pod that asks
//! for a claim through a ResourceClaimTemplate gets its own ResourceClaim, made from the
//! template, owned by the pod and named in `status.resourceClaimStatuses`; a claim's consumers
//! that are gone or done are dropped from `status.reservedFor`, and a claim nothing uses any
//! more is deallocated (its devices freed, its protection finalizer removed) or, when it was
//! made for a pod that is done, deleted.

use std::sync::Arc;

use registry::options::{DeleteOptions, PreconditionsSpec, WriteOptions};
use registry::patch::PatchType;
use registry::types::PodPhase;
use registry::{object, RegistryError, Store, Subresource};
use serde_json::{json, Value};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use client::controller::Controller;
use client::informer::{
    FactoryError, InformerFactory, Notification, SharedInformer, NAMESPACE_INDEX,
};
use client::worker::Next;
use client::workqueue::RateLimitingQueue;

const NAME: &str = "resourceclaim-controller";
const MANAGER: &str = "kube-controller-manager";
const RESOURCE: &str = "resource.k8s.io";
/// The annotation that names the pod's claim entry a generated claim is for.
pub const POD_CLAIM_NAME: &str = "resource.kubernetes.io/pod-claim-name";
/// The scheduler's finalizer on allocated claims.
const DELETE_PROTECTION: &str = "resource.kubernetes.io/delete-protection";
const WORKERS: usize = 10;

#[derive(Debug, Error)]
pub enum ResourceClaimError {
    #[error(transparent)]
    Informer(#[from] FactoryError),
    #[error(transparent)]
    Write(#[from] RegistryError),
    #[error("resourceclaimtemplate {0} not found")]
    TemplateNotFound(String),
}

/// What the queue holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Pod(String),
    Claim(String),
}

pub struct ResourceClaimController {
    pods: SharedInformer,
    claims: SharedInformer,
    templates: SharedInformer,
    pod_store: Arc<Store>,
    claim_store: Arc<Store>,
    queue: RateLimitingQueue<Key>,
}

fn key_of(obj: &Value) -> String {
    format!("{}/{}", object::namespace(obj), object::name(obj))
}

/// A pod that will not use its claims again.
fn done(pod: &Value) -> bool {
    PodPhase::terminal(pod) || object::deletion_timestamp(pod).is_some()
}

/// The claims a pod names: its own (from status) and shared ones.
fn claim_keys(pod: &Value) -> Vec<String> {
    let ns = object::namespace(pod);
    let mut keys: Vec<String> = pod["spec"]["resourceClaims"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["resourceClaimName"].as_str())
        .map(|n| format!("{ns}/{n}"))
        .collect();
    keys.extend(
        pod["status"]["resourceClaimStatuses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["resourceClaimName"].as_str())
            .map(|n| format!("{ns}/{n}")),
    );
    keys
}

/// The pod a generated claim was made for.
fn owner_pod(claim: &Value) -> Option<&Value> {
    claim["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["kind"] == "Pod" && r["controller"] == true)
}

impl ResourceClaimController {
    pub fn new(informers: &InformerFactory) -> Result<Arc<Self>, ResourceClaimError> {
        let claim_store = informers.store(RESOURCE, "v1", "resourceclaims")?;
        let pod_store = informers.store("", "v1", "pods")?;
        Ok(Arc::new(Self {
            pods: informers.informer_for(&pod_store),
            claims: informers.informer_for(&claim_store),
            templates: informers.informer(RESOURCE, "v1", "resourceclaimtemplates")?,
            pod_store,
            claim_store,
            queue: RateLimitingQueue::with_default_rate_limiter("resource_claim"),
        }))
    }

    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        Controller::new(NAME, self.clone(), self.queue.clone())
            .workers(WORKERS)
            .handles(&self.pods, |rc, n| {
                if let Some(pod) = n.latest() {
                    if !matches!(n, Notification::Delete(_)) {
                        rc.queue.add(Key::Pod(key_of(pod)));
                    }
                    // Its claims may have lost a consumer.
                    for claim in claim_keys(pod) {
                        rc.queue.add(Key::Claim(claim));
                    }
                }
            })
            .handles(&self.claims, |rc, n| {
                if let Some(claim) = n.latest() {
                    match n {
                        Notification::Delete(_) => {
                            if let Some(owner) = owner_pod(claim) {
                                let name = owner["name"].as_str().unwrap_or_default();
                                rc.queue
                                    .add(Key::Pod(format!("{}/{name}", object::namespace(claim))));
                            }
                        }
                        _ => rc.queue.add(Key::Claim(key_of(claim))),
                    }
                }
            })
            .reads(&self.templates)
            .run(stop, |rc, key| async move {
                let result = match &key {
                    Key::Pod(k) => rc.sync_pod(k).await,
                    Key::Claim(k) => rc.sync_claim(k).await,
                };
                Next::after_sync(
                    result,
                    |e| warn!(key = ?key, error = %e, "syncing resource claims failed; retrying"),
                )
            })
            .await
    }

    /// The pod's claims made from templates exist and are named in its status.
    async fn sync_pod(&self, key: &str) -> Result<(), ResourceClaimError> {
        let Some(pod) = self.pods.indexer().get(key) else {
            return Ok(());
        };
        if done(&pod) {
            return Ok(());
        }
        let ns = object::namespace(&pod);
        let recorded = pod["status"]["resourceClaimStatuses"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut statuses = Vec::new();
        for entry in pod["spec"]["resourceClaims"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let (Some(entry_name), Some(template)) = (
                entry["name"].as_str(),
                entry["resourceClaimTemplateName"].as_str(),
            ) else {
                continue;
            };
            if recorded.iter().any(|s| s["name"] == entry_name) {
                continue;
            }
            let existing = self
                .claims
                .indexer()
                .by_index(NAMESPACE_INDEX, ns)
                .unwrap_or_default()
                .into_iter()
                .find(|c| {
                    owner_pod(c).is_some_and(|o| o["uid"] == pod["metadata"]["uid"])
                        && c["metadata"]["annotations"][POD_CLAIM_NAME] == entry_name
                });
            let name = match existing {
                Some(c) => object::name(&c).to_string(),
                None => self.create_claim(&pod, entry_name, template).await?,
            };
            statuses.push(json!({"name": entry_name, "resourceClaimName": name}));
        }
        if statuses.is_empty() {
            return Ok(());
        }
        let patch = json!({"status": {"resourceClaimStatuses": statuses}});
        let body = patch.to_string();
        match self
            .pod_store
            .patch(
                Some(ns),
                object::name(&pod),
                PatchType::Strategic,
                body.as_bytes(),
                Subresource::Status,
                &WriteOptions::by(MANAGER),
            )
            .await
        {
            Ok(_) | Err(RegistryError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// upstream's handleClaim: the claim of `entry` made from its template, for the pod.
    async fn create_claim(
        &self,
        pod: &Value,
        entry: &str,
        template_name: &str,
    ) -> Result<String, ResourceClaimError> {
        let ns = object::namespace(pod);
        let template_key = format!("{ns}/{template_name}");
        let template = self
            .templates
            .indexer()
            .get(&template_key)
            .ok_or(ResourceClaimError::TemplateNotFound(template_key))?;
        let mut annotations = template["spec"]["metadata"]["annotations"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        annotations.insert(POD_CLAIM_NAME.into(), json!(entry));
        let mut meta = json!({
            "generateName": format!("{}-{entry}-", object::name(pod)),
            "namespace": ns,
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Pod", "name": object::name(pod),
                "uid": object::uid(pod), "controller": true, "blockOwnerDeletion": true,
            }],
        });
        if let Some(labels) = template["spec"]["metadata"]["labels"].as_object() {
            meta["labels"] = Value::Object(labels.clone());
        }
        let claim = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": meta,
            "spec": template["spec"]["spec"].clone(),
        });
        let created = self
            .claim_store
            .create(Some(ns), claim, &WriteOptions::by(MANAGER))
            .await?;
        debug!(pod = %key_of(pod), claim = object::name(&created), "created the pod's resource claim");
        Ok(object::name(&created).to_string())
    }

    /// Writes the claim (or its status); None when it is gone.
    async fn write(
        &self,
        claim: Value,
        sub: Subresource,
    ) -> Result<Option<Value>, ResourceClaimError> {
        let (ns, name) = (
            object::namespace(&claim).to_string(),
            object::name(&claim).to_string(),
        );
        match self
            .claim_store
            .update(Some(&ns), &name, claim, sub, &WriteOptions::by(MANAGER))
            .await
        {
            Ok((written, _)) => Ok(Some(written)),
            Err(RegistryError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether `consumer` (a reservedFor entry) still uses the claim.
    fn in_use_by(&self, ns: &str, consumer: &Value) -> bool {
        if consumer["resource"] != "pods" {
            return true;
        }
        let name = consumer["name"].as_str().unwrap_or_default();
        self.pods
            .indexer()
            .get(&format!("{ns}/{name}"))
            .is_some_and(|p| p["metadata"]["uid"] == consumer["uid"] && !done(&p))
    }

    /// Consumers gone are dropped; a claim nothing uses is deallocated, or deleted when made
    /// for a pod that is done.
    async fn sync_claim(&self, key: &str) -> Result<(), ResourceClaimError> {
        let Some(claim) = self.claims.indexer().get(key) else {
            return Ok(());
        };
        let ns = object::namespace(&claim).to_string();
        let name = object::name(&claim).to_string();
        let reserved = claim["status"]["reservedFor"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let kept: Vec<Value> = reserved
            .iter()
            .filter(|c| self.in_use_by(&ns, c))
            .cloned()
            .collect();
        let mut current = (*claim).clone();
        if kept.len() != reserved.len() {
            current["status"]["reservedFor"] = Value::Array(kept.clone());
            let Some(written) = self.write(current, Subresource::Status).await? else {
                return Ok(());
            };
            current = written;
        }
        if !kept.is_empty() {
            return Ok(());
        }
        // Made for a pod that is done or gone: the claim goes.
        if let Some(owner) = owner_pod(&current) {
            let pod_name = owner["name"].as_str().unwrap_or_default();
            let pod = self.pods.indexer().get(&format!("{ns}/{pod_name}"));
            let finished = pod
                .as_ref()
                .is_none_or(|p| p["metadata"]["uid"] != owner["uid"] || done(p));
            if finished && object::deletion_timestamp(&current).is_none() {
                let options = DeleteOptions {
                    preconditions: Some(PreconditionsSpec {
                        uid: Some(object::uid(&current).to_string()),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match self.claim_store.delete(Some(&ns), &name, options).await {
                    Ok(_)
                    | Err(RegistryError::NotFound { .. } | RegistryError::Conflict { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        // Nothing uses it: its devices are freed, then its protection is lifted.
        if !current["status"]["allocation"].is_null() {
            current["status"]["allocation"] = Value::Null;
            let Some(written) = self.write(current, Subresource::Status).await? else {
                return Ok(());
            };
            current = written;
        }
        let finalizers = current["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if finalizers.iter().any(|f| f == DELETE_PROTECTION) {
            current["metadata"]["finalizers"] = Value::Array(
                finalizers
                    .into_iter()
                    .filter(|f| f != DELETE_PROTECTION)
                    .collect(),
            );
            self.write(current, Subresource::Main).await?;
        }
        Ok(())
    }
}
